"""Regressions: the store's micro series judged by the regression rule (orchestrator/stats/regression_rule.py),
against history or baseline runs: ``python -m orchestrator regressions``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select

from orchestrator.stats.regression_rule import DEFAULT_RULE, RegressionRule, between_run_scale
from orchestrator.stats.series_verdicts import history_plan, is_cpu_device, judge_plan, rule_point
from orchestrator.store.models import (
    Job,
    RunJob,
)
from orchestrator.store.query.access import Source, read_session
from orchestrator.store.query.picked import marked_run_ids, run_or_raise
from orchestrator.store.query.series_queries import series_by_key
from workers import kinds
from workers import metrics as catalogue


def _last_per_run(points: Sequence[dict[str, Any]], run_ids: Sequence[int]) -> list[dict[str, Any]]:
    last = {p["run_id"]: p for p in points if p["run_id"] in run_ids}
    return [last[r] for r in run_ids if r in last]


def regression_report(
    src: Source,
    run_ids: int | Sequence[int] | None = None,
    *,
    baseline_run_ids: int | Sequence[int] | None = None,
    metric: str = "time_us",
    rule: RegressionRule = DEFAULT_RULE,
    kernel: str | None = None,
    hardware_key: str | None = None,
    include_improvements: bool = False,
    include_cpu: bool = False,
    include_marked: bool = False,
) -> dict[str, Any]:
    """Judge ``metric`` per (kernel, shape, dtype, impl, hardware key) by regression_rule.py, with ``rule``'s
    parameters.

    * ``baseline_run_ids`` given: the points of ``run_ids`` (one per run and series) against those of the
      baseline runs.  The between-run spread comes from the series' earlier points and from the runs of each side
      (two runs per side), pooled over the series of the same kernel, implementation and device.
    * otherwise, against history: each series is cut at the point of ``run_ids`` (one run; the newest point of
      every series when None); its last ``rule.consecutive`` points are judged against the ``rule.window`` points
      before them, the spread from the ``rule.noise_window`` points before them.

    Series measured on a CPU (interpreter timings) are judged only with ``include_cpu``.  Runs marked by their
    conditions (dirty checkout, shared GPU, rehearsal) are neither judged nor history unless ``include_marked`` or
    named in ``run_ids``/``baseline_run_ids``; ``marked_runs`` says which were left out.  Returns ``flags``
    (regression_rule verdicts as dicts: kernel, shape, dtype, impl, hardware_key, device ("gpu"/"cpu"), metric,
    status ("confirmed"/"unconfirmed"/"kernel_changed"), reason, direction, change, reference_median,
    current_median, p_value, noise, noise_dof, z, threshold, run_id, commit, job_key, reference_runs, compared,
    pick, reference_pick), ``series`` (how many were judged), ``cpu_series`` (CPU series left out), ``runs``,
    ``baseline_runs``.  Raises KeyError for an unknown run id, ValueError for a bad combination.
    """
    runs, baselines = _sides(run_ids, baseline_run_ids)
    series, marked = _fetch(src, runs, baselines, metric, kernel, hardware_key, include_marked)
    cpu_series = sum(1 for key in series if is_cpu_device(key[4]))
    if not include_cpu:
        series = {k: v for k, v in series.items() if not is_cpu_device(k[4])}
    plans = _baseline_plans(series, runs, baselines, rule) if baselines else _history_plans(series, runs, rule)
    flags, judged = _judge(plans, metric, rule, baselines=bool(baselines))
    return {
        "flags": [f for f in flags if f["direction"] == "regression" or include_improvements],
        "series": judged,
        "cpu_series": 0 if include_cpu else cpu_series,
        "runs": runs,
        "baseline_runs": baselines,
        "metric": metric,
        "marked_runs": [r for r in marked if r not in runs + baselines],
    }


def _sides(
    run_ids: int | Sequence[int] | None, baseline_run_ids: int | Sequence[int] | None
) -> tuple[list[int], list[int]]:
    """The runs judged and the baseline runs, as lists; ValueError for a bad combination."""
    runs = [run_ids] if isinstance(run_ids, int) else list(run_ids or [])
    baselines = [baseline_run_ids] if isinstance(baseline_run_ids, int) else list(baseline_run_ids or [])
    if baselines and not runs:
        raise ValueError("a baseline needs the run(s) to compare with it")
    if len(runs) > 1 and not baselines:
        raise ValueError("several runs are compared with a baseline (--baseline); against history give one run")
    if set(runs) & set(baselines):
        raise ValueError(f"run(s) {sorted(set(runs) & set(baselines))} on both sides of the comparison")
    return runs, baselines


def _fetch(
    src: Source,
    runs: list[int],
    baselines: list[int],
    metric: str,
    kernel: str | None,
    hardware_key: str | None,
    include_marked: bool,
) -> tuple[dict[tuple, list[dict[str, Any]]], list[int]]:
    """(series key -> its points, oldest first; the marked runs): the series of the kernels (or models) the runs
    hold, every series without runs; KeyError for an unknown run."""
    with read_session(src) as s:
        names = None
        for r in runs + baselines:
            run_or_raise(s, r)
        if runs:
            name_col = Job.model if kinds.runs_model(catalogue.get(metric).kind) else Job.kernel
            names = set(
                s.scalars(
                    select(name_col).distinct().join(RunJob, RunJob.job_id == Job.id).where(RunJob.run_id.in_(runs))
                )
            )
        series = series_by_key(
            s, metric, kernel, hardware_key, names, include_marked=include_marked, keep_runs=runs + baselines
        )
        marked = [] if include_marked else marked_run_ids(s)
    return series, marked


Plan = tuple[tuple, list, list, list]  # (series key, reference, current, history)


def _baseline_plans(
    series: Mapping[tuple, list[dict[str, Any]]], runs: list[int], baselines: list[int], rule: RegressionRule
) -> list[Plan]:
    """Each series' last point per run of ``runs`` against its last per baseline run; the history is up to
    ``rule.noise_window`` earlier points and the reference.  Series without both sides are left out."""
    plans = []
    for key, points in sorted(series.items(), key=lambda kv: repr(kv[0])):
        current, reference = _last_per_run(points, runs), _last_per_run(points, baselines)
        if not current or not reference:
            continue
        position = {id(p): i for i, p in enumerate(points)}  # by identity: points hold arrays, not comparable
        first = min(position[id(p)] for p in reference)
        earlier = [p for p in points[:first] if p["run_id"] not in runs]
        history = earlier[-rule.noise_window :] + sorted(reference, key=lambda p: position[id(p)])
        plans.append((key, reference, current, history))
    return plans


def _history_plans(series: Mapping[tuple, list[dict[str, Any]]], runs: list[int], rule: RegressionRule) -> list[Plan]:
    """Each series cut at the point of ``runs[0]`` (its newest point without a run; a series without the run is
    left out), against its history."""
    plans = []
    for key, points in sorted(series.items(), key=lambda kv: repr(kv[0])):
        last = len(points) - 1
        if runs:
            last = max((i for i, p in enumerate(points) if p["run_id"] == runs[0]), default=None)
            if last is None:
                continue
        plans.append((key, *history_plan(points, last, rule)))
    return plans


def _pooled_spreads(plans: Sequence[Plan]) -> dict[tuple, tuple[float | None, int]]:
    """Few points per series against a baseline: the between-run spread pooled over the series of the same kernel,
    implementation and device."""
    groups: dict[tuple, list[list[float]]] = defaultdict(list)
    for (name, _skey, _dtype, impl, hw), reference, current, _history in plans:
        for side in (reference, current):
            levels = [lv for lv in (rule_point(p).level() for p in side) if lv is not None]
            if len(levels) >= 2:
                groups[(name, impl, hw)].append(levels)
    return {k: between_run_scale(groups=g) for k, g in groups.items()}


def _judge(
    plans: Sequence[Plan], metric: str, rule: RegressionRule, *, baselines: bool
) -> tuple[list[dict[str, Any]], int]:
    """(the flags the rule raises, improvements included; how many series were judged): a plan is judged when it
    has reference points and enough current ones (one against a baseline, ``rule.consecutive`` against
    history)."""
    spreads = _pooled_spreads(plans) if baselines else {}
    flags = []
    judged = 0
    for key, reference, current, history in plans:
        if not reference or len(current) < (1 if baselines else rule.consecutive):
            continue
        judged += 1
        spread = spreads.get((key[0], key[3], key[4]))
        flag = judge_plan(key, reference, current, history, metric=metric, spread=spread, rule=rule)
        if flag is not None:
            flags.append(flag)
    return flags, judged


def regressions(
    src: Source,
    run_id: int | None = None,
    *,
    baseline_run_id: int | Sequence[int] | None = None,
    metric: str = "time_us",
    rule: RegressionRule = DEFAULT_RULE,
    kernel: str | None = None,
    hardware_key: str | None = None,
    include_improvements: bool = False,
    include_cpu: bool = False,
    include_marked: bool = False,
) -> list[dict[str, Any]]:
    """The flags of :func:`regression_report` for one run (against history or the baseline run(s))."""
    if baseline_run_id is not None and run_id is None:
        raise ValueError("baseline_run_id needs run_id: the run to compare with it")
    return regression_report(
        src,
        run_id,
        baseline_run_ids=baseline_run_id,
        metric=metric,
        rule=rule,
        kernel=kernel,
        hardware_key=hardware_key,
        include_improvements=include_improvements,
        include_cpu=include_cpu,
        include_marked=include_marked,
    )["flags"]


# The dashboard's pages and ``python -m orchestrator export`` read through these.  Each is a bounded number of
# SQL statements (grouped or filtered in the database); Python only shapes the rows that come back.
