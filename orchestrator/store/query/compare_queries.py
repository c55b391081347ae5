"""Two sets of runs side by side (``python -m orchestrator compare``, the dashboard's Compare page).

A series is one (kernel, shape, dtype, implementation, hardware key), as in the regression rule.  Each run of a
side puts one point on a series: the stored repeats of the attempt the run shows for the job (the attempt the run
recorded, else the job's newest: a job the run reused).  Per series the comparison gives

* ``ratio``: current / baseline of the metric's median (the median of each side's run medians, on the log scale);
  for times above 1 is slower;
* ``ci_low``, ``ci_high``: its 95 % confidence interval.  The standard error of the log ratio is the larger of the
  between-run spread (regression_rule.between_run_scale, pooled over the series of the same kernel,
  implementation and device, as ``regressions`` pools it) times sqrt(1/a + 1/b) with a Student-t quantile for its
  degrees of freedom, and what the repeats alone give (1.2533 x the scale of the log repeats / sqrt(n) per run, the
  scale from their inter-quartile range).  ``ci_basis`` says which: ``between-run`` or ``repeats`` (one run a
  side: no between-run spread, the interval understates the run-to-run scatter);
* ``verdict``: regression_rule.judge on the two sides (``confirmed`` / ``unconfirmed`` / ``kernel_changed``, or
  ``None``: no change the rule reports), with ``direction``, ``z`` and ``reason``;
* ``correct_baseline``, ``correct_current``: the implementation's correctness on each side (its correctness job's
  ``correct`` verdict, and its micro job's own when it has one; False when any was False) and ``correctness``:
  ``lost`` (False now, not False before), ``regained`` or None;
* ``state``: ``both``, ``new`` (only current) or ``vanished`` (only baseline).

``summary`` is one row per (kernel, GPU type, implementation) with the geometric mean of the ratios of the series
measured on both sides.  Series timed on a CPU (Triton's interpreter) are left out unless ``include_cpu``.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from orchestrator.stats.regression_rule import (
    CONFIRMED,
    DEFAULT_THRESHOLD,
    Point,
    Verdict,
    between_run_scale,
    finite,
    judge,
    threshold_for,
)
from orchestrator.stats.series_verdicts import is_cpu_device
from orchestrator.store.conditions import describe as describe_conditions
from orchestrator.store.conditions import plain_runs
from orchestrator.store.models import Device, Job, JobAttempt, Measurement, Run, RunJob
from orchestrator.store.query.access import Source, chunks, read_session
from orchestrator.store.query.series_queries import autotune_pick, repeats, repeats_text
from workers import kinds
from workers import metrics as catalogue
from workers.kinds.correctness import NAME as CORRECTNESS
from workers.kinds.micro import NAME as MICRO
from workers.spec import GOOD_STATUSES

SCHEMA_VERSION = 1
CI_LEVEL = 0.95
_MEDIAN_SE = 1.2533  # standard error of a median = 1.2533 sigma / sqrt(n) at the normal


class RefError(ValueError):
    """A REF that names no run of the store (or names several commits)."""


# -- which runs a REF names -----------------------------------------------------------------------------------
def runs_of_ids(src: Source, run_ids: Iterable[int]) -> list[int]:
    """The given run ids, checked; RefError for one the store lacks."""
    ids = list(run_ids)
    with read_session(src) as s:
        have = set(s.scalars(select(Run.id).where(Run.id.in_(ids)))) if ids else set()
    missing = [i for i in ids if i not in have]
    if missing:
        raise RefError(f"no run {missing[0]}")
    return ids


def run_exists(src: Source, run_id: int) -> bool:
    with read_session(src) as s:
        return s.get(Run, run_id) is not None


def runs_of_commit(src: Source, prefix: str, include_marked: bool = False) -> tuple[str | None, list[int], list[int]]:
    """(the full commit, its run ids oldest first, its marked runs left out) for a commit or a unique prefix of one;
    (None, [], []) when no run has it; RefError when the prefix matches runs of several commits.  A run marked by
    its conditions (orchestrator/store/conditions.py: made from a checkout with uncommitted changes, on a GPU shared
    with other nodes, in a rehearsal) does not stand for its commit unless ``include_marked``."""
    prefix = prefix.strip().lower()
    with read_session(src) as s:
        rows = s.execute(
            select(Run.id, Run.commit, Run.conditions)
            .where(Run.commit.like(f"{prefix}%"))
            .order_by(Run.started_at, Run.id)
        ).all()
    commits = sorted({c for _, c, _ in rows})
    if len(commits) > 1:
        shown = ", ".join(c[:12] for c in commits[:4])
        raise RefError(f"commit prefix {prefix!r} is ambiguous: runs of {len(commits)} commits ({shown}...)")
    if not commits:
        return None, [], []
    marked = [r for r, _, cond in rows if cond and not include_marked]
    return commits[0], [r for r, _, _ in rows if r not in marked], marked


def run_rows(src: Source, run_ids: Sequence[int]) -> list[dict[str, Any]]:
    """id, sweep, commit, started_at, status and marks (``marked``: its conditions in words, "" for a plain run) of
    each run, in the order given."""
    with read_session(src) as s:
        runs = {r.id: r for r in s.scalars(select(Run).where(Run.id.in_(list(run_ids))))}
    return [
        {
            "id": r.id,
            "sweep": r.sweep,
            "commit": r.commit,
            "started_at": r.started_at,
            "status": r.status,
            "marked": describe_conditions(r.conditions),
        }
        for r in (runs[i] for i in run_ids if i in runs)
    ]


def compare_choices(src: Source, limit: int = 200) -> dict[str, list[dict[str, Any]]]:
    """What the Compare page offers: the newest runs (id, sweep, commit, started_at, marked) and the commits their
    plain runs hold
    (commit, runs, newest start), newest first; ``micro``: the ids of the runs that hold micro jobs; ``kinds``:
    run id -> the kinds of job it holds (sorted)."""
    with read_session(src) as s:
        runs = s.execute(
            select(Run.id, Run.sweep, Run.commit, Run.started_at, Run.conditions).order_by(
                Run.started_at.desc(), Run.id.desc()
            )
        ).all()
        kinds: dict[int, list[str]] = defaultdict(list)
        for rid, kind in s.execute(
            select(RunJob.run_id, Job.kind).distinct().join(Job, Job.id == RunJob.job_id).order_by(Job.kind)
        ):
            kinds[rid].append(kind)
    commits: dict[str, dict[str, Any]] = {}
    for rid, _sweep, commit, started, cond in runs:
        if commit and commit != "unknown" and not cond:  # a marked run does not stand for its commit
            c = commits.setdefault(commit, {"commit": commit, "runs": [], "started_at": started})
            c["runs"].append(rid)
    return {
        "runs": [
            {"id": r, "sweep": sw, "commit": c, "started_at": t, "marked": describe_conditions(cond, note=False)}
            for r, sw, c, t, cond in runs[:limit]
        ],
        "commits": list(commits.values())[:limit],
        MICRO: sorted(r for r, ks in kinds.items() if MICRO in ks),
        "kinds": dict(kinds),
    }


def previous_run(src: Source, run_id: int) -> int | None:
    """The newest earlier run of the same sweep (the baseline the Runs page links a run to), None if none."""
    with read_session(src) as s:
        run = s.get(Run, run_id)
        if run is None:
            return None
        return s.scalar(
            select(Run.id)
            .where(Run.sweep == run.sweep, Run.id != run.id, Run.started_at <= run.started_at)
            .order_by(Run.started_at.desc(), Run.id.desc())
            .limit(1)
        )


def previous_runs(src: Source, plain: bool = False) -> dict[int, int]:
    """run id -> the newest earlier run of the same sweep, for every run that has one (one query); ``plain``: among
    the runs no condition marks only (orchestrator/store/conditions.py)."""
    with read_session(src) as s:
        query = select(Run.id, Run.sweep, Run.started_at).order_by(Run.started_at, Run.id)
        rows = s.execute(query.where(plain_runs()) if plain else query).all()
    last: dict[str, int] = {}
    out = {}
    for rid, sweep, _ in rows:
        if sweep in last:
            out[rid] = last[sweep]
        last[sweep] = rid
    return out


# -- loading the points of a side -----------------------------------------------------------------------------
def _side(s: Session, run_ids: Sequence[int], metric: str, name_col) -> tuple[dict, dict]:
    """(series key -> [point dict per run, in run order], correctness key -> [verdicts]) for the runs of a side: the
    side's jobs of the metric's kind and of correctness, the attempt each run shows, that attempt's readings."""
    kind = catalogue.get(metric).kind
    members = s.execute(
        select(RunJob.run_id, Job.id, Job.kind, name_col, Job.shape, Job.shape_key, Job.dtype)
        .join(Job, Job.id == RunJob.job_id)
        .where(RunJob.run_id.in_(list(run_ids)), Job.kind.in_(sorted({kind, CORRECTNESS})))
    ).all()
    job_ids = sorted({m[1] for m in members})
    shown = _shown_attempts(s, members, job_ids)
    values = _attempt_values(s, job_ids, {(job_id, a[0]) for (_, job_id), a in shown.items()}, metric)
    order = {r: i for i, r in enumerate(run_ids)}
    return _side_series(sorted(members, key=lambda m: order[m[0]]), shown, values, kind)


