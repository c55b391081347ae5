"""Bandwidth: bytes moved against time per call for one kernel, each implementation a trace, against the line of
each device's measured copy bandwidth (roofline-style: a point on the line runs at the copy ceiling).  Runs marked by
their conditions are left out unless the "marked runs" filter shows them; a point of one says so."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import plotly.graph_objects as go

from dashboard import metrics
from dashboard.colors import impl_color
from dashboard.view import Figure, PageView, short
from orchestrator.store.query import view_queries

from ._common import (
    ALL,
    COMPARE_COLUMN,
    MARKED_COLUMN,
    SERIES_COLUMNS,
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

COLUMNS = [
    *SERIES_COLUMNS,
    "time_us",
    "gbs",
    "mbytes",
    "copy_bandwidth_gbs",
    "pct_of_ceiling",
    "correct",
    "run_id",
    COMPARE_COLUMN,
    "commit",
    MARKED_COLUMN,
    "measured_at",
]
FIGURE_ID = "bandwidth-figure"


def build(src, params: Mapping[str, str]) -> PageView:
    choices = view_queries.micro_choices(src)
    kernel = choose(params, "kernel", choices["kernels"])
    if kernel == ALL and choices["kernels"]:
        kernel = choices["kernels"][0]
    gpu = choose(params, "gpu_type", choices["gpu_types"], ALL)
    dtype = choose(params, "dtype", choices["dtypes_of"].get(kernel, []), ALL)
    reading = choose(params, "reading", list(metrics.BANDWIDTH_OF), metrics.DEFAULT_READING)
    marked = choose_marked(params)
    view = PageView(
        page="bandwidth",
        title="Bandwidth",
        params={"kernel": kernel, "gpu_type": gpu, "dtype": dtype, "reading": reading, "marked": marked},
    )
    view.filters = [
        make_filter("kernel", "kernel", choices["kernels"], kernel),
        make_filter("gpu_type", "GPU type", choices["gpu_types"], gpu, with_all=True),
        make_filter("dtype", "dtype", choices["dtypes_of"].get(kernel, []), dtype, with_all=True),
        make_filter("reading", "reading", list(metrics.BANDWIDTH_OF), reading, labels=metrics.READINGS),
        marked_filter(marked),
    ]
    gbs_metric = metrics.BANDWIDTH_OF[reading]
    records = []
    for r in view_queries.newest_micro_results(src, kernel, include_marked=marked == "show") if kernel else []:
        if (gpu and r["gpu_type"] != gpu) or (dtype and r["dtype"] != dtype):
            continue
        t, gbs, bw = r[reading], r[gbs_metric], r["copy_bandwidth_gbs"]
        if t is None or gbs is None:
            continue
        records.append(
            {
                **r,
                "shape": r["shape_key"],
                "reading": reading,
                "time_us": t,
                "gbs": gbs,
                "mbytes": gbs * t / 1e3,
                "pct_of_ceiling": gbs / bw * 100 if bw else None,
            }
        )
    ceilings = [c for c in view_queries.device_ceilings(src) if not gpu or c["gpu_type"] == gpu]
    add_compare_runs(src, records)
    table = view.add_table(
        "points",
        "newest result per shape, dtype, implementation and device (compare: its run against the previous run of "
        "its sweep)",
        COLUMNS,
        records,
        links={COMPARE_COLUMN: compare_link("metric={reading}", "kernel={kernel}", "gpu={gpu_type}")},
    )
    if not records:
        view.notes.append(f"No {reading} measurement of {kernel} matches these filters.{marked_left_out(marked)}")
        return view
    view.notes.append(
        "Bytes = the kernel's byte model (the fewest bytes the op must move); the lines are each "
        "device's measured copy bandwidth (device-to-device copy), not the datasheet."
    )
    note = marked_note(records)
    if note:
        view.notes.append(note)
    view.figures.append(Figure(FIGURE_ID, _figure(table.rows, ceilings, kernel)))
    return view


def _figure(rows: list[dict], ceilings: list[dict], kernel: str) -> go.Figure:
    fig = go.Figure()
    by_impl: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_impl[r["impl"]].append(r)
    for impl, pts in sorted(by_impl.items()):
        fig.add_trace(
            go.Scatter(
                x=[r["time_us"] for r in pts],
                y=[r["mbytes"] for r in pts],
                mode="markers",
                name=impl,
                marker={
                    "size": 10,
                    "color": impl_color(impl),
                    "symbol": ["x" if r["correct"] is False else "circle" for r in pts],
                },
                hovertext=[
                    f"{impl} · {r['shape']} · {r['dtype']} · {r['gpu_type']}<br>{r['time_us']} µs · "
                    f"{r['gbs']} GB/s ({r['pct_of_ceiling']} % of copy)<br>run {r['run_id']} · "
                    f"{short(r['commit'])}{mark_hover(r['marked'])}"
                    for r in pts
                ],
                hoverinfo="text",
            )
        )
    t_lo = min(r["time_us"] for r in rows) / 2
    t_hi = max(r["time_us"] for r in rows) * 2
    for c in ceilings:
        bw = c["copy_bandwidth_gbs"]
        fig.add_trace(
            go.Scatter(
                x=[t_lo, t_hi],
                y=[bw * t_lo / 1e3, bw * t_hi / 1e3],
                mode="lines",
                line={"dash": "dash", "color": "black"},
                name=f"copy ceiling {c['gpu_type']} {bw:.0f} GB/s",
            )
        )
    fig.update_layout(
        height=480,
        xaxis={"type": "log", "title": "time per call (µs)"},
        yaxis={"type": "log", "title": "bytes moved (MB, byte model)"},
        title=f"{kernel}: bytes moved vs time",
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )
    return fig
