"""What ``python -m orchestrator bisect`` reads from the store: the measurements of a set of job keys (one segment
of commits that run the same code), and the regression rule's verdict between two such sets.

A job's key names its code (workers/runtime/keys.py), so every good result stored under a segment's keys, whichever run
and commit measured it, is a measurement of that segment: results of earlier sweeps are reused, and a segment
needs a run only when the store holds fewer than the rule needs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from orchestrator.stats.regression_rule import RegressionRule, between_run_scale
from orchestrator.stats.series_verdicts import judge_plan, rule_point
from orchestrator.store.conditions import describe
from orchestrator.store.query.access import Source, read_session
from orchestrator.store.query.picked import run_conditions
from orchestrator.store.query.series_queries import series_by_key

SeriesKey = tuple  # (kernel, shape_key, dtype, impl, hardware_key): series_by_key's key


def key_points(
    src: Source, metric: str, kernel: str, impl: str, keys: Collection[str], include_marked: bool = False
) -> dict[SeriesKey, list[dict[str, Any]]]:
    """The good points of ``kernel``'s ``impl`` series (every shape, dtype and device) measured by jobs with one of
    ``keys``, one per run (the newest attempt), oldest first.  Runs marked by their conditions (several GPU nodes on
    one host, a rehearsal, a dirty checkout: orchestrator/store/conditions.py) are left out unless
    ``include_marked``, as trends, ``regressions`` and ``compare`` leave them out."""
    if not keys:
        return {}
    with read_session(src) as s:
        series = series_by_key(
            s, metric, kernel, None, impl=impl, with_tune=False, job_keys=list(keys), include_marked=include_marked
        )
    out: dict[SeriesKey, list[dict[str, Any]]] = {}
    for key, points in series.items():
        last: dict[int, dict[str, Any]] = {}
        for p in points:
            last[p["run_id"]] = p
        if last:
            out[key] = sorted(last.values(), key=lambda p: (p["measured_at"] is None, p["measured_at"], p["run_id"]))
    return out


def marked_left_out(src: Source, metric: str, kernel: str, impl: str, keys: Collection[str]) -> str | None:
    """What marks the newest run whose points of these keys :func:`key_points` leaves out by default ("GPU shared
    with other nodes; 2 GPU nodes on one host (10.0.0.5)"), or None when no marked run measured them."""
    if not keys:
        return None
    with read_session(src) as s:
        series = series_by_key(
            s, metric, kernel, None, impl=impl, with_tune=False, job_keys=list(keys), include_marked=True
        )
        marked = run_conditions(s, sorted({p["run_id"] for points in series.values() for p in points}))
    return describe(marked[max(marked)]) if marked else None


def pooled_spread(segments: Sequence[Mapping[SeriesKey, list[dict[str, Any]]]]) -> tuple[float | None, int]:
    """The between-run spread (scale of log medians, degrees of freedom) of the replicate runs of every measured
    segment, over every series of the implementation: runs of one segment ran the same code, so how far their
    medians scatter is the between-run noise (regression_rule.between_run_scale)."""
    groups: dict[tuple, list[list[float]]] = defaultdict(list)
    for points_of in segments:
        for key, points in points_of.items():
            levels = [lv for lv in (rule_point(p).level() for p in points) if lv is not None]
            if len(levels) >= 2:
                groups[(key[0], key[3], key[4])].append(levels)
    parts = [g for gs in groups.values() for g in gs]
    return between_run_scale(groups=parts)


def judge_segments(
    series: SeriesKey,
    reference: Sequence[dict[str, Any]],
    current: Sequence[dict[str, Any]],
    spread: tuple[float | None, int],
    *,
    metric: str,
    threshold: float,
) -> dict[str, Any] | None:
    """The rule's flag dict (orchestrator.stats.series_verdicts.judge_plan, improvements included) for the
    ``current`` segment's points against the ``reference`` segment's, the between-run spread given; None when the
    rule reports nothing."""
    rule = RegressionRule(threshold=threshold)
    return judge_plan(series, reference, current, [], metric=metric, spread=spread, rule=rule)