def _shown_attempts(s: Session, members: Sequence, job_ids: list[int]) -> dict[tuple[int, int], tuple]:
    """(run, job) -> (attempt, status, hardware key, details) of the attempt the run shows: the run's own newest,
    else the job's newest."""
    attempts: dict[int, list[tuple[int, int, str, str | None, Any]]] = defaultdict(list)
    for chunk in chunks(job_ids):
        for row in s.execute(
            select(
                JobAttempt.job_id,
                JobAttempt.attempt,
                JobAttempt.run_id,
                JobAttempt.status,
                JobAttempt.hardware_key,
                JobAttempt.details,
            ).where(JobAttempt.job_id.in_(chunk))
        ):
            attempts[row[0]].append(tuple(row[1:]))
    shown: dict[tuple[int, int], tuple[int, str, str | None, Any]] = {}
    for run_id, job_id, *_ in members:
        tries = attempts.get(job_id) or []
        own = [a for a in tries if a[1] == run_id]
        pick = max(own or tries, default=None, key=lambda a: a[0])
        if pick is not None:
            shown[(run_id, job_id)] = (pick[0], pick[2], pick[3], pick[4])
    return shown


def _attempt_values(s: Session, job_ids: list[int], wanted: set[tuple[int, int]], metric: str) -> dict:
    """(job, attempt) -> {(impl, metric or "correct"): (value, repeats as a float array)} for the wanted attempts
    (the repeats decoded once: every step after reads them)."""
    values: dict[tuple[int, int], dict[tuple[str, str], tuple[float | None, Any]]] = defaultdict(dict)
    for chunk in chunks(job_ids):
        for job_id, attempt, impl, mname, value, samples in s.execute(
            select(
                Measurement.job_id,
                Measurement.attempt,
                Measurement.impl,
                Measurement.metric,
                Measurement.value,
                repeats_text(),
            ).where(Measurement.job_id.in_(chunk), Measurement.metric.in_([metric, "correct"]))
        ):
            if (job_id, attempt) in wanted:
                values[(job_id, attempt)][(impl, mname)] = (value, finite(repeats(samples)))
    return values


