"""The regression rule (orchestrator/stats/regression_rule.py): large, significant on the repeats, and large
against the series' between-run spread; the A/A checks run on synthetic series stored through the real writer."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.stats.regression_rule import (
    CONFIRMED,
    KERNEL_CHANGED,
    UNCONFIRMED,
    Point,
    RegressionRule,
    between_run_scale,
    compare,
    judge,
    judge_series,
    robust_scale,
    threshold_for,
)
from orchestrator.store.query import regression_queries, result_queries
from workers.spec import DeviceInfo, Measurement

SEED = 20261201
RNG = np.random.default_rng(SEED)
SHAPE = [4, 1024, 2048]


@pytest.fixture(autouse=True)
def _same_draws_in_any_order():
    """Each test draws the same numbers whichever tests ran before it on its worker (pytest-xdist spreads them)."""
    RNG.bit_generator.state = np.random.default_rng(SEED).bit_generator.state


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


def _history(levels, rng=RNG, within=0.003, n=30):
    """Points at these medians; repeats lognormal with a ``within`` CV (tighter than between runs)."""
    return [Point([float(x) for x in lv * np.exp(rng.normal(0.0, within, n))]) for lv in levels]


def _levels(n, cv, center=100.0, rng=RNG):
    return list(center * np.exp(rng.normal(0.0, cv, n)))


def test_judge_series_needs_two_consecutive_violations_beyond_the_between_run_spread():
    base = _levels(12, 0.01)
    assert judge_series(_history(base + [110.0])) is None, "one slow point is not enough"
    v = judge_series(_history(base + [110.0, 110.0]))
    assert v is not None and v.status == CONFIRMED and v.worse and len(v.compared) == 2
    assert v.noise == pytest.approx(0.01, rel=0.6) and v.noise_dof >= 9
    assert judge_series(_history(base + [110.0, 100.0])) is None, "back to normal"
    assert judge_series(_history(base + [101.0, 101.0])) is None
    assert judge_series(_history(base + [110.0, 90.0])) is None, "violations in opposite directions"
    assert judge_series(_history(base[:1] + [110.0, 110.0])).status == UNCONFIRMED, "too short a history"
    assert judge_series(_history([110.0, 110.0])) is None, "nothing to compare with"
    assert judge_series(_history(base + [110.0]), rule=RegressionRule(consecutive=1)) is not None


def test_a_step_within_the_between_run_spread_is_not_confirmed():
    """Repeats tight enough for Mann-Whitney to call a 7 % step significant, but runs that scatter by 4 %."""
    v = judge_series(_history(_levels(30, 0.04) + [107.0, 107.0]))
    assert v is None or v.status != CONFIRMED


def test_a_short_history_leaves_a_change_unconfirmed():
    v = judge_series(_history([100.0, 112.0, 112.5]))
    assert v is not None and v.status == UNCONFIRMED and "degree" in v.reason


def test_one_run_against_one_run_is_unconfirmed_two_per_side_confirm():
    one = judge(_history([100.0]), _history([112.0]))
    assert one.status == UNCONFIRMED and one.noise is None
    two = judge(_history([100.0, 100.6]), _history([112.0, 111.5]), spread=(0.005, 18))
    assert two.status == CONFIRMED and two.z > 10
    assert judge(_history([100.0, 100.6]), _history([106.0, 105.5]), spread=(0.02, 18)) is None


def test_a_different_autotune_pick_is_a_kernel_change_not_a_regression():
    old, new = "triton_red_0:XBLOCK=1,R0_BLOCK=2048,num_warps=16", "triton_red_0:XBLOCK=1,R0_BLOCK=1024,num_warps=8"
    ref = [Point(p.samples, pick=old) for p in _history(_levels(12, 0.005))]
    cur = [Point(p.samples, pick=new) for p in _history([117.0, 116.0])]
    v = judge_series(ref + cur)
    assert v.status == KERNEL_CHANGED and "baseline changed its kernel" in v.reason
    same = [Point(p.samples, pick=ref[0].pick) for p in cur]
    assert judge_series(ref + same).status == CONFIRMED


def test_robust_scale_is_unbiased_and_ignores_one_outlier():
    rng = np.random.default_rng(7)
    for n in (2, 3, 5, 10, 30):
        est = [robust_scale(list(rng.normal(0.0, 1.0, n))) for _ in range(4000)]
        assert float(np.mean(est)) == pytest.approx(1.0, abs=0.05), n
    values = list(rng.normal(0.0, 0.01, 20))
    assert robust_scale(values + [0.5]) == pytest.approx(robust_scale(values), rel=0.25)
    # a step in a history moves the scale of its successive differences little
    steady = list(rng.normal(0.0, 0.01, 30))
    stepped = steady[:15] + [v + 0.2 for v in steady[15:]]
    assert between_run_scale(sequences=[stepped])[0] == pytest.approx(between_run_scale(sequences=[steady])[0], rel=0.3)


def test_threshold_per_kernel():
    limits = {"rope": 0.10, "default": 0.03}
    assert threshold_for("rope", limits) == 0.10
    assert threshold_for("rmsnorm", limits) == 0.03
    assert threshold_for("rmsnorm", 0.07) == 0.07


def _run(
    writer,
    factories,
    levels: dict[str, float],
    at: float,
    *,
    rng=RNG,
    within: float = 0.003,
    picks: dict[str, str] | None = None,
    device: dict | None = None,
    shapes=(SHAPE,),
) -> int:
    """One run through the real writer: one micro job per shape whose implementations' repeats scatter by
    ``within`` (CV) around the given medians; ``picks``: the autotune pick each implementation recorded."""
    run_id = writer.start_run("rmsnorm", {}, f"plan-{at}", f"commit-{int(at)}", "h")
    specs = [factories.spec(shape=shape, impls=list(levels), at=at) for shape in shapes]
    writer.add_jobs(run_id, specs)
    for spec in specs:
        measurements = [
            m
            for impl, lv in levels.items()
            for m in factories.timing(impl, [float(x) for x in lv * np.exp(rng.normal(0.0, within, 30))])
        ]
        details = {"autotune": {impl: {"pick": pick} for impl, pick in picks.items()}} if picks else None
        writer.record_result(
            run_id, factories.result(spec, measurements, started_at=at, details=details, device=device)
        )
    return run_id


def _noisy_levels(cvs: dict[str, float], rng, center: float = 100.0, shift: dict[str, float] | None = None):
    return {
        impl: center * (1.0 + (shift or {}).get(impl, 0.0)) * float(np.exp(rng.normal(0.0, cv)))
        for impl, cv in cvs.items()
    }


def _flags(url, **kw):
    return {(f["impl"], tuple(f["shape"])): f for f in regression_queries.regressions(url, **kw)}


def _confirmed(url, **kw):
    return {f["impl"]: f for f in regression_queries.regressions(url, **kw) if f["status"] == CONFIRMED}


T0 = 1_800_000_000.0


def test_regressions_against_history(writer, store_url, factories):
    rng = np.random.default_rng(11)
    cvs = {"triton": 0.01, "small": 0.01, "noisy": 0.04}
    runs = [_run(writer, factories, _noisy_levels(cvs, rng), T0 + i, rng=rng) for i in range(12)]
    step = {"triton": 0.10, "small": 0.01, "noisy": 0.07}
    one = _run(writer, factories, _noisy_levels(cvs, rng, shift=step), T0 + 20, rng=rng)
    assert _confirmed(store_url) == {}, "a single slow run is never confirmed"
    two = _run(writer, factories, _noisy_levels(cvs, rng, shift=step), T0 + 21, rng=rng)
    flags = _confirmed(store_url)
    assert set(flags) == {"triton"}, "the 1 % change and the change within a 4 % between-run spread are not"
    f = flags["triton"]
    assert f["direction"] == "regression" and f["change"] == pytest.approx(0.10, abs=0.03)
    assert f["p_value"] < 0.01 and f["run_id"] == two and f["reference_runs"] == runs[-10:]
    assert [c["run_id"] for c in f["compared"]] == [one, two] and f["noise_dof"] >= 9
    assert f["hardware_key"] == factories.device()["hardware_key"] and f["kernel"] == "rmsnorm"
    assert f["device"] == "gpu"
    assert _confirmed(store_url, run_id=one) == {}, "as of an earlier run: one violation only"
    assert set(_confirmed(store_url, run_id=two)) == {"triton"}
    above = RegressionRule(threshold={"rmsnorm": 0.15})
    assert _confirmed(store_url, rule=above) == {}, "a per-kernel threshold above the change"
    assert _flags(store_url, kernel="rope") == {}


def test_improvements_only_on_request(writer, store_url, factories):
    rng = np.random.default_rng(12)
    for i in range(8):
        _run(writer, factories, _noisy_levels({"triton": 0.01}, rng), T0 + i, rng=rng)
    for i in range(2):
        _run(writer, factories, _noisy_levels({"triton": 0.01}, rng, shift={"triton": -0.2}), T0 + 10 + i, rng=rng)
    assert regression_queries.regressions(store_url) == []
    (f,) = regression_queries.regressions(store_url, include_improvements=True)
    assert f["direction"] == "improvement" and f["change"] == pytest.approx(-0.2, abs=0.03)
    assert f["status"] == CONFIRMED


SHAPES = [[1, n, 2048] for n in (256, 512, 1024, 2048, 4096)]


def test_regressions_between_runs(writer, store_url, factories):
    """One run against one is unconfirmed; two runs per side confirm, the spread pooled over the shapes."""
    rng = np.random.default_rng(13)
    cvs = {"triton": 0.005, "small": 0.005}
    base = [_run(writer, factories, _noisy_levels(cvs, rng), T0 + i, rng=rng, shapes=SHAPES) for i in range(2)]
    shift = {"triton": 0.10, "small": 0.01}
    new = [
        _run(writer, factories, _noisy_levels(cvs, rng, shift=shift), T0 + 10 + i, rng=rng, shapes=SHAPES)
        for i in range(2)
    ]
    one = _flags(store_url, run_id=new[0], baseline_run_id=base[0])
    assert {impl for impl, _ in one} == {"triton"} and len(one) == len(SHAPES)
    assert all(
        f["status"] == UNCONFIRMED and "degree" in f["reason"] and f["reference_runs"] == [base[0]]
        for f in one.values()
    )
    report = regression_queries.regression_report(store_url, new, baseline_run_ids=base)
    assert {(g["impl"], g["status"]) for g in report["flags"]} == {("triton", CONFIRMED)}
    assert len(report["flags"]) == len(SHAPES) and report["flags"][0]["reference_runs"] == base
    assert report["flags"][0]["noise_dof"] == 2 * len(SHAPES), "one dof per side and shape"
    assert report["series"] == 2 * len(SHAPES) and report["runs"] == new and report["baseline_runs"] == base
    back = regression_queries.regression_report(store_url, base, baseline_run_ids=new, include_improvements=True)[
        "flags"
    ]
    assert {(x["impl"], x["direction"]) for x in back} == {("triton", "improvement")}
    with pytest.raises(ValueError):
        regression_queries.regressions(store_url, baseline_run_id=base[0])
    with pytest.raises(ValueError):
        regression_queries.regression_report(store_url, new)
    with pytest.raises(KeyError):
        regression_queries.regression_report(store_url, 999, baseline_run_ids=base)


def test_cpu_timings_are_judged_only_on_request(writer, store_url, factories):
    cpu = DeviceInfo(
        vendor="cpu", name="x86_64 CPU", arch="x86_64", torch="2.13.0", triton="3.5.0", gpu_type="cpu"
    ).to_dict()
    rng = np.random.default_rng(14)
    base = [_run(writer, factories, {"eager": 100.0}, T0 + i, rng=rng, device=cpu) for i in range(2)]
    new = [_run(writer, factories, {"eager": 189.0}, T0 + 10 + i, rng=rng, device=cpu) for i in range(2)]
    report = regression_queries.regression_report(store_url, new, baseline_run_ids=base)
    assert report["flags"] == [] and report["cpu_series"] == 1 and report["series"] == 0
    (f,) = regression_queries.regression_report(store_url, new, baseline_run_ids=base, include_cpu=True)["flags"]
    assert f["status"] == UNCONFIRMED, "two runs per side of one series: too few degrees of freedom"
    assert f["device"] == "cpu" and f["impl"] == "eager"


def test_a_different_autotune_pick_is_reported_as_a_kernel_change(writer, store_url, factories):
    rng = np.random.default_rng(15)
    old, new = "triton_red_fused_0:R0_BLOCK=2048,num_warps=16", "triton_red_fused_0:R0_BLOCK=1024,num_warps=8"
    base = [
        _run(
            writer,
            factories,
            _noisy_levels({"compile_max": 0.005}, rng),
            T0 + i,
            rng=rng,
            picks={"compile_max": old},
            shapes=SHAPES,
        )
        for i in range(2)
    ]
    cur = [
        _run(
            writer,
            factories,
            _noisy_levels({"compile_max": 0.005}, rng, shift={"compile_max": 0.166}),
            T0 + 10 + i,
            rng=rng,
            picks={"compile_max": new},
            shapes=SHAPES,
        )
        for i in range(2)
    ]
    flags = regression_queries.regression_report(store_url, cur, baseline_run_ids=base)["flags"]
    assert len(flags) == len(SHAPES)
    f = flags[0]
    assert f["status"] == KERNEL_CHANGED and "baseline changed its kernel" in f["reason"]
    assert f["pick"] == new and f["reference_pick"] == old


# -- A/A: synthetic series through the real writer, noise 1-3 % CV between runs, 0.3 % within ------------------
AA_CVS = {"cv1": 0.01, "cv1.5": 0.015, "cv2": 0.02, "cv2.5": 0.025, "cv3": 0.03, "cv3b": 0.03}


def test_aa_identical_runs_and_50_point_histories_raise_no_alert(writer, store_url, factories):
    rng = np.random.default_rng(20261201)
    shapes = SHAPES[:3]
    runs = []
    for i in range(50):
        runs.append(_run(writer, factories, _noisy_levels(AA_CVS, rng), T0 + i, rng=rng, shapes=shapes))
        if i >= 2:  # the history as CI would judge it after every run, both directions
            assert _confirmed(store_url, run_id=runs[-1], include_improvements=True) == {}, i
    candidates = 0
    for k in range(0, 48, 4):
        one = regression_queries.regression_report(
            store_url, runs[k + 1], baseline_run_ids=runs[k], include_improvements=True
        )
        assert {f["status"] for f in one["flags"]} <= {UNCONFIRMED}, k
        # without the between-run condition (z = 0: large and Mann-Whitney only, the rule this one replaces)
        candidates += len(
            regression_queries.regression_report(
                store_url, runs[k + 1], baseline_run_ids=runs[k], rule=RegressionRule(z=0.0), include_improvements=True
            )["flags"]
        )
        two = regression_queries.regression_report(
            store_url, runs[k + 2 : k + 4], baseline_run_ids=runs[k : k + 2], include_improvements=True
        )
        assert [f for f in two["flags"] if f["status"] == CONFIRMED] == [], k
    assert candidates >= 3, "large + Mann-Whitney alone would have raised alerts on these identical runs"


def test_aa_a_ten_percent_step_is_found_within_two_points_a_spike_is_not(writer, store_url, factories):
    rng = np.random.default_rng(20261202)
    cvs = {"step1": 0.01, "step2": 0.02, "spike": 0.02}
    for i in range(30):
        _run(writer, factories, _noisy_levels(cvs, rng), T0 + i, rng=rng)
    first = _run(
        writer, factories, _noisy_levels(cvs, rng, shift={"step1": 0.1, "step2": 0.1, "spike": 0.15}), T0 + 30, rng=rng
    )
    assert _confirmed(store_url) == {}, "one point is not confirmed yet"
    second = _run(writer, factories, _noisy_levels(cvs, rng, shift={"step1": 0.1, "step2": 0.1}), T0 + 31, rng=rng)
    flags = _confirmed(store_url)
    assert set(flags) == {"step1", "step2"} and all(f["run_id"] == second for f in flags.values())
    assert _confirmed(store_url, run_id=first) == {}
    third = _run(writer, factories, _noisy_levels(cvs, rng, shift={"step1": 0.1, "step2": 0.1}), T0 + 32, rng=rng)
    assert "spike" not in _confirmed(store_url, run_id=third, include_improvements=True)


def _bandwidth_point(writer, factories, median: float, at: float) -> int:
    run_id = writer.start_run("rmsnorm", {}, f"plan-{at}", f"commit-{int(at)}", "h")
    spec = factories.spec(shape=SHAPE, impls=["triton"], at=at)
    writer.add_jobs(run_id, [spec])
    samples = tight(median)
    writer.record_result(
        run_id,
        factories.result(spec, [Measurement("triton", "kernel_gbs", median, "GB/s", samples).to_dict()], started_at=at),
    )
    return run_id


def test_a_bandwidth_drop_is_a_regression(writer, store_url, factories):
    t = 1_800_000_000.0
    for i in range(3):
        _bandwidth_point(writer, factories, 4000.0, t + i)
    for i in range(2):
        _bandwidth_point(writer, factories, 3000.0, t + 10 + i)
    (f,) = regression_queries.regressions(store_url, metric="kernel_gbs")
    assert f["direction"] == "regression" and f["change"] == pytest.approx(-0.25, abs=0.01)


def test_an_unknown_metric_is_an_error_in_queries(store_url):
    with pytest.raises(ValueError, match="unknown metric 'time_ms'"):
        regression_queries.regressions(store_url, metric="time_ms")
    with pytest.raises(ValueError, match="unknown metric 'time_ms'"):
        result_queries.history(store_url, "rmsnorm", SHAPE, "bf16", "triton", metric="time_ms")


def test_the_rules_mann_whitney_gives_scipys_p_to_the_bit_on_real_repeats():
    """regression_rule.mann_whitney_p is scipy.stats.mannwhitneyu's one-sided p, without its per-call cost: checked
    on every pair of the recorded H200 rmsnorm run's time_us repeats (hundreds each, with ties) both ways, and on
    small samples with and without ties (SciPy's exact and normal methods)."""
    import gzip
    import json

    from scipy.stats import mannwhitneyu

    from orchestrator.stats.regression_rule import mann_whitney_p
    from tests.orchestrator.test_regressions_cli import RECORDED

    repeats = []
    for line in gzip.open(RECORDED, "rt").read().splitlines()[1:]:
        for m in json.loads(line)["result"]["measurements"]:
            if m["metric"] == "time_us" and m["samples"]:
                repeats.append(np.asarray(m["samples"], dtype=float))
    small = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [1.0, 1.0, 2.0], [2.0, 3.0, 3.0], [5.0] * 4]
    samples = repeats[:24] + [np.asarray(s) for s in small]
    assert len(repeats) >= 24 and any(np.unique(r).size < r.size for r in repeats), "real repeats, some tied"
    for x in samples:
        for y in samples:
            for greater in (True, False):
                expected = float(mannwhitneyu(x, y, alternative="greater" if greater else "less").pvalue)
                assert mann_whitney_p(x, y, greater=greater) == expected, (x.size, y.size, greater)


