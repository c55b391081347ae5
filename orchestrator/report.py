"""What the user sees at the end of a run: the summary table (rich), and the same as Markdown for docs/perf/."""
from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.table import Table

COLUMNS = ("kernel", "shape", "dtype", "impl", "median µs", "IQR µs", "graph µs", "GB/s", "% ceiling",
           "vs eager", "vs compile", "correct", "status")


def _fmt(v, spec: str = ".1f", suffix: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:{spec}}{suffix}"
    return str(v)


def _cells(r: dict) -> list[str]:
    shape = "x".join(str(s) for s in r["shape"]) if isinstance(r.get("shape"), list) else str(r.get("shape"))
    correct = {True: "yes", False: "NO", None: "–"}[r.get("correct")]
    vs_compile = _fmt(r.get("speedup_vs_compile"), ".2f", "x")
    if r.get("compile_baseline") and r.get("speedup_vs_compile") is not None:
        vs_compile += f" ({r['compile_baseline']})"
    return [r["kernel"], shape, r["dtype"], r["impl"], _fmt(r.get("median_us"), ".2f"), _fmt(r.get("iqr_us"), ".2f"),
            _fmt(r.get("graph_time_us"), ".2f"), _fmt(r.get("gbs"), ".0f"), _fmt(r.get("pct_of_ceiling"), ".0f", "%"),
            _fmt(r.get("speedup_vs_eager"), ".2f", "x"), vs_compile, correct, r.get("status") or "–"]


def shown_rows(rows: Iterable[dict]) -> list[dict]:
    """Micro rows (timings, with their correctness verdict); a correctness row only where nothing was timed."""
    rows = list(rows)
    timed = {(r["kernel"], str(r["shape"]), r["dtype"], r["impl"], r.get("hardware_key")) for r in rows
             if r.get("kind") == "micro"}
    return [r for r in rows if r.get("kind") == "micro"
            or (r["kernel"], str(r["shape"]), r["dtype"], r["impl"], r.get("hardware_key")) not in timed]


def summary_table(rows: Iterable[dict], title: str) -> Table:
    t = Table(title=title, show_lines=False)
    for c in COLUMNS:
        t.add_column(c, justify="right" if c not in ("kernel", "impl", "dtype", "shape", "status") else "left")
    for r in shown_rows(rows):
        t.add_row(*_cells(r))
    return t


def markdown(rows: Iterable[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in shown_rows(rows):
        lines.append("| " + " | ".join(_cells(r)) + " |")
    return "\n".join(lines) + "\n"


E2E_COLUMNS = ("model", "frames x H x W", "dtype", "mode", "ms/step", "vs eager", "warm-up s", "peak GB",
               "max abs vs eager", "cos sim", "status")


def e2e_table(rows: Iterable[dict], title: str) -> Table:
    t = Table(title=title)
    for c in E2E_COLUMNS:
        t.add_column(c, justify="left" if c in ("model", "mode", "dtype", "status", "frames x H x W") else "right")
    for r in rows:
        t.add_row(r["model"] or "?", "x".join(str(s) for s in r["shape"]), r["dtype"], r["mode"],
                  _fmt(r.get("ms_per_step"), ".1f"), _fmt(r.get("speedup_vs_eager"), ".2f", "x"),
                  _fmt(r.get("warmup_s"), ".1f"), _fmt(r.get("peak_mem_gb"), ".2f"),
                  _fmt(r.get("max_abs_vs_eager"), ".3g"), _fmt(r.get("cos_sim_vs_eager"), ".6f"),
                  ("not run" if r.get("ms_per_step") is None and r.get("status") == "ok" else r.get("status")) or "–")
    return t


def print_summary(console: Console, rows: list[dict], title: str, e2e_rows: list[dict] | None = None) -> None:
    if rows:
        console.print(summary_table(rows, title))
    if e2e_rows:
        console.print(e2e_table(e2e_rows, f"{title} · end to end"))
    if not rows and not e2e_rows:
        console.print(f"{title}: no measurements in this run")
