"""What an end-to-end job's injected modes are measured against, and how far each mode is from its device floor.

Pure functions over one e2e job's per-mode figures; the report (orchestrator.reports.summary) and the dashboard's
end-to-end page both read them through orchestrator.store.query (result_queries, view_queries).

**Anchors.**  A mode's kind is ``graphs`` when its step replays CUDA graphs (``+graph``: kernels.inject.cuda_graphs;
``compile-ro`` / ``compile-max-cg``: torch.compile's own) and ``plain`` otherwise (every kernel launched by the
host).  A kind's anchor is its fastest torch.compile mode without the injected kernels (``compile``,
``compile-max``; ``compile+graph``, ``compile-max+graph``, ``compile-ro``, ``compile-max-cg``) that ran and did not
fail correctness: what a user who wants speed would pick in that kind.  Each injected mode (``triton...``) is set
against the anchor of its own kind -- graphs against graphs, plain calls against plain calls -- never across kinds.
Equal times: the mode listed first in ``workers.jobs.e2e.spec.MODES`` is the anchor.

**Device floor.**  The device time per step of the GEMMs and the attention (the profile's ``gemm`` and
``attention`` classes, workers.jobs.e2e.profile): work the injected norm / modulation / RoPE / elementwise kernels do
not replace.  ``rest_ms`` is the device time of every other class; ``over_floor_ms`` = ms per step - floor: what a mode
spends beyond its own GEMMs and attention (other kernels, and the device idle waiting for the host).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from workers.jobs.e2e.spec import MODES, graph_enabled, mode_parts

GRAPHS, PLAIN = "graphs", "plain"
KINDS = (GRAPHS, PLAIN)
KIND_LABELS = {GRAPHS: "CUDA graphs", PLAIN: "plain calls"}
FLOOR_CLASSES = ("gemm", "attention")


def mode_kind(mode: str) -> str | None:
    """``graphs`` or ``plain`` for a known mode, None for a name ``workers.jobs.e2e.spec.MODES`` does not hold."""
    if mode not in MODES:
        return None
    return GRAPHS if graph_enabled(mode) else PLAIN


def is_anchor_mode(mode: str) -> bool:
    """A torch.compile mode without the injected kernels (a candidate anchor)."""
    if mode not in MODES:
        return False
    triton, comp, _ = mode_parts(mode)
    return comp is not None and not triton


def is_injected(mode: str) -> bool:
    return mode in MODES and mode_parts(mode)[0]


@dataclass(frozen=True)
class Comparison:
    """One injected mode beside its kind's anchor (``mode`` None: the kind has an anchor but no injected mode)."""

    kind: str
    anchor: str | None
    anchor_ms: float | None
    mode: str | None
    ms: float | None
    speedup: float | None  # anchor_ms / ms: > 1 the injected mode is faster

    def as_dict(self) -> dict:
        return asdict(self)


def _usable(ms: Mapping[str, float | None], correct: Mapping[str, bool | None], mode: str) -> bool:
    return ms.get(mode) is not None and correct.get(mode) is not False


def _order(mode: str) -> int:
    return MODES.index(mode)


def best_anchor(
    ms: Mapping[str, float | None], kind: str, correct: Mapping[str, bool | None] | None = None
) -> tuple[str, float] | None:
    """``(mode, ms per step)`` of the fastest anchor mode of ``kind`` in ``ms`` (mode -> ms per step; None: not
    run), leaving out modes ``correct`` marks False; None when no such mode ran."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    correct = correct or {}
    cands = [m for m in ms if is_anchor_mode(m) and mode_kind(m) == kind and _usable(ms, correct, m)]
    if not cands:
        return None
    best = min(cands, key=lambda m: (ms[m], _order(m)))
    return best, float(ms[best])


def comparisons(ms: Mapping[str, float | None], correct: Mapping[str, bool | None] | None = None) -> list[Comparison]:
    """Per kind (graphs, then plain): each injected mode that ran (MODES order) beside the kind's anchor, with its
    speed-up over it; a kind with an anchor and no injected mode gives one row with ``mode`` None; a kind with
    neither gives nothing.  Modes ``correct`` marks False get no row and are no anchor."""
    correct = correct or {}
    out: list[Comparison] = []
    for kind in KINDS:
        anchor = best_anchor(ms, kind, correct)
        injected = sorted(
            (m for m in ms if is_injected(m) and mode_kind(m) == kind and _usable(ms, correct, m)), key=_order
        )
        a_mode, a_ms = anchor if anchor else (None, None)
        for m in injected:
            speedup = a_ms / ms[m] if a_ms is not None and ms[m] else None
            out.append(Comparison(kind, a_mode, a_ms, m, float(ms[m]), speedup))
        if anchor and not injected:
            out.append(Comparison(kind, a_mode, a_ms, None, None, None))
    return out


def device_floor(classes: Mapping[str, float | None] | None) -> float | None:
    """GEMM + attention device ms per step of a profile's classes (a class the profile lacks took no time);
    None without a device profile (no classes: a CPU capture, or no profile)."""
    if not classes:
        return None
    return sum(float(classes.get(c) or 0.0) for c in FLOOR_CLASSES)


def floor_figures(ms_per_step: float | None, classes: Mapping[str, float | None] | None) -> dict[str, float | None]:
    """``floor_ms`` (GEMM + attention), ``rest_ms`` (every other class's device time) and ``over_floor_ms``
    (ms per step - floor) of one mode; None where the profile or the step time is missing."""
    floor = device_floor(classes)
    if floor is None:
        return {"floor_ms": None, "rest_ms": None, "over_floor_ms": None}
    rest = sum(float(v or 0.0) for c, v in (classes or {}).items() if c not in FLOOR_CLASSES)
    over = ms_per_step - floor if ms_per_step is not None else None
    return {"floor_ms": floor, "rest_ms": rest, "over_floor_ms": over}


def job_comparisons(rows: Iterable[Mapping], job_field: str = "job_id") -> dict[object, list[Comparison]]:
    """:func:`comparisons` per job of flat per-mode rows (``mode``, ``ms_per_step``, ``correct``: 1.0 / 0.0 /
    None), keyed by ``row[job_field]``, jobs in the rows' order."""
    by_job: dict[object, tuple[dict, dict]] = {}
    for r in rows:
        ms, ok = by_job.setdefault(r[job_field], ({}, {}))
        mode = r.get("mode")
        if mode is None:
            continue
        ms[mode] = r.get("ms_per_step")
        c = r.get("correct")
        ok[mode] = None if c is None else bool(c >= 0.5 if isinstance(c, (int, float)) else c)
    return {job: comparisons(ms, ok) for job, (ms, ok) in by_job.items()}