def _side_series(members: Sequence, shown: Mapping, values: Mapping, kind: str) -> tuple[dict, dict]:
    """The points of the metric's kind and the correctness verdicts by series, from each run's shown attempt (a
    good one) in the members' order."""
    points: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    correct: dict[tuple, list[bool]] = defaultdict(list)
    for run_id, job_id, jkind, name, shape, skey, dtype in members:
        a = shown.get((run_id, job_id))
        if a is None or a[1] not in GOOD_STATUSES:
            continue
        attempt, _status, hw, details = a
        for (impl, mname), (value, samples) in values.get((job_id, attempt), {}).items():
            if mname == "correct":
                if value is not None:
                    correct[(name, skey, dtype, impl, hw)].append(value >= 0.5)
            elif jkind == kind and value is not None:
                points[(name, skey, dtype, impl, hw)].append(
                    {
                        "run_id": run_id,
                        "value": value,
                        "samples": samples if samples.size else np.array([value], dtype=float),
                        "shape": list(shape or []),
                        "pick": autotune_pick(details, impl),
                    }
                )
    return points, correct


# -- the comparison -------------------------------------------------------------------------------------------
def _point(p: Mapping[str, Any]) -> Point:
    return Point(p["samples"], p["value"], p.get("pick"))


def _levels(points: Sequence[Mapping[str, Any]]) -> list[float]:
    return [lv for lv in (_point(p).level() for p in points) if lv is not None]


