"""The regression rule, on plain numbers (no database here; orchestrator.store.query.regression_queries feeds it).

Model
  A series is one (kernel, shape, dtype, implementation, device).  Each run puts one point on it: the stored
  repeats of one micro job (``samples``) and their median ``m``.  We take ``log m_i = mu_i + e_i``: ``mu_i`` is the
  level of the code at that run, ``e_i`` is between-run noise (clocks, memory placement, the process, what an
  autotuner picked) with a robust scale ``sigma_b``.  The repeats inside one run scatter around ``m_i`` much more
  tightly than ``m_i`` scatters between runs (on an H200 two identical ``rmsnorm`` runs were 0.5-3.5 % apart while
  each run's repeats were a fraction of that), so a test on the repeats alone calls almost any between-run shift
  significant.  A change is a step of ``mu``.

Decision (``judge``): the ``current`` points (the newest ``consecutive`` = 2 points of the series, or the runs named
on one side of a comparison) against the ``reference`` points (the ``window`` = 10 points before them, or the
baseline runs).  The series is flagged only when all of these hold:
  1. large: every current point's median differs from the reference median by at least ``threshold`` (default
     5 %, may differ per kernel), all in the same direction, and so does the median of the current points;
  2. significant within the runs: a one-sided Mann-Whitney U test of each current point's repeats against the
     pooled reference repeats gives p < ``alpha`` (0.01).  Necessary, never sufficient;
  3. large against the between-run spread: with ``d = median(log m, current) - median(log m, reference)``,
     ``|d| >= z' * sigma_b * sqrt(1/a + 1/b)`` (``a``, ``b`` points on each side), where ``z'`` is ``z`` = 3.5 taken
     as a normal tail (2.3e-4) and read off Student's t with the spread's degrees of freedom (``critical_z``: 3.96
     at 28 dof, 5.35 at 9, 10.5 at 4), so a spread measured on few runs needs a larger step.
When the current points' autotuned kernel (the ``pick`` the micro job records: workers/jobs/autotune_pick.py) differs
from the reference points', the verdict is ``kernel_changed`` (the baseline changed its kernel), never a
regression.  When the implementation is autotuned (``judge(autotuned=True)``: torch.compile's max-autotune) and a
point on either side has no recorded pick (runs made before the picks were recorded), a change that would be
confirmed is ``picks_unknown``: the autotuner may have picked another kernel in some of those runs, so the change
cannot be attributed to the code (four identical-code rmsnorm runs on an H200 without picks gave compile_max a
"5.2 x spread" step of +11.9 %: docs/perf/regressions-h200.md).

Estimator of ``sigma_b`` (``robust_scale``, ``between_run_scale``, ``series_scale``): the biweight midvariance's
scale (tuning constant 9 around the median, MAD as the initial scale; Mosteller & Tukey 1977, as in astropy's
``biweight_scale``), times a small-sample factor that makes it unbiased at the normal.  It is robust (one spike in
the window moves it little, so it cannot hide the next step) and, unlike 1.4826 * MAD (37 % efficient: from 10
points it is below half the true scale one time in twenty, which let ~1 in 500 evaluations of an A/A history raise
an alarm), about as efficient as the standard deviation.  Sources of the spread:
  * history: the log medians of up to ``noise_window`` = 30 points before the current ones, through their
    successive differences / sqrt(2) (a step is one outlying difference, a spike two), n - 2 dof;
  * replicates: the runs on each side of a comparison (two runs per side), k - 1 dof per side, and in
    regression_queries.regressions pooled over the series of the same kernel, implementation and device (a sweep's
    shapes and dtypes: one implementation's relative between-run spread is alike across them); the larger of the pooled
    and the series' own scale is used.
A current point whose own repeats scatter (interquartile range over median) as much as the change, and more than
``DISTURBED_FACTOR`` = 3 times as much as the reference points' repeats do, is reported ``unconfirmed``: its run
was disturbed (run 58 of the shipped H200 history, an A/A rerun: qk_norm_rope eager's
repeats spread 264-468 us around 327 us, against 268-271 us the run before), and a code change moves the level, not
the spread.
Below ``MIN_DOF`` = 4 degrees of freedom the spread is unknown: a candidate that passes 1 and 2 is reported
``unconfirmed`` with the reason, never as a regression.  That is the case of one run against one with no history.
CI recipe: run each side twice (``regressions C1 C2 --baseline B1 B2``), or judge against a history of five or more
earlier runs (docs/regressions.md).

What the thresholds buy (Monte Carlo of this module, 0.3 % CV within runs; tests/store/test_store_regressions.py
checks the A/A cases through the real writer):
  * history, 50 points: no alarm in 1440 evaluations at 1 % and at 2 % between-run CV, one at 3 %; a 10 % step is
    confirmed on its second point 60/60 times at 1 % CV, 58/60 at 2 %, 20/60 at 3 % (there it is ~3 sigma: the
    step found reliably is about 4.5 sigma_b);
  * two runs per side, the spread pooled over 9 series: no alarm in 200 at 0.5-2 % CV; a 10 % step confirmed
    200/200 at 0.5 % CV, 192/200 at 1 %, 43/200 at 2 %;
  * a one-point spike is never confirmed (condition 1 fails on the point after it).

References: asv's step detection (asv/step_detect.py: a robust, L1 piecewise-constant fit whose penalty scales with
the noise it estimates from the series itself) and its several processes per benchmark (the between-process spread
inside one run); Conbench's lookback z-score (a point against the distribution of the last N comparable points);
Mosteller & Tukey (1977), "Data Analysis and Regression", for the biweight.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.01
DEFAULT_WINDOW = 10
DEFAULT_CONSECUTIVE = 2
DEFAULT_Z = 3.5  # as a normal quantile; critical_z widens it for the spread's dof
DEFAULT_NOISE_WINDOW = 30
MIN_SAMPLES = 3  # fewer repeats than this on either side: not testable
DISTURBED_FACTOR = 3.0  # a run's within-run scatter this many times the reference runs' marks it disturbed
MIN_DOF = 4  # fewer degrees of freedom for the between-run spread: a candidate stays unconfirmed


@dataclass(frozen=True)
class RegressionRule:
    """The rule's parameters (the module doc): ``threshold`` (one number, or kernel -> number with ``"default"`` for
    the rest), ``alpha`` (the Mann-Whitney test's level), ``window`` (reference points against history),
    ``consecutive`` (current points), ``noise_window`` (history points for the between-run spread) and ``z``."""

    threshold: float | Mapping[str, float] = DEFAULT_THRESHOLD
    alpha: float = DEFAULT_ALPHA
    window: int = DEFAULT_WINDOW
    consecutive: int = DEFAULT_CONSECUTIVE
    noise_window: int = DEFAULT_NOISE_WINDOW
    z: float = DEFAULT_Z

    def threshold_for(self, kernel: str | None) -> float:
        return threshold_for(kernel, self.threshold)

    def points_read(self) -> int:
        """How many points before a judged point the rule reads against history (the reference window or the
        between-run spread's history, whichever is longer, before the consecutive current points)."""
        return max(self.window, self.noise_window) + self.consecutive - 1


DEFAULT_RULE = RegressionRule()

CONFIRMED = "confirmed"
UNCONFIRMED = "unconfirmed"
KERNEL_CHANGED = "kernel_changed"
PICKS_UNKNOWN = "picks_unknown"
# The words every reader shows for a status (the regressions command, the dashboard's Trends page).
STATUS_WORDS = {
    CONFIRMED: "confirmed",
    UNCONFIRMED: "unconfirmed",
    KERNEL_CHANGED: "baseline changed its kernel",
    PICKS_UNKNOWN: "picks unknown",
}


def verdict_words(status: str, direction: str, z: float | None = None) -> str:
    """One verdict as the regressions command and the dashboard print it: "regression (4.1 x spread)",
    "improvement (unconfirmed)", "regression (baseline changed its kernel)", "regression (picks unknown)"."""
    if status == CONFIRMED:
        return f"{direction} ({z:.1f} x spread)" if z is not None and math.isfinite(z) else f"{direction} (confirmed)"
    return f"{direction} ({STATUS_WORDS[status]})"


# Factors that make the biweight scale of n normal values unbiased (Monte Carlo, 400 000 draws per n; above 20
# values 1 + 0.55/n); tests/store/test_store_regressions.py checks them.
_BIWEIGHT_SMALL_N = {
    2: 1.685,
    3: 1.597,
    4: 1.302,
    5: 1.222,
    6: 1.167,
    7: 1.126,
    8: 1.108,
    9: 1.084,
    10: 1.077,
    11: 1.061,
    12: 1.058,
    13: 1.048,
    14: 1.046,
    15: 1.038,
    16: 1.037,
    17: 1.032,
    18: 1.032,
    19: 1.026,
    20: 1.027,
}


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


@dataclass(frozen=True)
class Point:
    """One run's point of a series: its repeats, their median (the stored value; computed when None) and the
    autotuned kernel the run used (None: not autotuned, or not recorded)."""

    samples: Sequence[float | None]
    median: float | None = None
    pick: str | None = None

    def level(self) -> float | None:
        m = self.median
        if m is None:
            xs = finite(self.samples)
            m = float(np.median(xs)) if xs.size else None
        return math.log(m) if m is not None and m > 0 and math.isfinite(m) else None


@dataclass(frozen=True)
class Verdict:
    status: str  # CONFIRMED | UNCONFIRMED | KERNEL_CHANGED
    change: float  # of the medians of the current points against the reference points
    worse: bool
    reference_median: float
    current_median: float
    p_value: float  # largest over the current points
    noise: float | None  # sigma_b (log scale, ~ a fraction), None when unknown
    noise_dof: int
    z: float | None  # |d| / (sigma_b * sqrt(1/a + 1/b))
    reason: str
    compared: list[Comparison] = field(default_factory=list)

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
    return finite(samples).tolist()


def finite(samples: Sequence[float | None] | None) -> np.ndarray:
    """The finite repeats as a float array (None and NaN dropped): one vectorised pass over hundreds of repeats."""
    if samples is None or len(samples) == 0:
        return np.empty(0)
    a = np.asarray(samples, dtype=float)  # None becomes NaN
    return a[np.isfinite(a)]


def compare(
    reference: Sequence[float | None],
    current: Sequence[float | None],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    higher_is_worse: bool = True,
) -> Comparison | None:
    """Compare the repeats of one point with reference repeats; None when either side is too small to test."""
    ref, cur = finite(reference), finite(current)
    if ref.size < MIN_SAMPLES or cur.size < MIN_SAMPLES:
        return None
    ref_median, cur_median = float(np.median(ref)), float(np.median(cur))
    if ref_median == 0:
        return None
    change = cur_median / ref_median - 1.0
    p_value = mann_whitney_p(cur, ref, greater=change >= 0)
    worse = change > 0 if higher_is_worse else change < 0
    return Comparison(
        reference_median=ref_median,
        current_median=cur_median,
        change=change,
        p_value=p_value,
        worse=worse,
        large=abs(change) >= threshold,
        significant=p_value < alpha,
    )


def mann_whitney_p(x: np.ndarray, y: np.ndarray, *, greater: bool) -> float:
    """The one-sided p of a Mann-Whitney U test of ``x`` against ``y`` (finite floats): ``scipy.stats.mannwhitneyu(x,
    y, alternative="greater" or "less")``'s value.  Where SciPy's default method takes the normal approximation
    (both samples above 8 values, or ties) the same arithmetic is done here on one sort, without SciPy's per-call
    array machinery (several milliseconds a call, hundreds of calls a page): average ranks, the tie-corrected
    standard deviation and the continuity correction as scipy/stats/_mannwhitneyu.py has them; the ranks are
    halves of integers, so their sums are exact and the p-value is the same to the bit.  Small samples without
    ties (SciPy's exact distribution) go to SciPy."""
    from scipy import special

    n1, n2 = x.size, y.size
    values, inverse, counts = np.unique(np.concatenate((x, y)), return_inverse=True, return_counts=True)
    ties = bool((counts > 1).any())
    if not (n1 > 8 and n2 > 8) and not ties:
        from scipy.stats import mannwhitneyu

        return float(mannwhitneyu(x, y, alternative="greater" if greater else "less").pvalue)
    # the average rank (1-based) of each distinct value: the ranks it spans, first to last, averaged
    last = np.cumsum(counts).astype(float)
    average = last - (counts - 1) / 2.0
    r1 = float(average[inverse[:n1]].sum())
    u1 = r1 - n1 * (n1 + 1) / 2
    u = u1 if greater else n1 * n2 - u1
    n = n1 + n2
    t = counts.astype(float)
    tie_term = float(np.sum(t**3 - t))
    s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    z = (u - n1 * n2 / 2 - 0.5) / s if s > 0 else math.copysign(math.inf, u - n1 * n2 / 2 - 0.5)
    return float(min(max(special.ndtr(-z), 0.0), 1.0))


def _all_large(pooled_ref: np.ndarray, current: Sequence[Point], threshold: float) -> bool:
    """Whether every current point's repeats could be a violation for compare(): enough repeats on both sides and
    a median at least ``threshold`` away from the pooled reference median (its condition 1, without the test)."""
    if pooled_ref.size < MIN_SAMPLES:
        return False
    ref_median = float(np.median(pooled_ref))
    if ref_median == 0:
        return False
    for p in current:
        cur = finite(p.samples)
        if cur.size < MIN_SAMPLES or abs(float(np.median(cur)) / ref_median - 1.0) < threshold:
            return False
    return True


def within_run_scatter(samples: Sequence[float | None] | None) -> float:
    """The interquartile range of one point's repeats over their median (0 with fewer than 4 repeats)."""
    xs = finite(samples)
    if xs.size < 4:
        return 0.0
    q1, med, q3 = np.percentile(xs, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else 0.0


def robust_scale(values: Sequence[float]) -> float | None:
    """The biweight midvariance's scale (tuning constant 9, around the median, MAD as the initial scale) times a
    small-sample factor: unbiased at the normal; None for fewer than 2 values.  0 when the values agree."""
    n = len(values)
    if n < 2:
        return None
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    if mad == 0:
        return 0.0
    num = den = 0.0
    for v in values:
        u = (v - med) / (9.0 * mad)
        if abs(u) < 1.0:
            num += (v - med) ** 2 * (1.0 - u * u) ** 4
            den += (1.0 - u * u) * (1.0 - 5.0 * u * u)
    if den == 0:
        return None
    return math.sqrt(n * num) / abs(den) * _BIWEIGHT_SMALL_N.get(n, 1.0 + 0.55 / n)


def between_run_scale(
    groups: Sequence[Sequence[float]] = (), sequences: Sequence[Sequence[float]] = ()
) -> tuple[float | None, int]:
    """The between-run scale of log medians and its degrees of freedom, pooled (weights = dof) over

    * ``groups``: replicate points that share one level (each side of a comparison): their robust scale, k - 1 dof;
    * ``sequences``: a series' history in time order: the robust scale of its successive differences / sqrt(2),
      which one step (one outlying difference) or one spike (two) moves little; n - 2 dof.
    """
    num, dof = 0.0, 0
    parts = [(list(g), len(g) - 1, 1.0) for g in groups]
    parts += [([b - a for a, b in zip(q, q[1:])], len(q) - 2, math.sqrt(2.0)) for q in sequences if len(q) >= 3]
    for values, k, divisor in parts:
        sc = robust_scale(values)
        if sc is None or k < 1:
            continue
        num += k * (sc / divisor) ** 2
        dof += k
    return (math.sqrt(num / dof), dof) if dof else (None, 0)


def critical_z(z: float, dof: int) -> float:
    """``z`` (a normal quantile) as the Student-t quantile of the same tail for a scale estimated with ``dof``
    degrees of freedom: an uncertain spread needs a larger step."""
    from scipy.stats import norm, t

    return float(t.isf(norm.sf(z), dof)) if dof > 0 else math.inf


def _levels(points: Sequence[Point]) -> list[float]:
    return [lv for lv in (p.level() for p in points) if lv is not None]


def judge(
    reference: Sequence[Point],
    current: Sequence[Point],
    *,
    history: Sequence[Point] = (),
    spread: tuple[float | None, int] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    z: float = DEFAULT_Z,
    higher_is_worse: bool = True,
    autotuned: bool = False,
) -> Verdict | None:
    """The verdict on ``current`` against ``reference`` (the module doc); None when there is nothing to report
    (not large, not significant, directions disagree, or within the between-run spread).  ``autotuned``: the
    implementation's kernel is chosen by an autotuner, so a point without a recorded pick leaves a change
    ``picks_unknown`` rather than confirmed.

    ``history``: the series' points before the current ones in time order (the reference window included, or
    the points up to a baseline run), used only to estimate the between-run spread.  ``spread``: (scale, dof)
    pooled over the series of the same implementation (regression_queries.regressions); the larger of it and the series'
    own scale is used, with the pooled dof."""
    if not reference or not current:
        return None
    pooled_ref = np.concatenate([finite(p.samples) for p in reference])
    if not _all_large(pooled_ref, current, threshold):
        return None  # compare() would find the same, after a Mann-Whitney test per current point
    compared = []
    for p in current:
        c = compare(pooled_ref, p.samples, threshold=threshold, alpha=alpha, higher_is_worse=higher_is_worse)
        if c is None or not c.violation:
            return None
        compared.append(c)
    if len({c.worse for c in compared}) != 1:
        return None
    ref_levels, cur_levels = _levels(reference), _levels(current)
    if not ref_levels or not cur_levels:
        return None
    d = statistics.median(cur_levels) - statistics.median(ref_levels)
    change = math.exp(d) - 1.0
    if abs(change) < threshold:
        return None
    worse = compared[0].worse
    noise, dof = series_scale(ref_levels, cur_levels, _levels(history))
    if spread is not None and spread[0] is not None and spread[1] >= dof:
        noise, dof = max(spread[0], noise or 0.0), spread[1]
    common = dict(
        change=change,
        worse=worse,
        reference_median=math.exp(statistics.median(ref_levels)),
        current_median=math.exp(statistics.median(cur_levels)),
        p_value=max(c.p_value for c in compared),
        compared=compared,
    )
    ref_picks = {p.pick for p in reference if p.pick}
    cur_picks = {p.pick for p in current if p.pick}
    if noise is None or dof < MIN_DOF:
        verdict = Verdict(
            status=UNCONFIRMED,
            noise=noise,
            noise_dof=dof,
            z=None,
            reason=f"between-run spread unknown: {len(ref_levels)} reference and {len(cur_levels)} "
            f"current point(s) and {max(len(_levels(history)) - len(ref_levels), 0)} earlier "
            f"give {dof} degree(s) of freedom, {MIN_DOF} needed (two runs per side over "
            "several shapes, or five earlier points of the series)",
            **common,
        )
    else:
        se = noise * math.sqrt(1 / len(cur_levels) + 1 / len(ref_levels))
        score = math.inf if se == 0 else abs(d) / se
        if score < critical_z(z, dof):
            return None
        scatter = max(within_run_scatter(p.samples) for p in current)
        usual = statistics.median(within_run_scatter(p.samples) for p in reference)
        if scatter >= abs(change) and scatter > DISTURBED_FACTOR * usual:
            return Verdict(
                status=UNCONFIRMED,
                noise=noise,
                noise_dof=dof,
                z=score,
                reason=f"a current run's repeats scatter {scatter:.0%} (IQR / median; the reference runs' "
                f"{usual:.1%}), as much as the change: that run was disturbed, rerun it",
                **common,
            )
        verdict = Verdict(
            status=CONFIRMED,
            noise=noise,
            noise_dof=dof,
            z=score,
            reason=f"{score:.1f} x the between-run spread ({noise:.2%}, {dof} dof)",
            **common,
        )
    if ref_picks and cur_picks and ref_picks != cur_picks:
        return Verdict(
            **{
                **verdict.__dict__,
                "status": KERNEL_CHANGED,
                "reason": "baseline changed its kernel: the autotuner picked "
                f"{', '.join(sorted(cur_picks))} (was {', '.join(sorted(ref_picks))})",
            }
        )
    unknown = sum(1 for p in (*reference, *current) if not p.pick)
    if autotuned and verdict.status == CONFIRMED and unknown:
        return Verdict(
            **{
                **verdict.__dict__,
                "status": PICKS_UNKNOWN,
                "reason": f"picks unknown: the implementation is autotuned and {unknown} of the "
                f"{len(reference) + len(current)} points compared have no recorded autotune pick, so the "
                f"change ({verdict.reason}) cannot be attributed to the code",
            }
        )
    return verdict


def series_scale(
    ref_levels: Sequence[float], cur_levels: Sequence[float], history_levels: Sequence[float] = ()
) -> tuple[float | None, int]:
    """The between-run scale one series gives: its history as a sequence when it has one (it holds the reference
    points), else each side of the comparison as a group of replicates."""
    if len(history_levels) >= 3:
        return between_run_scale(groups=[cur_levels] if len(cur_levels) >= 2 else [], sequences=[history_levels])
    return between_run_scale(groups=[g for g in (ref_levels, cur_levels) if len(g) >= 2])


def judge_series(
    points: Sequence[Point | Sequence[float | None] | None],
    *,
    rule: RegressionRule = DEFAULT_RULE,
    kernel: str | None = None,
    spread: tuple[float | None, int] | None = None,
    higher_is_worse: bool = True,
    autotuned: bool = False,
) -> Verdict | None:
    """Judge the newest ``rule.consecutive`` points of a series (oldest point first; a point is a Point or its
    repeats) against the ``rule.window`` points before them, the between-run spread from the ``rule.noise_window``
    points before them, at ``kernel``'s threshold; None when there is nothing to report, including too short a
    history."""
    consecutive, window = rule.consecutive, rule.window
    if consecutive < 1 or window < 1:
        raise ValueError("window and consecutive must be >= 1")
    pts = [p if isinstance(p, Point) else Point(p or ()) for p in points]
    if len(pts) < consecutive + 1:
        return None
    before = pts[:-consecutive]
    return judge(
        before[-window:],
        pts[-consecutive:],
        history=before[-max(rule.noise_window, window) :],
        spread=spread,
        threshold=rule.threshold_for(kernel),
        alpha=rule.alpha,
        z=rule.z,
        higher_is_worse=higher_is_worse,
        autotuned=autotuned,
    )
