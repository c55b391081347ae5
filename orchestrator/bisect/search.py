"""The search of ``python -m orchestrator bisect`` over segments: runs of consecutive commits whose plans have the
same keys (they run the same code, so one measurement serves them all).  Segment 0 holds the good commit, the
last one the bad commit.

A bisection in rounds.  Round one measures both ends; when the regression rule confirms no change between them
there is nothing to find.  Each later round measures the middle segment of every interval still open (in one
round: on a fleet they run side by side), and each half whose ends the rule tells apart stays open, so a series
that changed twice keeps both halves and every confirmed step is found, none forced into one culprit.  An interval
with no segment left between its ends is a step.  A segment that cannot be planned or run is skipped: it is neither
good nor bad, the next untried segment of the interval is measured instead, and a step whose ends have skipped
segments between them names them as candidates too.  An interval whose ends differ while neither half confirms a
change is a drift (the change is spread over its commits, each step below the rule's reach) and is reported as such.

Pure: what a round measures and how two segments are judged are the caller's (``measure``, ``judge``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Outcome:
    """What the search found: ``steps`` and ``drifts`` as (lo, hi) segment pairs, ``rounds`` of measurements
    that ran something, ``skipped`` segments, ``changed`` whether the ends differ at all (``None``: an end could
    not be measured)."""

    steps: list[tuple[int, int]] = field(default_factory=list)
    drifts: list[tuple[int, int]] = field(default_factory=list)
    skipped: set[int] = field(default_factory=set)
    rounds: int = 0
    changed: bool | None = None


def search(
    n: int,
    measure: Callable[[Sequence[int]], tuple[set[int], bool]],
    judge: Callable[[int, int], bool],
    skipped: set[int] | None = None,
) -> Outcome:
    """Search ``n`` segments (0: good, n - 1: bad).  ``measure(segments)`` makes sure each has its measurements and
    returns (those that failed, whether anything ran); ``judge(a, b)`` whether the rule confirms a change from
    segment a to segment b (it may measure more, e.g. another run a side).  ``skipped``: segments already known to
    fail (their commits could not be planned)."""
    out = Outcome(skipped=set(skipped or ()))
    if {0, n - 1} & out.skipped:
        return out

    def do_measure(segments: Sequence[int]) -> set[int]:
        failed, ran = measure(segments)
        out.rounds += bool(ran)
        out.skipped |= failed
        return failed

    if do_measure([0, n - 1]):
        return out
    out.changed = judge(0, n - 1)
    if not out.changed:
        return out
    open_ = [(0, n - 1)]
    while open_:
        probes: dict[tuple[int, int], int] = {}
        for lo, hi in open_:
            inner = [i for i in range(lo + 1, hi) if i not in out.skipped]
            if inner:
                probes[(lo, hi)] = inner[len(inner) // 2]
            else:
                out.steps.append((lo, hi))
        if not probes:
            break
        failed = do_measure(sorted(set(probes.values())))
        open_ = []
        for (lo, hi), mid in probes.items():
            if mid in failed:
                open_.append((lo, hi))  # measure another segment of it
                continue
            halves = [(a, b) for a, b in ((lo, mid), (mid, hi)) if judge(a, b)]
            if not halves:
                out.drifts.append((lo, hi))
            open_.extend(halves)
    out.steps.sort()
    out.drifts.sort()
    return out