def test_runs_marked_by_their_conditions_are_left_out_unless_asked(writer, store_url, factories):
    """Two slow runs made on a GPU shared with other nodes: by default neither judged nor history; the flag is
    back with include_marked, or when the run is named."""
    rng = np.random.default_rng(11)
    cvs = {"triton": 0.01}
    for i in range(12):
        _run(writer, factories, _noisy_levels(cvs, rng), T0 + i, rng=rng)
    step = {"triton": 0.10}
    slow = [_run(writer, factories, _noisy_levels(cvs, rng, shift=step), T0 + 20 + i, rng=rng) for i in range(2)]
    for run_id in slow:
        writer.mark_run(run_id, {"shared_gpu": True, "rehearsal": True, "note": "two nodes on one GPU"})
    report = regression_queries.regression_report(store_url)
    assert report["flags"] == [] and report["marked_runs"] == slow[::-1]
    assert set(_confirmed(store_url, include_marked=True)) == {"triton"}
    assert set(_confirmed(store_url, run_id=slow[1])) == set(), "named alone: its marked predecessor is not history"
    assert set(_confirmed(store_url, run_id=slow[1], include_marked=True)) == {"triton"}
    writer.mark_run(slow[0], None, add=False)  # a plain run again
    writer.mark_run(slow[1], None, add=False)
    assert set(_confirmed(store_url)) == {"triton"}
