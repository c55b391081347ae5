"""The regression rule's verdict at every point of a micro series, read from the store for the dashboard's Trends
page (the maths: orchestrator/stats/series_verdicts.py), kept per store revision (revision_cache) so a page shown
again judges nothing twice.

The page draws these verdicts in the rule's words; the statuses and the helpers it draws them with come from here
with them (``__all__``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from orchestrator.stats.regression_rule import CONFIRMED, KERNEL_CHANGED, PICKS_UNKNOWN, STATUS_WORDS, UNCONFIRMED
from orchestrator.stats.series_verdicts import (
    PointId,
    SeriesKey,
    point_verdicts,
    points_read,
    quartiles_of,
    row_medians,
)
from orchestrator.store.query import revision_cache
from orchestrator.store.query.access import Source, read_session
from orchestrator.store.query.series_queries import series_by_key

__all__ = [
    "CONFIRMED",
    "KERNEL_CHANGED",
    "PICKS_UNKNOWN",
    "STATUS_WORDS",
    "UNCONFIRMED",
    "row_medians",
    "trend_judged",
]


def trend_judged(
    src: Source,
    kernel: str,
    *,
    metric: str = "time_us",
    shape: Sequence[int] | str | None = None,
    dtype: str | None = None,
    impl: str | None = None,
    hardware_keys: Iterable[str] | None = None,
    last: int | None = None,
    include_marked: bool = False,
) -> tuple[dict[SeriesKey, dict[PointId, dict[str, Any]]], dict[SeriesKey, dict[PointId, tuple[float, float]]]]:
    """(verdicts, bands) for every point of the micro series of ``kernel`` that match the filters, by series key and
    point (run_id, attempt, job_key): the rule's verdicts (points without one are absent), and every point's first
    and third quartile of its repeats (quartiles_of): the page's IQR band comes from the repeats the rule has
    decoded already, so the page's points need not read them a second time.  ``last``: only each series' newest
    that many points (what the page shows), judged against the history before them exactly as when every point is
    judged; the repeats of points older than the rule reads are not decoded.  Runs marked by their conditions are
    left out unless ``include_marked``.  Kept per store revision (revision_cache): judged once, shown many times."""
    shape = shape if shape is None or isinstance(shape, str) else tuple(shape)
    keys = None if hardware_keys is None else tuple(sorted(hardware_keys))
    return revision_cache.memo(src, _trend_judged, kernel, metric, shape, dtype, impl, keys, last, include_marked)


def _trend_judged(src, kernel, metric, shape, dtype, impl, hardware_keys, last=None, include_marked=False):
    decode = None if last is None else last + points_read()
    with read_session(src) as s:
        series = series_by_key(
            s,
            metric,
            kernel,
            None,
            shape=shape,
            dtype=dtype,
            impl=impl,
            decode_newest=decode,
            with_tune=impl is not None,
            include_marked=include_marked,
        )
    verdicts: dict[SeriesKey, dict[PointId, dict[str, Any]]] = {}
    bands: dict[SeriesKey, dict[PointId, tuple[float, float]]] = {}
    for key, points in series.items():
        if hardware_keys is not None and key[4] not in hardware_keys:
            continue
        ids = [(p["run_id"], p["attempt"], p["job_key"]) for p in points]
        shown = 0 if last is None else max(0, len(points) - last)
        flags = point_verdicts(points, key, metric=metric, from_index=shown)
        verdicts[key] = {i: f for i, f in zip(ids, flags) if f is not None}
        newest = points[shown:]
        bands[key] = dict(zip(ids[shown:], quartiles_of([p["samples"] for p in newest], [p["value"] for p in newest])))
    return verdicts, bands
