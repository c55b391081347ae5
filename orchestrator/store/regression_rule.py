"""The project's regression rule, on plain numbers (no database here; queries.regressions feeds it).

A change counts only when it is both
  * large: the relative change of the median is at least ``threshold`` (default 5 %, may differ per kernel), and
  * significant: a one-sided Mann-Whitney U test on the stored repeats gives p < ``alpha`` (default 0.01).
Against history, the newest ``consecutive`` points (default 2) are each compared with the pooled repeats of the
``window`` comparable points before them (default 5); the series is flagged only when every one of them violates
in the same direction, so one noisy run never raises a flag.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.01
DEFAULT_WINDOW = 5
DEFAULT_CONSECUTIVE = 2
MIN_SAMPLES = 3  # fewer repeats than this on either side: not testable


@dataclass(frozen=True)
class Comparison:
    reference_median: float
    current_median: float
    change: float  # current / reference - 1
    p_value: float  # one-sided, in the direction of the change
    worse: bool  # the change goes the bad way (slower, less bandwidth)
    large: bool
    significant: bool

    @property
    def violation(self) -> bool:
        return self.large and self.significant

    @property
    def direction(self) -> str:
        return "regression" if self.worse else "improvement"


def threshold_for(kernel: str | None, threshold: float | Mapping[str, float]) -> float:
    """``threshold`` is one number, or a mapping kernel -> number (key ``"default"`` for the rest)."""
    if isinstance(threshold, Mapping):
        if kernel is not None and kernel in threshold:
            return float(threshold[kernel])
        return float(threshold.get("default", DEFAULT_THRESHOLD))
    return float(threshold)


def _clean(samples: Sequence[float | None] | None) -> list[float]:
    return [float(x) for x in samples or () if x is not None and math.isfinite(float(x))]


def compare(reference: Sequence[float | None], current: Sequence[float | None], *,
            threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
            higher_is_worse: bool = True) -> Comparison | None:
    """Compare the repeats of one point with reference repeats; None when either side is too small to test."""
    from scipy.stats import mannwhitneyu

    ref, cur = _clean(reference), _clean(current)
    if len(ref) < MIN_SAMPLES or len(cur) < MIN_SAMPLES:
        return None
    ref_median, cur_median = statistics.median(ref), statistics.median(cur)
    if ref_median == 0:
        return None
    change = cur_median / ref_median - 1.0
    alternative = "greater" if change >= 0 else "less"
    p_value = float(mannwhitneyu(cur, ref, alternative=alternative).pvalue)
    worse = change > 0 if higher_is_worse else change < 0
    return Comparison(reference_median=ref_median, current_median=cur_median, change=change, p_value=p_value,
                      worse=worse, large=abs(change) >= threshold, significant=p_value < alpha)


def judge_series(points: Sequence[Sequence[float | None] | None], *, threshold: float = DEFAULT_THRESHOLD,
                 alpha: float = DEFAULT_ALPHA, window: int = DEFAULT_WINDOW,
                 consecutive: int = DEFAULT_CONSECUTIVE, higher_is_worse: bool = True) -> list[Comparison] | None:
    """Judge the newest points of a series (each point = its repeats, oldest point first).

    Returns the comparisons of the last ``consecutive`` points with the ``window`` points before them when all
    of them violate the rule in the same direction; None otherwise (including too short a history).
    """
    if consecutive < 1 or window < 1:
        raise ValueError("window and consecutive must be >= 1")
    if len(points) < consecutive + 1:
        return None
    streak = points[-consecutive:]
    reference_points = points[-consecutive - window:-consecutive]
    reference = [x for p in reference_points for x in (p or ())]
    comparisons = []
    for p in streak:
        c = compare(reference, p or (), threshold=threshold, alpha=alpha, higher_is_worse=higher_is_worse)
        if c is None or not c.violation:
            return None
        comparisons.append(c)
    if len({c.worse for c in comparisons}) != 1:
        return None
    return comparisons
