"""The end-to-end part of a run's summary beyond its per-mode table: each injected mode beside the best
torch.compile anchor of its own kind (CUDA graphs against CUDA graphs, plain calls against plain calls), and the
lines under the tables (modes not run and why, what the device floor is).  The anchors come from
orchestrator.store.query.result_queries.e2e_comparisons, as on the dashboard's end-to-end page."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

ANCHOR_COLUMNS = (
    "shape",
    "kind",
    "anchor (fastest torch.compile)",
    "anchor ms/step",
    "injected mode",
    "ms/step",
    "speed-up",
)
FLOOR_NOTE = (
    "floor ms: the device's GEMM + attention time per step (the profile's gemm and attention classes), work the "
    "injected norm, modulation, RoPE and activation kernels do not replace; rest ms: every other kernel's device "
    "time per step; over floor ms: ms/step - floor (other kernels, and the device idle waiting for the host)"
)
ANCHOR_NOTE = (
    "anchors: each injected mode against the fastest torch.compile mode of its own kind that ran and passed "
    "correctness: CUDA graphs (+graph, compile-ro, compile-max-cg) against CUDA graphs, plain calls against plain calls"
)


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def anchor_rows(e2e_rows: Iterable[dict]) -> list[list[str]]:
    """The anchor table's cells: per job, per kind, each injected mode beside its kind's anchor."""
    from orchestrator.store.query import result_queries

    rows = list(e2e_rows)
    shapes = {r["job_id"]: "x".join(str(s) for s in r["shape"]) for r in rows}
    out = []
    for c in result_queries.e2e_comparisons(rows):
        out.append(
            [
                shapes[c["job_id"]],
                c["kind_label"],
                c["anchor"] or "none ran",
                _ms(c["anchor_ms"]),
                c["mode"] or "none ran",
                _ms(c["ms"]),
                "–" if c["speedup"] is None else f"{c['speedup']:.3f}x",
            ]
        )
    return out


def _table(columns: tuple[str, ...], cells: list[list[str]], title: str, left: tuple[str, ...]) -> Table | None:
    """A terminal table of ``cells`` (None when there are none): the ``left`` columns left-aligned, numbers right."""
    if not cells:
        return None
    t = Table(title=title)
    for c in columns:
        t.add_column(c, justify="left" if c in left else "right")
    for row in cells:
        t.add_row(*row)
    return t


def _markdown(columns: tuple[str, ...], cells: list[list[str]]) -> str:
    """A Markdown table of ``cells`` ("" when there are none)."""
    if not cells:
        return ""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + "\n"


def anchor_table(e2e_rows: Iterable[dict], title: str) -> Table | None:
    left = tuple(c for c in ANCHOR_COLUMNS if "ms" not in c and c != "speed-up")
    return _table(ANCHOR_COLUMNS, anchor_rows(e2e_rows), title, left)


def anchor_markdown(e2e_rows: Iterable[dict]) -> str:
    return _markdown(ANCHOR_COLUMNS, anchor_rows(e2e_rows))


def e2e_notes(e2e_rows: Iterable[dict]) -> list[str]:
    """Lines under the e2e tables: each mode not run with why, and what the floor and the anchors are."""
    rows = list(e2e_rows)
    why: dict[str, set[str]] = {}
    for r in rows:
        if r.get("ms_per_step") is None and r.get("not_run"):
            why.setdefault(r["mode"], set()).add(r["not_run"])
    out = [f"not run: {mode}: {'; '.join(sorted(reasons))}" for mode, reasons in why.items()]
    if any(r.get("floor_ms") is not None for r in rows):
        out.append(FLOOR_NOTE)
    if anchor_rows(rows):
        out.append(ANCHOR_NOTE)
    return out


RECONCILE_COLUMNS = (
    "injected mode",
    "base",
    "setting",
    "base ms",
    "ms",
    "measured",
    "predicted",
    "predicted ms",
    "ours ms",
    "lost ms",
    "kernels over micro baseline",
)
RECONCILE_NOTE = (
    "predicted: the speed-up over the base mode (the same mode without the kernels) that the kernels' micro "
    "speed-ups on this device predict from the mode's profile (Amdahl: base ms - ours ms x micro speed-up + ours "
    "ms); lost ms = ms - predicted ms: what the kernel wins lose in launches, graph breaks or layout copies "
    "(orchestrator/stats/e2e_amdahl.py)"
)


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}x"


def reconciliation_rows(recs: Iterable[dict]) -> list[list[str]]:
    """The reconciliation table's cells (result_queries.e2e_reconciliation rows)."""
    from orchestrator.stats.e2e_amdahl import speedup_text

    return [
        [
            r["mode"],
            r["base"],
            r.get("setting") or "?",
            _ms(r["base_ms"]),
            _ms(r["ms"]),
            _x(r["measured_speedup"]),
            _x(r["predicted_speedup"]),
            _ms(r["predicted_ms"]),
            _ms(r["ours_ms"]),
            _ms(r["lost_ms"]),
            f"{r['micro_baseline']}: {speedup_text(r['kernel_speedups'], r['unmeasured'])}",
        ]
        for r in recs
    ]


def reconciliation_table(recs: Iterable[dict], title: str) -> Table | None:
    cells = reconciliation_rows(recs)
    if not cells:
        return None
    t = Table(title=title)
    for c in RECONCILE_COLUMNS:
        t.add_column(
            c, justify="left" if c in ("setting", "injected mode", "base") or c.startswith("kernels") else "right"
        )
    for row in cells:
        t.add_row(*row)
    return t


def reconciliation_markdown(recs: Iterable[dict]) -> str:
    cells = reconciliation_rows(recs)
    if not cells:
        return ""
    lines = ["| " + " | ".join(RECONCILE_COLUMNS) + " |", "|" + "---|" * len(RECONCILE_COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + f"\n\n- {RECONCILE_NOTE}\n"
