"""The regression rule: large (>= threshold) AND significant (Mann-Whitney U, p < 0.01); against history,
two consecutive violations of the last N comparable points."""
from __future__ import annotations

import numpy as np
import pytest

from orchestrator.store import queries
from orchestrator.store.regression_rule import compare, judge_series, threshold_for
from workers.spec import Measurement

RNG = np.random.default_rng(20261201)
SHAPE = [4, 1024, 2048]


def tight(center: float, n: int = 40) -> list[float]:
    """Repeats of a stable measurement: 0.3 % spread."""
    return [float(x) for x in RNG.normal(center, center * 0.003, n)]


def noisy(center: float) -> list[float]:
    """Repeats spread over ±40 %: a 10 % shift of the median disappears in the noise."""
    return [float(x) for x in np.linspace(center * 0.6, center * 1.4, 15)]


def test_compare_flags_a_separated_ten_percent_slowdown():
    c = compare(tight(100.0), tight(110.0))
    assert c is not None and c.violation and c.worse and c.direction == "regression"
    assert c.change == pytest.approx(0.10, abs=0.01) and c.p_value < 1e-6


def test_compare_ignores_a_one_percent_change_even_when_significant():
    c = compare(tight(100.0), tight(101.0))
    assert c.significant and not c.large and not c.violation


def test_compare_ignores_an_overlapping_noisy_change():
    c = compare(noisy(100.0), noisy(110.0))
    assert c.large and not c.significant and not c.violation, c


def test_compare_direction_for_higher_is_better_metrics():
    c = compare(tight(1000.0), tight(850.0), higher_is_worse=False)
    assert c.violation and c.worse
    assert not compare(tight(100.0), tight(85.0)).worse, "a faster time is an improvement"


def test_compare_needs_repeats():
    assert compare([100.0, 100.0], tight(120.0)) is None
    assert compare(tight(100.0), [120.0]) is None


def test_judge_series_needs_two_consecutive_violations():
    base = [tight(100.0) for _ in range(5)]
    assert judge_series(base + [tight(110.0)]) is None, "one slow point is not enough"
    flagged = judge_series(base + [tight(110.0), tight(110.0)])
    assert flagged is not None and len(flagged) == 2 and all(c.worse for c in flagged)
    assert judge_series(base + [tight(110.0), tight(100.0)]) is None, "back to normal"
    assert judge_series(base + [tight(101.0), tight(101.0)]) is None
    assert judge_series(base + [tight(110.0), tight(90.0)]) is None, "violations in opposite directions"
    assert judge_series([tight(100.0), tight(110.0)]) is None, "too short a history"
    assert judge_series(base + [tight(110.0)], consecutive=1) is not None


def test_judge_series_compares_with_the_last_window_points_only():
    old_fast = [tight(50.0) for _ in range(5)]
    recent = [tight(100.0) for _ in range(5)]
    assert judge_series(old_fast + recent + [tight(101.0), tight(101.0)], window=5) is None
    assert judge_series(old_fast + recent[:1] + [tight(101.0), tight(101.0)], window=5) is not None


def test_threshold_per_kernel():
    limits = {"rope": 0.10, "default": 0.03}
    assert threshold_for("rope", limits) == 0.10
    assert threshold_for("rmsnorm", limits) == 0.03
    assert threshold_for("rmsnorm", 0.07) == 0.07


def _point(writer, factories, samples_by_impl, at: float, shape=SHAPE) -> int:
    run_id = writer.start_run("rmsnorm", {}, f"plan-{at}", f"commit-{int(at)}", "h")
    spec = factories.spec(shape=shape, impls=list(samples_by_impl), at=at)
    writer.add_jobs(run_id, [spec])
    measurements = [m for impl, samples in samples_by_impl.items() for m in factories.timing(impl, samples)]
    writer.record_result(run_id, factories.result(spec, measurements, started_at=at))
    return run_id


def _flags(url, **kw):
    return {(f["impl"], tuple(f["shape"])): f for f in queries.regressions(url, **kw)}


