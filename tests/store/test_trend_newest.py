"""The Trends page judges only the points it shows: the verdicts on a series' newest points are the same as when the
whole series is judged, and the repeats of points older than the rule reads are never touched."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.stats import series_verdicts
from orchestrator.stats.regression_rule import RegressionRule

KEY = ("rmsnorm", "1x1024x2048", "bf16", "triton", "h200/sm_90")


def _series(n: int, step_at: tuple[int, ...]) -> list[dict]:
    rng = np.random.default_rng(7)
    points = []
    level = 10.0
    for i in range(n):
        if i in step_at:
            level *= 1.3  # a 30 % step: well beyond the 5 % threshold and the noise
        samples = level * (1 + 0.01 * rng.standard_normal(40))
        points.append(
            {
                "value": float(np.median(samples)),
                "samples": samples,
                "run_id": i + 1,
                "attempt": 1,
                "job_key": f"k{i}",
                "shape": [1, 1024, 2048],
                "commit": f"c{i}",
                "pick": None,
            }
        )
    return points


@pytest.mark.parametrize("shown", [1, 5, 40])
def test_the_newest_points_get_the_verdicts_the_whole_series_gives(shown):
    points = _series(120, step_at=(50, 100, 118))
    full = series_verdicts.point_verdicts(points, KEY)
    assert sum(f is not None for f in full[-shown:]) >= (1 if shown > 2 else 0)  # steps fall among the shown points
    first = len(points) - shown
    old = first - series_verdicts.points_read()
    # the points the rule does not read carry no repeats: reading one would fail
    trimmed = [{**p, "samples": None} if i < old else p for i, p in enumerate(points)]
    part = series_verdicts.point_verdicts(trimmed, KEY, from_index=first)
    assert part[:first] == [None] * first
    assert part[first:] == full[first:]


def test_the_rule_reads_back_its_window_and_history():
    # the reference window (10) or the spread's history (30), whichever is longer, before 2 consecutive points
    assert series_verdicts.points_read() == 31
    assert series_verdicts.points_read(RegressionRule(window=40, consecutive=3, noise_window=30)) == 42
