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
    counts = np.array([a.size for a in arrays])
    medians = row_medians([arrays], counts[:, None])
    medians[counts < MIN_SAMPLES] = np.nan
    out: list[dict[str, Any] | None] = [None] * len(points)
    firsts = list(range(1, len(points) - consecutive + 1))  # the first current point of each judgement
    pooled = window_medians(arrays, firsts, window)
    for first_current, (ref, size) in zip(firsts, pooled):
        i = first_current + consecutive - 1
        if size < MIN_SAMPLES:
            continue
        cur = medians[first_current : i + 1]
        # the rule's size condition, a hair looser than judge() checks it (a last-bit difference of a median must
        # not skip a point judge() would flag): a point that fails it has no verdict
        if ref == 0 or np.isnan(cur).any() or not bool(np.all(np.abs(cur / ref - 1.0) >= limit * (1 - 1e-9))):
            continue
        reference, current, history = queries.history_plan(
            points, i, window=window, consecutive=consecutive, noise_window=noise_window
        )
        out[i] = queries.judge_plan(
            key, reference, current, history, metric=metric, threshold=threshold, alpha=alpha, z=z
        )
    return out


def quartiles_of(samples: list, values: list) -> list[tuple[float, float]]:
    """Each point's first and third quartile of its repeats (the Trends page's IQR band), as quartiles gives them
    (numpy's weibull percentiles, to the bit), for all points on one NaN-padded sort; a point with fewer than 4
    finite repeats: its value twice."""
    arrays = [_finite(s) for s in samples]
    n = np.array([a.size for a in arrays])
    if not arrays or n.max(initial=0) < 4:
        return [(v, v) for v in values]
    padded = np.full((len(arrays), int(n.max())), np.nan)
    for r, a in enumerate(arrays):
        padded[r, : a.size] = a
    padded.sort(axis=1)  # NaN last
    rows = np.arange(len(arrays))
    out = []
    for q in (0.25, 0.75):
        virtual = (n * q + q) - 1  # numpy's _compute_virtual_index for weibull (alpha = beta = 0)
        below = np.floor(virtual)
        prev = np.clip(below, 0, None).astype(np.intp)
        nxt = np.minimum(prev + 1, np.maximum(n - 1, 0))
        t = virtual - below
        a, b = padded[rows, prev], padded[rows, nxt]
        diff = b - a
        value = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)  # numpy's _lerp
        last = padded[rows, np.maximum(n - 1, 0)]
        value = np.where(virtual >= n - 1, last, np.where(virtual < 0, padded[:, 0], value))
        out.append(value)
    return [(float(q1), float(q3)) if size >= 4 else (v, v) for q1, q3, size, v in zip(out[0], out[1], n, values)]


def quartiles(samples, value) -> tuple[float, float]:
    """One point's first and third quartile of its repeats: numpy's weibull percentiles (statistics.quantiles'
    default, exclusive method); fewer than 4 finite repeats: its value twice."""
    xs = np.asarray(samples if samples is not None else [], dtype=float)  # None becomes NaN
    xs = xs[np.isfinite(xs)]
    if xs.size < 4:
        return value, value
    q1, q3 = np.percentile(xs, [25, 75], method="weibull")  # statistics.quantiles' default (exclusive) method
    return float(q1), float(q3)


_WINDOW_ELEMENTS = 4_000_000  # repeats held at once by window_medians (32 MB of floats)


def row_medians(groups: Sequence[Sequence[np.ndarray]], counts: np.ndarray) -> np.ndarray:
    """For each row r, the median of the repeats in ``groups[g][r]`` over every g (``counts[r, g]`` of them): what
    np.median gives on their concatenation, to the bit (the middle value, or the two middle values' mean), for all
    rows on one NaN-padded sort instead of one call per row."""
    rows = len(groups[0])
    width = int(counts.sum(axis=1).max()) if rows else 0
    padded = np.full((rows, max(width, 1)), np.nan)
    for r in range(rows):
        at = 0
        for g in groups:
            a = g[r]
            padded[r, at : at + a.size] = a
            at += a.size
    padded.sort(axis=1)  # NaN last
    n = counts.sum(axis=1)
    lo, hi = np.maximum((n - 1) // 2, 0), np.maximum(n // 2, 0)
    idx = np.arange(rows)
    out = (padded[idx, lo] + padded[idx, hi]) / 2  # odd n: lo == hi, (x + x) / 2 == x
    out[n == 0] = np.nan
    return out


def window_medians(arrays: Sequence[np.ndarray], firsts: Sequence[int], window: int) -> list[tuple[float, int]]:
    """For each index f of ``firsts``: (the median, the number) of the pooled repeats of arrays[f - window : f] (from
    0 when f < window), as np.median(np.concatenate(...)) gives it; in blocks of at most _WINDOW_ELEMENTS repeats."""
    out: list[tuple[float, int]] = []
    sizes = np.array([a.size for a in arrays])
    at = 0
    while at < len(firsts):
        block, held = [], 0
        while at < len(firsts) and (not block or held < _WINDOW_ELEMENTS):
            f = firsts[at]
            held += int(sizes[max(0, f - window) : f].sum())
            block.append(f)
            at += 1
        members = [[arrays[j] for j in range(max(0, f - window), f)] for f in block]
        groups = [[m[k] if k < len(m) else np.empty(0) for m in members] for k in range(window)]
        counts = np.array([[g[r].size for g in groups] for r in range(len(block))])
        medians = row_medians(groups, counts)
        out += [(float(m), int(c)) for m, c in zip(medians, counts.sum(axis=1))]
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
    return trend_judged(src, kernel, metric=metric, shape=shape, dtype=dtype, impl=impl, hardware_keys=hardware_keys)[0]


def trend_judged(
    src: queries.Source,
    kernel: str,
    *,
    metric: str = "time_us",
    shape: Sequence[int] | str | None = None,
    dtype: str | None = None,
    impl: str | None = None,
    hardware_keys: Iterable[str] | None = None,
) -> tuple[dict[SeriesKey, dict[PointId, dict[str, Any]]], dict[SeriesKey, dict[PointId, tuple[float, float]]]]:
    """trend_verdicts' answer and, by the same series key and point, every point's first and third quartile of its
    repeats (quartiles_of): the page's IQR band comes from the repeats the rule has decoded already, so the page's
    points need not read them a second time.  Kept per store revision (revision_cache)."""
    shape = shape if shape is None or isinstance(shape, str) else tuple(shape)
    keys = None if hardware_keys is None else tuple(sorted(hardware_keys))
    return revision_cache.memo(src, _trend_judged, kernel, metric, shape, dtype, impl, keys)


def _trend_judged(src, kernel, metric, shape, dtype, impl, hardware_keys):
    with queries._reading(src) as s:
        series = queries._series(s, metric, kernel, None, shape=shape, dtype=dtype, impl=impl)
    verdicts: dict[SeriesKey, dict[PointId, dict[str, Any]]] = {}
    bands: dict[SeriesKey, dict[PointId, tuple[float, float]]] = {}
    for key, points in series.items():
        if hardware_keys is not None and key[4] not in hardware_keys:
            continue
        ids = [(p["run_id"], p["attempt"], p["job_key"]) for p in points]
        flags = point_verdicts(points, key, metric=metric)
        verdicts[key] = {i: f for i, f in zip(ids, flags) if f is not None}
        bands[key] = dict(zip(ids, quartiles_of([p["samples"] for p in points], [p["value"] for p in points])))
    return verdicts, bands
