"""Small SVG plots for the compare report: per kernel and GPU type, each shape's baseline and current median per
implementation (hollow = baseline, filled = current) on a log axis.  Plain SVG written here: no browser, no
download, the same bytes on every machine."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from orchestrator.store.query.compare_queries import plot_groups

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")
ROW_H, LEFT, TOP, PLOT_W, LEGEND_W = 22, 150, 34, 360, 150


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "series"


def _label(row: Mapping[str, Any]) -> str:
    shape = row["shape"]
    shape = "x".join(map(str, shape)) if isinstance(shape, list) else str(shape)
    return f"{shape} {row['dtype']}"


def svg(kernel: str, gpu_type: str, rows: Sequence[Mapping[str, Any]], unit: str) -> str:
    """One plot as SVG text."""
    labels = list(dict.fromkeys(_label(r) for r in rows))
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    colour = {impl: PALETTE[i % len(PALETTE)] for i, impl in enumerate(impls)}
    values = [v for r in rows for v in (r.get("baseline_median"), r.get("current_median")) if v and v > 0]
    lo, hi = math.log10(min(values)), math.log10(max(values))
    if hi - lo < 0.2:
        lo, hi = lo - 0.1, hi + 0.1
    lo, hi = math.floor(lo * 10) / 10, math.ceil(hi * 10) / 10
    height = TOP + ROW_H * len(labels) + 40
    width = LEFT + PLOT_W + LEGEND_W

    def x(v: float) -> float:
        return LEFT + (math.log10(v) - lo) / (hi - lo) * PLOT_W

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(kernel)} on {escape(gpu_type)}: baseline (hollow) and current (filled) per shape</title>",
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{LEFT}" y="16" font-size="13" font-weight="bold">{escape(kernel)} · {escape(gpu_type)}</text>',
    ]
    bottom = TOP + ROW_H * len(labels)
    for decade in range(math.floor(lo), math.ceil(hi) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**decade
            if lo <= math.log10(v) <= hi:
                xv = x(v)
                out.append(f'<line x1="{xv:.1f}" y1="{TOP - 6}" x2="{xv:.1f}" y2="{bottom}" stroke="#ddd"/>')
                out.append(f'<text x="{xv:.1f}" y="{bottom + 14}" text-anchor="middle">{v:g}</text>')
    out.append(f'<text x="{LEFT + PLOT_W / 2}" y="{bottom + 30}" text-anchor="middle">{escape(unit)} (log)</text>')
    for i, label in enumerate(labels):
        y = TOP + ROW_H * i + ROW_H / 2
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + PLOT_W}" y2="{y:.1f}" stroke="#f2f2f2"/>')
    for r in rows:
        y = TOP + ROW_H * labels.index(_label(r)) + ROW_H / 2 + (impls.index(r["impl"]) - (len(impls) - 1) / 2) * 3
        c = colour[r["impl"]]
        b, n = r.get("baseline_median"), r.get("current_median")
        if b and n:
            out.append(f'<line x1="{x(b):.1f}" y1="{y:.1f}" x2="{x(n):.1f}" y2="{y:.1f}" stroke="{c}"/>')
        tip = f"{r['impl']} {_label(r)}: baseline {b if b else '–'}, current {n if n else '–'} {unit}"
        if b:
            out.append(
                f'<circle cx="{x(b):.1f}" cy="{y:.1f}" r="4" fill="white" stroke="{c}" stroke-width="1.5">'
                f"<title>{escape(tip)}</title></circle>"
            )
        if n:
            out.append(f'<circle cx="{x(n):.1f}" cy="{y:.1f}" r="4" fill="{c}"><title>{escape(tip)}</title></circle>')
    lx = LEFT + PLOT_W + 16
    for i, impl in enumerate(impls):
        out.append(f'<circle cx="{lx}" cy="{TOP + 14 * i}" r="4" fill="{colour[impl]}"/>')
        out.append(f'<text x="{lx + 8}" y="{TOP + 14 * i + 4}">{escape(impl)}</text>')
    ly = TOP + 14 * len(impls) + 8
    out.append(f'<circle cx="{lx}" cy="{ly}" r="4" fill="white" stroke="#333"/>')
    out.append(f'<text x="{lx + 8}" y="{ly + 4}">baseline</text>')
    out.append(f'<circle cx="{lx}" cy="{ly + 14}" r="4" fill="#333"/>')
    out.append(f'<text x="{lx + 8}" y="{ly + 18}">current</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_plots(rows: Sequence[Mapping[str, Any]], unit: str, folder: Path, prefix: str) -> list[tuple[str, Path]]:
    """Write one SVG per (kernel, GPU type) into ``folder``; [(title, path)]."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for (kernel, gpu_type), group in plot_groups(rows).items():
        path = folder / f"{prefix}-{_slug(kernel)}-{_slug(gpu_type)}.svg"
        path.write_text(svg(kernel, gpu_type, group, unit), encoding="utf-8")
        written.append((f"{kernel} · {gpu_type}", path))
    return written
