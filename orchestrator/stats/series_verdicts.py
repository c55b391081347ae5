"""The regression rule applied to a series' points (dicts of orchestrator.store.query.series_queries.series_by_key,
oldest first): judge_plan gives one judgement as the flag dict the regressions command lists, history_plan cuts a
series for a judgement against its history, and point_verdicts gives the verdict at every point, for readers that
draw whole series (the dashboard's Trends page): the verdict at a point is the one ``python -m orchestrator
regressions RUN`` gives that series for the point's run (the series cut after the point, judged against its
history, the same code), improvements included, CPU series judged too.

Speed: a series of n points needs n judgements, each a Mann-Whitney U test over the pooled repeats of the window.
The rule's first condition (every current point's median at least the threshold away from the pooled reference
median) is checked first with numpy on arrays made once per series; only points that pass it are judged in full,
and since judge() checks the same condition the result is the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from orchestrator.stats.regression_rule import (
    DEFAULT_RULE,
    MIN_SAMPLES,
    Point,
    RegressionRule,
    finite,
    judge,
    verdict_words,
)
from workers import metrics as catalogue

SeriesKey = tuple  # (kernel, shape_key, dtype, impl, hardware_key): series_by_key's key
PointId = tuple  # (run_id, attempt, job_key)


def is_cpu_device(hardware_key: str | None) -> bool:
    """Timings measured on a CPU: Triton ran in its interpreter (workers.spec.DeviceInfo: vendor ``cpu``)."""
    return bool(hardware_key) and str(hardware_key).split("/", 1)[0] == "cpu"


def point_verdicts(
    points: Sequence[Mapping[str, Any]],
    key: SeriesKey,
    *,
    metric: str = "time_us",
    rule: RegressionRule = DEFAULT_RULE,
    from_index: int = 0,
) -> list[dict[str, Any] | None]:
    """For each point of one series (series_by_key's dicts, oldest first): the flag dict judge_plan gives
    for the series cut after that point, or None.  ``from_index``: judge only the points from that index on (the
    others are None); the rule reads no point more than :func:`points_read` before it."""
    limit = rule.threshold_for(key[0])
    window, consecutive = rule.window, rule.consecutive
    lo = max(0, from_index - rule.points_read())
    arrays = [np.empty(0)] * lo + [finite(p["samples"]) for p in points[lo:]]
    counts = np.array([a.size for a in arrays])
    medians = row_medians([arrays], counts[:, None])
    medians[counts < MIN_SAMPLES] = np.nan
    out: list[dict[str, Any] | None] = [None] * len(points)
    # the first current point of each judgement that ends at or after from_index
    firsts = list(range(max(1, from_index - consecutive + 1), len(points) - consecutive + 1))
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
        reference, current, history = history_plan(points, i, rule)
        out[i] = judge_plan(key, reference, current, history, metric=metric, rule=rule)
    return out


def points_read(rule: RegressionRule = DEFAULT_RULE) -> int:
    """How many points before a judged point the rule reads (history_plan: the reference window or the between-run
    spread's history, whichever is longer, before the consecutive current points)."""
    return rule.points_read()


def quartiles_of(samples: list, values: list) -> list[tuple[float, float]]:
    """Each point's first and third quartile of its repeats (the Trends page's IQR band), as quartiles gives them
    (numpy's weibull percentiles, to the bit), for all points on one NaN-padded sort; a point with fewer than 4
    finite repeats: its value twice."""
    arrays = [finite(s) for s in samples]
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


def rule_point(p: Mapping[str, Any]) -> Point:
    return Point(p["samples"], p["value"], p.get("pick"))


AUTOTUNED_IMPLS = ("compile_max",)  # max-autotune: a process may keep another kernel config (docs/regressions.md)


def is_autotuned(impl: str) -> bool:
    """The implementation's kernel is chosen by an autotuner run in each process (torch.compile max-autotune)."""
    return impl in AUTOTUNED_IMPLS


def judge_plan(
    key: tuple,
    reference: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    history: Sequence[Mapping[str, Any]],
    *,
    metric: str = "time_us",
    spread: tuple[float | None, int] | None = None,
    rule: RegressionRule = DEFAULT_RULE,
) -> dict[str, Any] | None:
    """The regression rule's verdict on one series' ``current`` points (dicts of series_queries.series_by_key)
    against its ``reference`` points, as the flag dict regression_queries.regression_report lists (improvements
    included); None when the rule reports nothing.  The regressions command and the dashboard's Trends page both
    judge through this."""
    name, _skey, dtype, impl, hw = key
    limit = rule.threshold_for(name)
    v = judge(
        [rule_point(p) for p in reference],
        [rule_point(p) for p in current],
        history=[rule_point(p) for p in history],
        spread=spread,
        threshold=limit,
        alpha=rule.alpha,
        z=rule.z,
        higher_is_worse=not catalogue.higher_is_better(metric),
        autotuned=is_autotuned(impl),
    )
    if v is None:
        return None
    newest = current[-1]
    return {
        "kernel": name,
        "shape": newest["shape"],
        "dtype": dtype,
        "impl": impl,
        "hardware_key": hw,
        "device": "cpu" if is_cpu_device(hw) else "gpu",
        "metric": metric,
        "status": v.status,
        "verdict": verdict_words(v.status, v.direction, v.z),
        "reason": v.reason,
        "direction": v.direction,
        "change": v.change,
        "reference_median": v.reference_median,
        "current_median": v.current_median,
        "p_value": v.p_value,
        "noise": v.noise,
        "noise_dof": v.noise_dof,
        "z": v.z,
        "threshold": limit,
        "run_id": newest["run_id"],
        "commit": newest["commit"],
        "job_key": newest["job_key"],
        "reference_runs": [p["run_id"] for p in reference],
        "compared": [
            {"run_id": p["run_id"], "commit": p["commit"], "change": c.change, "p_value": c.p_value}
            for p, c in zip(current, v.compared)
        ],
        "pick": newest.get("pick"),
        "reference_pick": reference[-1].get("pick"),
    }


def history_plan(points: Sequence[dict[str, Any]], end: int, rule: RegressionRule = DEFAULT_RULE):
    """Against history, the series cut after point ``end``: (reference, current, history) as the rule takes them."""
    upto = points[: end + 1]
    before = upto[: -rule.consecutive]
    return before[-rule.window :], upto[-rule.consecutive :], before[-max(rule.noise_window, rule.window) :]