def test_regressions_against_history(writer, store_url, factories):
    t = 1_800_000_000.0
    runs = [_point(writer, factories, {"triton": tight(100.0), "small": tight(100.0), "noisy": noisy(100.0)},
                   t + i) for i in range(5)]
    one = _point(writer, factories, {"triton": tight(110.0), "small": tight(101.0), "noisy": noisy(110.0)}, t + 10)
    assert _flags(store_url) == {}, "a single slow run is never flagged"
    two = _point(writer, factories, {"triton": tight(110.0), "small": tight(101.0), "noisy": noisy(110.0)}, t + 20)
    flags = _flags(store_url)
    assert set(flags) == {("triton", tuple(SHAPE))}, "the 1 % and the noisy changes are not flagged"
    f = flags[("triton", tuple(SHAPE))]
    assert f["direction"] == "regression" and f["change"] == pytest.approx(0.10, abs=0.01)
    assert f["p_value"] < 0.01 and f["run_id"] == two and f["reference_runs"] == runs
    assert [c["run_id"] for c in f["compared"]] == [one, two]
    assert f["hardware_key"] == factories.device()["hardware_key"] and f["kernel"] == "rmsnorm"
    # evaluated as of an earlier run: only one violation then
    assert _flags(store_url, run_id=one) == {}
    assert set(_flags(store_url, run_id=two)) == {("triton", tuple(SHAPE))}
    # per-kernel threshold above the change: nothing
    assert _flags(store_url, threshold={"rmsnorm": 0.15}) == {}
    assert _flags(store_url, kernel="rope") == {}


def test_improvements_only_on_request(writer, store_url, factories):
    t = 1_800_000_000.0
    for i in range(3):
        _point(writer, factories, {"triton": tight(100.0)}, t + i)
    for i in range(2):
        _point(writer, factories, {"triton": tight(80.0)}, t + 10 + i)
    assert queries.regressions(store_url) == []
    (f,) = queries.regressions(store_url, include_improvements=True)
    assert f["direction"] == "improvement" and f["change"] == pytest.approx(-0.2, abs=0.01)


def test_regressions_between_two_runs(writer, store_url, factories):
    t = 1_800_000_000.0
    base = _point(writer, factories, {"triton": tight(100.0), "small": tight(100.0), "noisy": noisy(100.0)}, t)
    new = _point(writer, factories, {"triton": tight(110.0), "small": tight(101.0), "noisy": noisy(110.0)}, t + 1)
    flags = _flags(store_url, run_id=new, baseline_run_id=base)
    assert set(flags) == {("triton", tuple(SHAPE))}
    assert flags[("triton", tuple(SHAPE))]["reference_runs"] == [base]
    assert _flags(store_url, run_id=base, baseline_run_id=new) == {}, "the other way round it is an improvement"
    with pytest.raises(ValueError):
        queries.regressions(store_url, baseline_run_id=base)


def _bandwidth_point(writer, factories, median: float, at: float) -> int:
    run_id = writer.start_run("rmsnorm", {}, f"plan-{at}", f"commit-{int(at)}", "h")
    spec = factories.spec(shape=SHAPE, impls=["triton"], at=at)
    writer.add_jobs(run_id, [spec])
    samples = tight(median)
    writer.record_result(run_id, factories.result(
        spec, [Measurement("triton", "kernel_gbs", median, "GB/s", samples).to_dict()], started_at=at))
    return run_id


def test_a_bandwidth_drop_is_a_regression(writer, store_url, factories):
    t = 1_800_000_000.0
    for i in range(3):
        _bandwidth_point(writer, factories, 4000.0, t + i)
    for i in range(2):
        _bandwidth_point(writer, factories, 3000.0, t + 10 + i)
    (f,) = queries.regressions(store_url, metric="kernel_gbs")
    assert f["direction"] == "regression" and f["change"] == pytest.approx(-0.25, abs=0.01)


def test_an_unknown_metric_is_an_error_in_queries(store_url):
    with pytest.raises(ValueError, match="unknown metric 'time_ms'"):
        queries.regressions(store_url, metric="time_ms")
    with pytest.raises(ValueError, match="unknown metric 'time_ms'"):
        queries.history(store_url, "rmsnorm", SHAPE, "bf16", "triton", metric="time_ms")
