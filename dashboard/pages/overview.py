"""Overview: speed-up of one implementation against eager and against the faster torch.compile, kernel x GPU
type, from the newest run of each; a reading selector; cells that failed correctness are marked, not coloured."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

import plotly.graph_objects as go

from dashboard import metrics
from dashboard.view import Figure, PageView, short
from orchestrator.store import queries

from ._common import choose, make_filter

COLUMNS = [
    "kernel",
    "gpu_type",
    "impl",
    "reading",
    "speedup_vs_eager",
    "speedup_vs_compile",
    "compile_baseline",
    "correct",
    "n_jobs",
    "min_speedup_vs_eager",
    "max_speedup_vs_eager",
    "run_id",
    "commit",
    "measured_at",
]
HEATMAP_ID = "overview-heatmap"


def trend_link(kernel: str, gpu_type: str, impl: str, reading: str) -> str:
    return "/trends?" + urlencode({"kernel": kernel, "gpu_type": gpu_type, "impl": impl, "reading": reading})


def build(src, params: Mapping[str, str]) -> PageView:
    choices = queries.micro_choices(src)
    reading = choose(params, "reading", list(metrics.READINGS), metrics.DEFAULT_READING)
    impls = [i for i in choices["impls"] if i != metrics.BASELINE_IMPL]
    impl = choose(params, "impl", impls, metrics.DEFAULT_IMPL if metrics.DEFAULT_IMPL in impls else None)
    cells = queries.speedup_matrix(src, reading, impl) if impl else []
    for c in cells:
        if c["gpu_type"] == "cpu" and impl == "triton":  # timed in Triton's interpreter: a ratio no one would get
            c.update(
                {
                    k: None
                    for k in ("speedup_vs_eager", "speedup_vs_compile", "min_speedup_vs_eager", "max_speedup_vs_eager")
                }
            )
    view = PageView(page="overview", title="Overview", params={"reading": reading, "impl": impl})
    view.filters = [
        make_filter("reading", "reading", list(metrics.READINGS), reading, labels=metrics.READINGS),
        make_filter("impl", "implementation", impls, impl),
    ]
    table = view.add_table("cells", f"{impl} speed-up per kernel and GPU type (newest run of each)", COLUMNS, cells)
    if not cells:
        view.notes.append(f"No {impl or 'implementation'} measurement with the reading {reading} yet.")
        return view
    view.notes.append(
        "Each cell: geometric mean over the shapes and dtypes of the newest run that measured the "
        "kernel on that GPU type; ✗ = failed correctness (no speed-up shown); on a CPU Triton runs in its "
        "interpreter, so its cells say so instead. Click a cell for its "
        "trend."
    )
    tags = queries.rehearsal_gpu_types(src)
    shown = {r["gpu_type"] for r in table.rows} & set(tags)
    if shown:
        view.notes.append(
            "Rehearsal: "
            + ", ".join(f"{g} is a GPU-type tag of a rehearsal node, really {tags[g]}" for g in sorted(shown))
            + " (node join --label); its column is not hardware of that type."
        )
    view.figures.append(Figure(HEATMAP_ID, _heatmaps(table.rows, impl, reading, tags)))
    return view


def _heatmaps(rows: list[dict], impl: str, reading: str, tags: Mapping[str, str] | None = None) -> go.Figure:
    from plotly.subplots import make_subplots

    kernels = sorted({r["kernel"] for r in rows})
    gpus = sorted({r["gpu_type"] for r in rows})
    by = {(r["kernel"], r["gpu_type"]): r for r in rows}
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=(f"{impl} vs eager", f"{impl} vs the faster torch.compile"),
    )
    for col, key in ((1, "speedup_vs_eager"), (2, "speedup_vs_compile")):
        z, text, hover = [], [], []
        for k in kernels:
            zr, tr, hr = [], [], []
            for g in gpus:
                r = by.get((k, g))
                value = r[key] if r else None
                zr.append(value)
                if r is None:
                    tr.append("")
                elif g == "cpu" and impl == "triton":  # no speed-up on a CPU (build()): Triton's interpreter
                    tr.append("interpreted")
                elif r["correct"] is False:
                    tr.append("✗ incorrect")
                else:
                    tr.append("—" if value is None else f"{value:.2f}×")
                hr.append(
                    ""
                    if r is None
                    else f"{k} on {g}<br>{tr[-1]}<br>run {r['run_id']} · {short(r['commit'])}"
                    f"<br>{r['measured_at']} · {r['n_jobs']} shape/dtype jobs"
                )
            z.append(zr)
            text.append(tr)
            hover.append(hr)
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=gpus,
                y=kernels,
                text=text,
                texttemplate="%{text}",
                hovertext=hover,
                hoverinfo="text",
                colorscale="RdBu",
                zmid=1.0,
                zmin=0.0,
                zmax=2.0,
                coloraxis=None,
                showscale=(col == 2),
                name=key,
                colorbar={"title": {"text": "speed-up ×"}},
            ),
            row=1,
            col=col,
        )
    if tags and set(tags) & set(gpus):  # a rehearsal tag's column says what it really is; clicks keep the tag
        fig.update_xaxes(
            tickvals=gpus, ticktext=[f"{g}<br>(rehearsal, really {tags[g]})" if g in tags else g for g in gpus]
        )
    fig.update_layout(
        height=max(300, 40 * len(kernels) + 140),
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        title=f"speed-up, reading: {metrics.READINGS[reading]}",
    )
    return fig
