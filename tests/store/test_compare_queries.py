"""compare_queries.compare: two sets of runs side by side, judged by the regression rule, through the real writer
on SQLite and PostgreSQL."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.cli.compare_refs import resolve
from orchestrator.store.query import compare_queries
from orchestrator.store.query.compare_queries import RefError, compare
from workers.spec import DeviceInfo, Measurement

SHAPES = [[1, n, 2048] for n in (256, 512, 1024, 2048, 4096)]
T0 = 1_800_000_000.0


def _run(writer, factories, levels, at, rng, *, commit, shapes=SHAPES, correct=None, device=None, within=0.003):
    """One run: a micro job per shape (each implementation's 30 repeats around its level) and, when ``correct`` is
    given, a correctness job per shape with those verdicts."""
    run_id = writer.start_run("rmsnorm", {}, f"plan-{at}", commit, "h")
    micro = [factories.spec(shape=s, impls=list(levels), at=at) for s in shapes]
    checks = [factories.spec(kind="correctness", shape=s, impls=list(levels), at=at) for s in shapes] if correct else []
    writer.add_jobs(run_id, micro + checks)
    for spec in micro:
        ms = [
            m
            for impl, lv in levels.items()
            for m in factories.timing(impl, [float(x) for x in lv * np.exp(rng.normal(0.0, within, 30))])
        ]
        writer.record_result(run_id, factories.result(spec, ms, started_at=at, device=device))
    for spec in checks:
        ms = [Measurement(impl, "correct", 1.0 if ok else 0.0, "").to_dict() for impl, ok in correct.items()]
        writer.record_result(run_id, factories.result(spec, ms, started_at=at, device=device))
    return run_id


def _levels(rng, shift=None, cv=0.005):
    return {
        impl: 100.0 * (1 + (shift or {}).get(impl, 0.0)) * math.exp(rng.normal(0, cv)) for impl in ("eager", "triton")
    }


def test_two_runs_per_side_confirm_a_slowdown_with_its_interval(writer, store_url, factories):
    rng = np.random.default_rng(5)
    base = [_run(writer, factories, _levels(rng), T0 + i, rng, commit="aaaa1111") for i in range(2)]
    cur = [
        _run(writer, factories, _levels(rng, {"triton": 0.10}), T0 + 10 + i, rng, commit="bbbb2222") for i in range(2)
    ]
    report = compare(store_url, base, cur)
    rows = {(r["impl"], tuple(r["shape"])): r for r in report["series"]}
    assert len(rows) == 2 * len(SHAPES) and all(r["state"] == "both" for r in rows.values())
    for shape in SHAPES:
        t = rows[("triton", tuple(shape))]
        assert t["verdict"] == "confirmed" and t["direction"] == "regression"
        assert t["ratio"] == pytest.approx(1.10, abs=0.03)
        assert t["ci_low"] < t["ratio"] < t["ci_high"] and t["ci_basis"] == "between-run" and t["ci_low"] > 1.0
        e = rows[("eager", tuple(shape))]
        assert e["verdict"] is None and e["ci_low"] < 1.0 < e["ci_high"] + 0.02
    (tri,) = [s for s in report["summary"] if s["impl"] == "triton"]
    assert tri["geomean_ratio"] == pytest.approx(1.10, abs=0.03) and tri["confirmed_regressions"] == len(SHAPES)
    assert tri["gpu_type"] == "h200"
    assert report["counts"]["confirmed_regressions"] == len(SHAPES) and compare_queries.failing(report)
    assert [r["id"] for r in report["baseline"]] == base and report["schema_version"] == 1
    back = compare(store_url, cur, base)
    assert back["counts"]["confirmed_improvements"] == len(SHAPES) and not compare_queries.failing(back)


def test_one_run_a_side_is_unconfirmed_and_its_interval_comes_from_the_repeats(writer, store_url, factories):
    rng = np.random.default_rng(6)
    b = _run(writer, factories, _levels(rng), T0, rng, commit="aaaa1111")
    c = _run(writer, factories, _levels(rng, {"triton": 0.10}), T0 + 1, rng, commit="bbbb2222")
    report = compare(store_url, [b], [c])
    tri = [r for r in report["series"] if r["impl"] == "triton"]
    assert all(r["verdict"] == "unconfirmed" and r["ci_basis"] == "repeats" for r in tri)
    assert not compare_queries.failing(report)


def test_correctness_loss_new_and_vanished_series(writer, store_url, factories):
    rng = np.random.default_rng(7)
    b = _run(writer, factories, _levels(rng), T0, rng, commit="aaaa1111", shapes=SHAPES[:3], correct={"triton": True})
    c = _run(
        writer, factories, _levels(rng), T0 + 1, rng, commit="bbbb2222", shapes=SHAPES[1:], correct={"triton": False}
    )
    report = compare(store_url, [b], [c])
    states = {(r["impl"], r["shape"][1]): r["state"] for r in report["series"]}
    assert states[("triton", 256)] == "vanished" and states[("triton", 4096)] == "new"
    assert states[("triton", 1024)] == "both"
    lost = [r for r in report["series"] if r["correctness"] == "lost"]
    assert {r["shape"][1] for r in lost} == {512, 1024, 2048, 4096} and all(r["impl"] == "triton" for r in lost)
    assert report["counts"]["new"] == 4 and report["counts"]["vanished"] == 2
    assert compare_queries.failing(report)


def test_cpu_series_only_on_request(writer, store_url, factories):
    rng = np.random.default_rng(8)
    cpu = DeviceInfo(
        vendor="cpu", name="x86_64 CPU", arch="x86_64", torch="2.13.0", triton="3.5.0", gpu_type="cpu"
    ).to_dict()
    b = _run(writer, factories, _levels(rng), T0, rng, commit="aaaa1111", device=cpu)
    c = _run(writer, factories, _levels(rng), T0 + 1, rng, commit="bbbb2222", device=cpu)
    assert compare(store_url, [b], [c])["series"] == []
    assert compare(store_url, [b], [c])["cpu_series"] == 2 * len(SHAPES)
    with_cpu = compare(store_url, [b], [c], include_cpu=True)
    assert len(with_cpu["series"]) == 2 * len(SHAPES) and all(r["device"] == "cpu" for r in with_cpu["series"])


def test_refs_by_run_id_and_commit_prefix(writer, store_url, factories):
    rng = np.random.default_rng(9)
    a = [_run(writer, factories, _levels(rng), T0 + i, rng, commit="abcdef0123456789") for i in range(2)]
    b = _run(writer, factories, _levels(rng), T0 + 5, rng, commit="abcd9999")
    assert resolve(store_url, [f"{a[0]},{a[1]}"])[0] == a
    assert resolve(store_url, ["abcdef01"])[0] == a
    assert resolve(store_url, ["abcd99", str(a[0])])[0] == [b, a[0]]
    with pytest.raises(RefError, match="ambiguous"):
        resolve(store_url, ["abcd"])
    with pytest.raises(RefError, match="no run 999"):
        resolve(store_url, ["999,1"])
    with pytest.raises(RefError, match="neither"):
        resolve(store_url, ["no-such-branch-here"], repo="/nonexistent")
    with pytest.raises(RefError, match="both sides"):
        compare(store_url, a, [a[1], b])
    assert compare_queries.previous_run(store_url, b) == a[1]
    assert compare_queries.previous_run(store_url, a[0]) is None


def test_log_quartiles_are_numpys_percentiles_to_the_bit_on_real_repeats():
    import gzip
    import json

    import numpy as np

    from orchestrator.store.query.compare_queries import log_quartiles
    from tests.orchestrator.test_regressions_cli import RECORDED

    samples = [np.array([3.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0, 4.0]), np.array([5.0, 1.0, 4.0, 2.0, 3.0])]
    for line in gzip.open(RECORDED, "rt").read().splitlines()[1:]:
        for m in json.loads(line)["result"]["measurements"]:
            if m["samples"] and all(x is not None and x > 0 for x in m["samples"]) and len(m["samples"]) >= 3:
                samples.append(np.asarray(m["samples"], dtype=float))
    assert len(samples) > 40
    for xs in samples:
        q1, q3 = np.percentile(np.log(xs), [25, 75])
        assert log_quartiles(xs) == (float(q1), float(q3)), xs.size
