"""Wall-clock timing of host code for the benchmarks that time the orchestrator and the dashboard."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_s(fn: Callable[[], object], repeats: int) -> float:
    """The shortest of ``repeats`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)