def log_quartiles(xs: np.ndarray) -> tuple[float, float]:
    """``np.percentile(np.log(xs), [25, 75])`` (its default, linear method) to the bit, on one partition and without
    its per-call set-up: the comparison asks for it once per run of each series, hundreds of times a page."""
    lx = np.log(xs)
    n = lx.size
    virtual = (n - 1) * np.array([0.25, 0.75])
    below = np.floor(virtual).astype(np.intp)
    above = np.minimum(below + 1, n - 1)
    part = np.partition(lx, np.unique(np.concatenate((below, above))))
    a, b, t = part[below], part[above], virtual - below
    diff = b - a
    out = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)  # numpy's _lerp
    return float(out[0]), float(out[1])


def _repeat_se(points: Sequence[Mapping[str, Any]]) -> float | None:
    """Standard error of a side's log median from the repeats alone (runs averaged), None when unknown: per run
    1.2533 x sigma / sqrt(n), sigma from the inter-quartile range of the log repeats (IQR / 1.349, robust)."""
    per_run = []
    for p in points:
        xs = finite(p["samples"])
        xs = xs[xs > 0]
        if len(xs) < 3:
            continue
        q1, q3 = log_quartiles(xs)
        per_run.append((_MEDIAN_SE * (q3 - q1) / 1.349 / math.sqrt(len(xs))) ** 2)
    if not per_run:
        return None
    return math.sqrt(sum(per_run)) / len(per_run)


@functools.lru_cache(maxsize=256)
def _t_quantile(dof: int | None) -> float:
    """The two-sided CI_LEVEL quantile of Student's t with ``dof`` degrees of freedom (None: the normal's); a
    comparison asks for a few values hundreds of times, and one SciPy call costs about a millisecond."""
    from scipy.stats import norm, t

    tail = (1 - CI_LEVEL) / 2
    return float(norm.isf(tail)) if dof is None else float(t.isf(tail, dof))


def ratio_interval(
    ref: Sequence[Mapping[str, Any]], cur: Sequence[Mapping[str, Any]], spread: tuple[float | None, int] | None
) -> tuple[float | None, float | None, str | None]:
    """The 95 % interval of the ratio current / reference of the two sides' medians (the module doc's
    ``ci_low``, ``ci_high``) and its basis; Nones when a side has no level."""
    ref_lv, cur_lv = _levels(ref), _levels(cur)
    if not ref_lv or not cur_lv:
        return None, None, None
    d = statistics.median(cur_lv) - statistics.median(ref_lv)
    candidates = []
    if spread is not None and spread[0] is not None and spread[1] >= 1:
        se_b = spread[0] * math.sqrt(1 / len(ref_lv) + 1 / len(cur_lv))
        candidates.append((se_b * _t_quantile(spread[1]), "between-run"))
    se_r = [x for x in (_repeat_se(ref), _repeat_se(cur)) if x is not None]
    if len(se_r) == 2:
        candidates.append((math.sqrt(se_r[0] ** 2 + se_r[1] ** 2) * _t_quantile(None), "repeats"))
    if not candidates:
        return None, None, None
    half, basis = max(candidates)
    return math.exp(d - half), math.exp(d + half), basis


def _spreads(pairs: Mapping[tuple, tuple[list, list]]) -> dict[tuple, tuple[float | None, int]]:
    """The between-run spread pooled over the series of one (kernel, impl, hardware key), as `regressions`."""
    groups: dict[tuple, list[list[float]]] = defaultdict(list)
    for (name, _skey, _dtype, impl, hw), (ref, cur) in pairs.items():
        for side in (ref, cur):
            lv = _levels(side)
            if len(lv) >= 2:
                groups[(name, impl, hw)].append(lv)
    return {k: between_run_scale(groups=g) for k, g in groups.items()}


def _side_median(points: Sequence[Mapping[str, Any]]) -> float | None:
    lv = _levels(points)
    return math.exp(statistics.median(lv)) if lv else None


def _correct(verdicts: Sequence[bool] | None) -> bool | None:
    return None if not verdicts else all(verdicts)


def _geomean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None


