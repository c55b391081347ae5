"""Orchestration overhead per job stays at or under 50 ms (median) on the embedded local Ray."""

from benchmarks.overhead import measure


def test_median_overhead_per_job_is_at_most_50_ms():
    r = measure(n_jobs=64, batch_size=32)
    assert r["jobs"] == 64
    assert r["median_ms"] <= 50.0, r
