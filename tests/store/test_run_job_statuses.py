"""An interrupted rerun counts its own jobs: what it recorded, else "not_run" — never an earlier run's results."""

from __future__ import annotations


def _start(writer, plan_key: str) -> int:
    return writer.start_run("rmsnorm", {"sweep": {"name": "rmsnorm"}}, plan_key, "abc123", "hash1")


def test_a_rerun_interrupted_before_its_jobs_counts_them_not_run(writer, factories):
    first = _start(writer, "plan-1")
    a, b = factories.spec(), factories.spec(shape=[2, 64])
    writer.add_jobs(first, [a, b])
    for spec in (a, b):
        assert writer.record_result(first, factories.result(spec, factories.timing("triton", [1.0, 1.1, 1.2])))
    writer.finish_run(first, "complete", {})
    again = _start(writer, "plan-2")  # rerun=true: the same jobs again
    writer.add_jobs(again, [a, b])
    result = factories.result(a, factories.timing("triton", [1.0, 1.1]), attempt=2)
    assert writer.record_result(again, result, force=True)  # rerun=true records again
    # b's newest status is "ok" (from the first run), but the rerun recorded nothing for it
    assert writer.job_statuses([a["key"], b["key"]]) == {a["key"]: "ok", b["key"]: "ok"}
    assert writer.run_job_statuses(again, [a["key"], b["key"]]) == {a["key"]: "ok", b["key"]: "not_run"}