def compare(
    src: Source,
    baseline_runs: Sequence[int],
    current_runs: Sequence[int],
    *,
    metric: str = "time_us",
    threshold: float | Mapping[str, float] = DEFAULT_THRESHOLD,
    include_cpu: bool = False,
) -> dict[str, Any]:
    """The comparison of ``current_runs`` against ``baseline_runs`` (the module doc).  Returns ``baseline``,
    ``current`` (run rows), ``metric``, ``unit``, ``higher_is_better``, ``threshold``, ``series`` (one dict per
    series, sorted by kernel, device, implementation, dtype, shape), ``summary``, ``cpu_series`` (left out),
    ``counts``.  RefError for an unknown run or the same run on both sides."""
    base, cur = _sides_of(src, baseline_runs, current_runs)
    info = catalogue.get(metric)
    name_col = Job.model if kinds.runs_model(info.kind) else Job.kernel
    sides = _fetch(src, base, cur, metric, name_col)
    pairs, cpu_series = _pair(sides, include_cpu)
    rows = _judge_pairs(pairs, sides, threshold, higher_is_worse=not info.higher_is_better)
    rows += _correctness_rows(sides, pairs, include_cpu)
    return {
        "schema": "kernelfleet.compare",
        "schema_version": SCHEMA_VERSION,
        "metric": metric,
        "unit": info.unit,
        "higher_is_better": info.higher_is_better,
        "threshold": threshold if isinstance(threshold, (int, float)) else dict(threshold),
        "baseline": sides.base_rows,
        "current": sides.cur_rows,
        "series": rows,
        "summary": summarize(rows),
        "cpu_series": 0 if include_cpu else cpu_series,
        "counts": counts(rows),
    }


def _sides_of(src: Source, baseline_runs: Sequence[int], current_runs: Sequence[int]) -> tuple[list[int], list[int]]:
    """Each side's runs, once each, in the order given; RefError for an empty side, a run on both sides or an
    unknown run."""
    base, cur = list(dict.fromkeys(baseline_runs)), list(dict.fromkeys(current_runs))
    if not base or not cur:
        raise RefError("both sides need at least one run")
    both = sorted(set(base) & set(cur))
    if both:
        raise RefError(f"run(s) {both} on both sides of the comparison")
    runs_of_ids(src, base + cur)
    return base, cur


@dataclass(frozen=True)
class _Sides:
    """What the store holds for a comparison: each side's points and correctness verdicts per series (``_side``),
    the GPU type of each hardware key, and each side's run rows."""

    ref_points: dict[tuple, list[dict[str, Any]]]
    ref_correct: dict[tuple, list[bool]]
    cur_points: dict[tuple, list[dict[str, Any]]]
    cur_correct: dict[tuple, list[bool]]
    gpu_types: dict[str, str]
    base_rows: list[dict[str, Any]]
    cur_rows: list[dict[str, Any]]


def _fetch(src: Source, base: Sequence[int], cur: Sequence[int], metric: str, name_col) -> _Sides:
    """Both sides read in one session."""
    with read_session(src) as s:
        ref_points, ref_correct = _side(s, base, metric, name_col)
        cur_points, cur_correct = _side(s, cur, metric, name_col)
        hws = {k[4] for k in (*ref_points, *cur_points, *ref_correct, *cur_correct) if k[4]}
        gpu_types = (
            dict(
                s.execute(
                    select(Device.hardware_key, Device.gpu_type).where(Device.hardware_key.in_(sorted(hws)))
                ).all()
            )
            if hws
            else {}
        )
        return _Sides(ref_points, ref_correct, cur_points, cur_correct, gpu_types, run_rows(s, base), run_rows(s, cur))


def _pair(sides: _Sides, include_cpu: bool) -> tuple[dict[tuple, tuple[list, list]], int]:
    """(series key -> (baseline points, current points) for every series timed on either side, CPU series left out
    unless ``include_cpu``; the number of CPU series)."""
    keys = set(sides.ref_points) | set(sides.cur_points)
    cpu_series = sum(1 for k in keys if is_cpu_device(k[4]))
    if not include_cpu:
        keys = {k for k in keys if not is_cpu_device(k[4])}
    return {k: (sides.ref_points.get(k, []), sides.cur_points.get(k, [])) for k in keys}, cpu_series


