"""The one per-kernel row every profiler adapter produces, whatever tool measured it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable


@dataclass
class KernelRow:
    """One kernel (by name) over a capture: how often it ran and for how long.

    ``pct`` is the kernel's share (0-100) of the total time of the rows it was computed with (for a tool's own
    stats file: the share the tool printed).  ``min_ns``/``max_ns``/``stddev_ns`` are filled when the source has
    them (rocprofv3 stats, traces with per-dispatch durations).
    """

    name: str
    calls: int
    total_ns: float
    avg_ns: float
    pct: float
    min_ns: float | None = None
    max_ns: float | None = None
    stddev_ns: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "KernelRow":
        return cls(**d)


def rows_from_durations(durations: Iterable[tuple[str, float]]) -> list[KernelRow]:
    """Aggregate ``(kernel name, duration ns)`` pairs into rows, longest total first (ties by name)."""
    per_name: dict[str, list[float]] = {}
    for name, dur in durations:
        per_name.setdefault(name, []).append(float(dur))
    grand = sum(sum(v) for v in per_name.values())
    rows = []
    for name, durs in per_name.items():
        total = sum(durs)
        n = len(durs)
        mean = total / n
        var = sum((d - mean) ** 2 for d in durs) / n
        rows.append(
            KernelRow(
                name=name,
                calls=n,
                total_ns=total,
                avg_ns=mean,
                pct=100.0 * total / grand if grand > 0 else 0.0,
                min_ns=min(durs),
                max_ns=max(durs),
                stddev_ns=var**0.5,
            )
        )
    rows.sort(key=lambda r: (-r.total_ns, r.name))
    return rows
