"""The regression rule's verdict at every point of a series, for readers that draw whole series (the dashboard's
Trends page): the verdict at a point is the one ``python -m orchestrator regressions RUN`` gives that series for
the point's run (the series cut after the point, judged against its history: queries.history_plan and
queries.judge_plan, the same code), improvements included, CPU series judged too.

Speed: a series of n points needs n judgements, each a Mann-Whitney U test over the pooled repeats of the window.
The rule's first condition (every current point's median at least the threshold away from the pooled reference
median) is checked first with numpy on arrays made once per series; only points that pass it are judged in full,
and since judge() checks the same condition the result is the same.  Verdicts are kept per store revision
(revision_cache), so a page shown again judges nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from orchestrator.store import queries, revision_cache
from orchestrator.store.regression_rule import (
    DEFAULT_ALPHA,
    DEFAULT_CONSECUTIVE,
    DEFAULT_NOISE_WINDOW,
    DEFAULT_THRESHOLD,
    DEFAULT_WINDOW,
    DEFAULT_Z,
    MIN_SAMPLES,
    _finite,
    threshold_for,
)

SeriesKey = tuple  # (kernel, shape_key, dtype, impl, hardware_key): queries._series' key
PointId = tuple  # (run_id, attempt, job_key)


def point_verdicts(
    points: Sequence[Mapping[str, Any]],
    key: SeriesKey,
    *,
    metric: str = "time_us",
    threshold: float | Mapping[str, float] = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    window: int = DEFAULT_WINDOW,
    consecutive: int = DEFAULT_CONSECUTIVE,
    noise_window: int = DEFAULT_NOISE_WINDOW,
    z: float = DEFAULT_Z,
) -> list[dict[str, Any] | None]:
    """For each point of one series (queries._series' dicts, oldest first): the flag dict queries.judge_plan gives
    for the series cut after that point, or None."""
    limit = threshold_for(key[0], threshold)
    arrays = [_finite(p["samples"]) for p in points]
    medians = np.array([float(np.median(a)) if a.size >= MIN_SAMPLES else np.nan for a in arrays])
    out: list[dict[str, Any] | None] = [None] * len(points)
    for i in range(consecutive, len(points)):
        first_current = i + 1 - consecutive
        pooled = np.concatenate(arrays[max(0, first_current - window) : first_current])
        if pooled.size < MIN_SAMPLES:
            continue
        ref = float(np.median(pooled))
        cur = medians[first_current : i + 1]
        if ref == 0 or np.isnan(cur).any() or not bool(np.all(np.abs(cur / ref - 1.0) >= limit)):
            continue  # the rule's size condition fails: judge() would report nothing
        reference, current, history = queries.history_plan(
            points, i, window=window, consecutive=consecutive, noise_window=noise_window
        )
        out[i] = queries.judge_plan(
            key, reference, current, history, metric=metric, threshold=threshold, alpha=alpha, z=z
        )
    return out


def trend_verdicts(
    src: queries.Source,
    kernel: str,
    *,
    metric: str = "time_us",
    shape: Sequence[int] | str | None = None,
    dtype: str | None = None,
    impl: str | None = None,
    hardware_keys: Iterable[str] | None = None,
) -> dict[SeriesKey, dict[PointId, dict[str, Any]]]:
    """The rule's verdicts on every point of the micro series of ``kernel`` that match the filters, by series key
    and point (run_id, attempt, job_key); points without a verdict are absent.  Kept per store revision
    (revision_cache): judged once, shown many times."""
    shape = shape if shape is None or isinstance(shape, str) else tuple(shape)
    keys = None if hardware_keys is None else tuple(sorted(hardware_keys))
    return revision_cache.memo(src, _trend_verdicts, kernel, metric, shape, dtype, impl, keys)


def _trend_verdicts(src, kernel, metric, shape, dtype, impl, hardware_keys):
    with queries._reading(src) as s:
        series = queries._series(s, metric, kernel, None, shape=shape, dtype=dtype, impl=impl)
    result: dict[SeriesKey, dict[PointId, dict[str, Any]]] = {}
    for key, points in series.items():
        if hardware_keys is not None and key[4] not in hardware_keys:
            continue
        flags = point_verdicts(points, key, metric=metric)
        result[key] = {(p["run_id"], p["attempt"], p["job_key"]): f for p, f in zip(points, flags) if f is not None}
    return result