def _judge_pairs(
    pairs: Mapping[tuple, tuple[list, list]],
    sides: _Sides,
    threshold: float | Mapping[str, float],
    *,
    higher_is_worse: bool,
) -> list[dict[str, Any]]:
    """One row per paired series, sorted by kernel, device, implementation, dtype and shape: the ratio, its
    interval, the rule's verdict and the correctness on each side."""
    spreads = _spreads({k: v for k, v in pairs.items() if v[0] and v[1]})
    rows = []
    for key in sorted(pairs, key=lambda k: (k[0] or "", k[4] or "", k[3], k[2], _shape_order(k[1]))):
        name, _skey, _dtype, impl, hw = key
        ref, now = pairs[key]
        spread = spreads.get((name, impl, hw))
        verdict = None
        if ref and now:
            verdict = judge(
                [_point(p) for p in ref],
                [_point(p) for p in now],
                spread=spread,
                threshold=threshold_for(name, threshold),
                higher_is_worse=higher_is_worse,
            )
        c_ref, c_cur = _correct(sides.ref_correct.get(key)), _correct(sides.cur_correct.get(key))
        gpu_type = sides.gpu_types.get(hw, "cpu" if is_cpu_device(hw) else None)
        rows.append(_series_row(key, ref, now, spread, verdict, c_ref, c_cur, gpu_type))
    return rows


def _series_row(
    key: tuple,
    ref: Sequence[Mapping[str, Any]],
    now: Sequence[Mapping[str, Any]],
    spread: tuple[float | None, int] | None,
    verdict: Verdict | None,
    c_ref: bool | None,
    c_cur: bool | None,
    gpu_type: str | None,
) -> dict[str, Any]:
    """A timed series' row of the comparison (the module doc)."""
    name, _skey, dtype, impl, hw = key
    ref_median, cur_median = _side_median(ref), _side_median(now)
    ratio = cur_median / ref_median if ref_median and cur_median else None
    lo, hi, basis = ratio_interval(ref, now, spread) if ref and now else (None, None, None)
    return {
        "kernel": name,
        "shape": (now or ref)[-1]["shape"],
        "dtype": dtype,
        "impl": impl,
        "hardware_key": hw,
        "gpu_type": gpu_type,
        "device": "cpu" if is_cpu_device(hw) else "gpu",
        "state": "both" if ref and now else ("new" if now else "vanished"),
        "baseline_median": ref_median,
        "current_median": cur_median,
        "baseline_points": [p["value"] for p in ref],
        "current_points": [p["value"] for p in now],
        "ratio": ratio,
        "ci_low": lo,
        "ci_high": hi,
        "ci_basis": basis,
        "spread": spread[0] if spread else None,
        "spread_dof": spread[1] if spread else 0,
        **_verdict_fields(verdict, ratio),
        "correct_baseline": c_ref,
        "correct_current": c_cur,
        "correctness": _correctness_change(c_ref, c_cur),
    }


def _verdict_fields(verdict: Verdict | None, ratio: float | None) -> dict[str, Any]:
    """The rule's verdict as a row's fields; without one, ``change`` is the ratio's."""
    if verdict is None:
        fields = dict.fromkeys(("verdict", "direction", "change", "z", "p_value", "reason"))
        return {**fields, "change": ratio - 1 if ratio else None}
    return {
        "verdict": verdict.status,
        "direction": verdict.direction,
        "change": verdict.change,
        "z": verdict.z,
        "p_value": verdict.p_value,
        "reason": verdict.reason,
    }


def _correctness_change(c_ref: bool | None, c_cur: bool | None) -> str | None:
    """``lost`` (False now, not False before), ``regained`` (False before, True now) or None."""
    if c_cur is False and c_ref is not False:
        return "lost"
    return "regained" if c_ref is False and c_cur is True else None


def _correctness_rows(sides: _Sides, pairs: Mapping[tuple, Any], include_cpu: bool) -> list[dict[str, Any]]:
    """Rows for the correctness verdicts of implementations without a timed series (a failing impl is not timed)
    whose correctness was lost or regained."""
    rows = []
    for key in sorted(set(sides.ref_correct) | set(sides.cur_correct), key=repr):
        if key in pairs or key in sides.ref_points or key in sides.cur_points:
            continue
        if not include_cpu and is_cpu_device(key[4]):
            continue
        c_ref, c_cur = _correct(sides.ref_correct.get(key)), _correct(sides.cur_correct.get(key))
        if _correctness_change(c_ref, c_cur):
            rows.append(_correctness_only_row(key, c_ref, c_cur, sides.gpu_types.get(key[4])))
    return rows


