"""ISA: what each kernel compiled to per target architecture (AMD gfx*, NVIDIA sm_*) over commits — registers
(VGPRs on AMD, registers per thread on NVIDIA), spills, occupancy (AMD waves per SIMD) and the narrowest global
load — from the ``isa`` jobs (`python -m orchestrator +sweep=isa`, workers/jobs/isa.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.view import Figure, PageView, short
from orchestrator.store.query import result_queries

from ._common import (
    ALL,
    COMPARE_COLUMN,
    MARKED_COLUMN,
    add_compare_runs,
    choose,
    choose_marked,
    compare_link,
    make_filter,
    mark_hover,
    marked_filter,
    marked_left_out,
    marked_note,
)

FIGURE_ID = "isa-figure"
PANELS = {  # metric(s) -> panel title; the first metric a target reports is drawn
    ("vgprs", "registers"): "registers (VGPRs on AMD, per thread on NVIDIA)",
    ("vgpr_spills", "spill_store_bytes"): "spills (VGPRs on AMD, store bytes on NVIDIA)",
    ("occupancy_waves",): "occupancy (waves per SIMD, AMD)",
    ("load_min_bits",): "narrowest global load (bits)",
}
COLUMNS = [
    "kernel",
    "shape_key",
    "dtype",
    "arch",
    "vgprs",
    "registers",
    "vgpr_spills",
    "spill_store_bytes",
    "occupancy_waves",
    "load_min_bits",
    "loads_b128",
    "instructions",
    "commit",
    MARKED_COLUMN,
    "run_id",
    COMPARE_COLUMN,
    "measured_at",
    "job_key",
]


def build(src, params: Mapping[str, str]) -> PageView:
    marked = choose_marked(params)
    everything = result_queries.isa_history(src, include_marked=marked == "show")
    kernels = sorted({r["kernel"] for r in everything})
    kernel = choose(params, "kernel", kernels)
    archs = sorted({r["arch"] for r in everything if r["kernel"] == kernel})
    arch = choose(params, "arch", archs, ALL)
    view = PageView(page="isa", title="ISA", params={"kernel": kernel, "arch": arch, "marked": marked})
    view.filters = [
        make_filter("kernel", "kernel", kernels, kernel),
        make_filter("arch", "target", archs, arch, with_all=True),
        marked_filter(marked),
    ]
    rows = [r for r in everything if r["kernel"] == kernel and (not arch or r["arch"] == arch)]
    add_compare_runs(src, rows)
    table = view.add_table(
        "isa",
        "compiled code per shape and target (newest first; compare: the run against the previous run of its sweep)",
        COLUMNS,
        rows,
        links={COMPARE_COLUMN: compare_link("kernel={kernel}")},
    )
    if not rows:
        view.notes.append(
            "No isa result in the store: `python -m orchestrator +sweep=isa` compiles every kernel for the AMD and "
            "NVIDIA targets without a GPU, or import results/isa/." + marked_left_out(marked)
        )
        return view
    view.notes.append(
        "Per target and commit (in the order measured; a run from an uncommitted tree is marked and left out "
        "unless shown), the median over the kernel's shapes; the table has every shape. Registers and spills come "
        "from the compiler's own report (AMD: VGPRs and occupancy; NVIDIA: registers per thread and spill bytes)."
    )
    note = marked_note(rows)
    if note:
        view.notes.append(note)
    view.figures.append(Figure(FIGURE_ID, _figure(table.rows, kernel)))
    return view


def _figure(rows: list[dict], kernel: str) -> go.Figure:
    fig = make_subplots(rows=2, cols=2, subplot_titles=list(PANELS.values()), vertical_spacing=0.18)
    by_arch: dict[str, dict[tuple, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by_arch[r["arch"]][(r["commit"], r["run_id"], r["measured_at"], r["marked"])].append(r)
    # the x axis is the commits in the order they were measured (a category each), not clock time
    first_seen: dict[str, object] = {}
    for r in sorted(rows, key=lambda r: r["measured_at"]):
        first_seen.setdefault(r["commit"] or "unknown", r["measured_at"])
    order = {c: i for i, c in enumerate(first_seen)}

    def commit_label(commit: str | None) -> str:
        return f"{order[commit or 'unknown']:03d} {short(commit)}"

    for arch, groups in sorted(by_arch.items()):
        points = sorted(groups.items(), key=lambda kv: kv[0][2])
        for i, metrics in enumerate(PANELS):
            xs, ys, hover = [], [], []
            for (commit, run_id, at, marked), rs in points:
                metric = next((m for m in metrics if any(r[m] is not None for r in rs)), None)
                if metric is None:
                    continue
                values = sorted(r[metric] for r in rs if r[metric] is not None)
                xs.append(commit_label(commit))
                median = values[len(values) // 2]
                ys.append(median)
                where = f"{short(commit)} · run {run_id} · {at}{mark_hover(marked)}"
                hover.append(f"{arch} · {metric} {median:g}<br>{where}")
            if xs:
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=ys,
                        mode="lines+markers",
                        name=arch,
                        legendgroup=arch,
                        showlegend=not any(t.legendgroup == arch for t in fig.data),
                        hovertext=hover,
                        hoverinfo="text",
                    ),
                    row=i // 2 + 1,
                    col=i % 2 + 1,
                )
    fig.update_layout(
        height=620,
        title=f"{kernel}: compiled code per target over commits",
        margin={"l": 10, "r": 10, "t": 70, "b": 40},
        legend={"orientation": "h", "y": -0.12},
    )
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=sorted({t for tr in fig.data for t in tr.x}))
    return fig