def _correctness_only_row(key: tuple, c_ref: bool | None, c_cur: bool | None, gpu_type: str | None) -> dict:
    name, skey, dtype, impl, hw = key
    return {
        "kernel": name,
        "shape": [int(x) for x in skey.split("x")] if skey and all(p.isdigit() for p in skey.split("x")) else skey,
        "dtype": dtype,
        "impl": impl,
        "hardware_key": hw,
        "gpu_type": gpu_type or ("cpu" if is_cpu_device(hw) else None),
        "device": "cpu" if is_cpu_device(hw) else "gpu",
        "state": "correctness only",
        **dict.fromkeys(
            (
                "baseline_median",
                "current_median",
                "ratio",
                "ci_low",
                "ci_high",
                "ci_basis",
                "spread",
                "verdict",
                "direction",
                "change",
                "z",
                "p_value",
                "reason",
            )
        ),
        "baseline_points": [],
        "current_points": [],
        "spread_dof": 0,
        "correct_baseline": c_ref,
        "correct_current": c_cur,
        "correctness": "lost" if c_cur is False and c_ref is not False else "regained",
    }


def _shape_order(skey: str) -> tuple:
    parts = (skey or "").split("x")
    return tuple(int(p) if p.isdigit() else 0 for p in parts)


def is_confirmed_regression(row: Mapping[str, Any]) -> bool:
    return row.get("verdict") == CONFIRMED and row.get("direction") == "regression"


def is_confirmed_improvement(row: Mapping[str, Any]) -> bool:
    return row.get("verdict") == CONFIRMED and row.get("direction") == "improvement"


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {
        "series": sum(r["state"] == "both" for r in rows),
        "confirmed_regressions": sum(map(is_confirmed_regression, rows)),
        "confirmed_improvements": sum(map(is_confirmed_improvement, rows)),
        "unconfirmed": sum(r.get("verdict") == "unconfirmed" for r in rows),
        "kernel_changed": sum(r.get("verdict") == "kernel_changed" for r in rows),
        "correctness_lost": sum(r.get("correctness") == "lost" for r in rows),
        "correctness_regained": sum(r.get("correctness") == "regained" for r in rows),
        "new": sum(r["state"] == "new" for r in rows),
        "vanished": sum(r["state"] == "vanished" for r in rows),
    }


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (kernel, GPU type, implementation): the geometric mean of its series' ratios and counts."""
    groups: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["kernel"] or "", r["gpu_type"] or r["hardware_key"] or "", r["impl"])].append(r)
    out = []
    for (kernel, gpu_type, impl), rs in sorted(groups.items()):
        c = counts(rs)
        out.append(
            {
                "kernel": kernel,
                "gpu_type": gpu_type,
                "impl": impl,
                "geomean_ratio": _geomean([r["ratio"] for r in rs if r["state"] == "both" and r["ratio"]]),
                "min_ratio": min((r["ratio"] for r in rs if r["ratio"]), default=None),
                "max_ratio": max((r["ratio"] for r in rs if r["ratio"]), default=None),
                **c,
            }
        )
    return out


def failing(report: Mapping[str, Any]) -> bool:
    """A confirmed regression or a correctness loss: what makes ``compare`` exit 1."""
    c = report["counts"]
    return bool(c["confirmed_regressions"] or c["correctness_lost"])


def verdict_text(row: Mapping[str, Any]) -> str:
    """A series row's verdict in words, as the command's table, its Markdown and the Compare page show it ("" for
    no change)."""
    if row.get("correctness") == "lost":
        return "correctness lost"
    v = row.get("verdict")
    if v == "confirmed":
        return f"confirmed {row['direction']}"
    if v == "unconfirmed":
        return f"unconfirmed {row['direction']}"
    if v == "kernel_changed":
        return "baseline changed its kernel"
    if row.get("correctness") == "regained":
        return "correctness regained"
    return {"new": "new", "vanished": "vanished"}.get(row["state"], "")


def plot_groups(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """The rows of each (kernel, GPU type) that have a median on either side."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("baseline_median") or r.get("current_median"):
            groups[(r["kernel"] or "", r["gpu_type"] or r["hardware_key"] or "")].append(r)
    return dict(sorted(groups.items()))
