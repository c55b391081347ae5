"""End to end, per model (LTX-Video, FLUX.1, SD3.5, a Llama-family decoder): ms per step (a decoder: per decode
step, with its tokens/s) per mode per device, the output's error against eager and the tolerance, peak memory, SM
clock and power where recorded, the device time per step by kernel class (stacked, idle on top) and the device floor
(GEMM + attention), each injected mode beside the fastest torch.compile mode of its own kind (CUDA graphs against
CUDA graphs, plain calls against plain calls: result_queries.e2e_comparisons), the Amdahl reconciliation of its
kernels' micro wins (result_queries.e2e_reconciliation), and ms per step over time, one series per setting and
mode (the setting in the legend: e2e_setting).  Runs marked by their conditions are left out unless the "marked runs"
filter shows them; a job of one says so."""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard import metrics
from dashboard.colors import class_color, mode_color
from dashboard.view import Figure, PageView, short
from orchestrator.store.query import result_queries, view_queries

from ._common import (
    ALL,
    COMPARE_COLUMN,
    MARKED_COLUMN,
    add_compare_runs,
    choose,
    choose_marked,
    compare_link,
    make_filter,
    mark_suffix,
    marked_filter,
    marked_left_out,
    marked_note,
)

COLUMNS = (
    ["job", "run_id", COMPARE_COLUMN, "commit", MARKED_COLUMN, "gpu_type", "shape", "dtype", "mode", "status"]
    + list(metrics.E2E_SHOWN)
    + ["tolerance", "speedup_vs_eager", "gpu_busy_ms", "floor_ms", "rest_ms", "over_floor_ms"]
    + [f"class_{c}_ms" for c in metrics.KERNEL_CLASSES]
    + [f"{metrics.IDLE}_ms", "measured_at", "job_key"]
)
ANCHOR_COLUMNS = ["job", "kind_label", "anchor", "anchor_ms", "mode", "ms", "speedup"]
RECONCILE_COLUMNS = [
    "job",
    "mode",
    "base",
    "base_ms",
    "ms",
    "measured_speedup",
    "predicted_speedup",
    "predicted_ms",
    "ours_ms",
    "replaced_ms",
    "lost_ms",
    "micro_baseline",
    "kernels",
]
TITLES = {"ltx-video": "LTX-Video", "flux": "FLUX.1", "sd3": "SD3.5", "llama": "Llama-family decoder"}
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
FIGURE_ID = "e2e-figure"
TREND_ID = "e2e-trend"
MAX_JOBS = 30


def _job_label(r: dict) -> str:
    setting = r.get("setting") or r["shape_key"]
    when = f"{r['measured_at']:%Y-%m-%d %H:%M}"
    return f"run {r['run_id']} · {r['gpu_type'] or '?'} · {setting} · {when}{mark_suffix(r.get('marked'))}"


def build(src, params: Mapping[str, str]) -> PageView:
    marked = choose_marked(params)
    all_rows = view_queries.e2e_view(src, limit=MAX_JOBS, include_marked=marked == "show")
    models = list(dict.fromkeys(r["family"] for r in all_rows))  # newest job's model first
    model = choose(params, "model", models, models[0] if models else ALL)
    gpus = sorted({r["gpu_type"] for r in all_rows if r["gpu_type"]})
    gpu = choose(params, "gpu_type", gpus, ALL)
    rows = [r for r in all_rows if (not gpu or r["gpu_type"] == gpu) and (not model or r["family"] == model)]
    jobs = list(dict.fromkeys(str(r["job_id"]) for r in rows))
    labels = {str(r["job_id"]): _job_label(r) for r in rows}
    job = choose(params, "job", jobs, jobs[0] if jobs else ALL)
    view = PageView(
        page="e2e", title="End to end", params={"model": model, "gpu_type": gpu, "job": job, "marked": marked}
    )
    view.filters = [
        make_filter("model", "model", models, model, with_all=True, labels={m: TITLES.get(m, m) for m in models}),
        make_filter("gpu_type", "GPU type", gpus, gpu, with_all=True),
        make_filter("job", "job", jobs, job, with_all=True, labels=labels),
        marked_filter(marked),
    ]
    shown = [r for r in rows if not job or str(r["job_id"]) == job]
    records = []
    for r in shown:
        m = r["metrics"]
        eager = next(
            (x["metrics"].get("ms_per_step") for x in shown if x["job_id"] == r["job_id"] and x["mode"] == "eager"),
            None,
        )
        rec = {
            **r,
            "job": labels[str(r["job_id"])],
            "shape": r["shape_key"],
            **{k: m.get(k) for k in metrics.E2E_SHOWN},
            "speedup_vs_eager": eager / m["ms_per_step"] if eager and m.get("ms_per_step") else None,
        }
        for c in metrics.KERNEL_CLASSES:
            rec[f"class_{c}_ms"] = r["profile_classes"].get(c)
        busy, ms = r["gpu_busy_ms"], m.get("ms_per_step")
        rec[f"{metrics.IDLE}_ms"] = max(ms - busy, 0.0) if busy is not None and ms is not None else None
        records.append(rec)
    add_compare_runs(src, records)
    table = view.add_table(
        "modes",
        "one row per job and mode (compare: its run against the previous run of its sweep, ms per step)",
        COLUMNS,
        records,
        links={COMPARE_COLUMN: compare_link("metric=ms_per_step", "gpu={gpu_type}")},
    )
    if not records:
        view.notes.append(
            "No end-to-end job in the store: python -m orchestrator +sweep=ltx_e2e (or flux_e2e, sd3_e2e, llm_e2e)."
            + marked_left_out(marked)
        )
        return view
    note = marked_note(shown)
    if note:
        view.notes.append(note)
    anchors = [{**c, "job": labels[str(c["job_id"])]} for c in result_queries.e2e_comparisons(shown)]
    view.add_table(
        "anchors",
        "each injected mode against the fastest torch.compile mode of its own kind (CUDA graphs: +graph, compile-ro, "
        "compile-max-cg; plain calls), speed-up = anchor ms / ms",
        ANCHOR_COLUMNS,
        anchors,
    )
    recon = result_queries.e2e_reconciliation(src, shown)
    for r in recon:
        r["job"] = labels[str(r["job_id"])]
    view.add_table(
        "reconciliation",
        "each injected mode's speed-up over its base (the same mode without the kernels): predicted from its "
        "kernels' micro speed-ups on this device and its profile (Amdahl), beside the measured one; lost ms = ms − "
        "predicted ms (launches, graph breaks, layout copies)",
        RECONCILE_COLUMNS,
        recon,
    )
    view.notes.append(
        "Error = rel_err_vs_eager: ||latents − eager's|| / ||eager's − the initial noise|| (a decoder: ||logits − "
        "eager's|| / ||eager's||; a mode past the tolerance fails the job). A decoder's ms per step is a decode step "
        "(one token per sequence of the batch). Idle = ms per step − the profiled device-busy time. Host ms per step "
        "= the host's time to issue a step with the device drained before it (the dashes on the first panel): above "
        "the device's time, plain calls of that mode are host-bound. Floor = the device's GEMM + attention ms per "
        "step (work the injected norm, modulation, RoPE and activation kernels do not replace); over floor = ms per "
        "step − floor."
    )
    view.figures.append(Figure(FIGURE_ID, _figure(table.rows, TITLES.get(shown[0]["family"], shown[0]["model"]))))
    view.figures.append(Figure(TREND_ID, _trend(rows)))
    return view


def _trend(rows: list[dict]) -> go.Figure:
    """ms per step over time, one line per setting and mode (a setting: model, shape, dtype, steps or tokens;
    e2e_setting), over every job shown in the job filter's list (newest 30): the colour says the mode, the dash the
    setting, the legend both."""
    fig = go.Figure()
    series: dict[tuple[str, str], list[dict]] = {}
    for r in sorted(rows, key=lambda r: r["measured_at"]):
        if r["metrics"].get("ms_per_step") is not None:
            series.setdefault((r.get("setting") or r["shape_key"], r["mode"]), []).append(r)
    settings = list(dict.fromkeys(setting for setting, _ in series))
    for (setting, mode), pts in series.items():
        dash = DASHES[settings.index(setting) % len(DASHES)]
        fig.add_trace(
            go.Scatter(
                x=[r["measured_at"] for r in pts],
                y=[r["metrics"]["ms_per_step"] for r in pts],
                mode="lines+markers",
                name=f"{setting} · {mode}",
                legendgroup=setting,
                line={"color": mode_color(mode), "dash": dash},
                hovertext=[f"{mode}: {r['metrics']['ms_per_step']:.2f} ms/step<br>{_job_label(r)}" for r in pts],
                hoverinfo="text",
            )
        )
    fig.update_layout(
        height=360 + 20 * max(len(settings) - 1, 0),
        title="ms per step over time, per setting and mode",
        yaxis_title="ms per step",
        xaxis_title="measured at",
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def _figure(rows: list[dict], title: str) -> go.Figure:
    fig = make_subplots(
        rows=3,
        cols=2,
        vertical_spacing=0.12,
        horizontal_spacing=0.1,
        subplot_titles=(
            "ms per step",
            "output: rel. error vs eager (dashed: tolerance)",
            "device time per step by kernel class (ms)",
            "peak memory (GB)",
            "SM clock (MHz)",
            "power (W)",
        ),
    )
    jobs = list(dict.fromkeys(r["job"] for r in rows))
    for j in jobs:
        pts = [r for r in rows if r["job"] == j]
        modes = [r["mode"] for r in pts]
        name = j if len(jobs) > 1 else "job"
        fig.add_trace(
            go.Bar(
                x=modes,
                y=[r["ms_per_step"] for r in pts],
                marker_color=[mode_color(m) for m in modes] if len(jobs) == 1 else None,
                name=name,
                legendgroup=j,
                text=[f"{r['speedup_vs_eager']:.2f}×" if r["speedup_vs_eager"] else "" for r in pts],
                hovertext=[f"{j}<br>{r['mode']}: {r['ms_per_step']} ms/step" for r in pts],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
        if any(r["host_ms_per_step"] is not None for r in pts):  # the host's time to issue a step, drained
            fig.add_trace(
                go.Scatter(
                    x=modes,
                    y=[r["host_ms_per_step"] for r in pts],
                    mode="markers",
                    marker={"symbol": "line-ew-open", "size": 18, "line": {"width": 3}},
                    name=f"{name}: host ms per step",
                    legendgroup=j,
                ),
                row=1,
                col=1,
            )
        for column, row, col in (
            ("rel_err_vs_eager", 1, 2),
            ("peak_mem_gb", 2, 2),
            ("sm_clock_mhz", 3, 1),
            ("power_w", 3, 2),
        ):
            bar = go.Bar(x=modes, y=[r[column] for r in pts], name=name, legendgroup=j, showlegend=False)
            fig.add_trace(bar, row=row, col=col)
    tol = next((r["tolerance"] for r in rows if r["tolerance"] is not None), None)
    if tol is not None:
        fig.add_hline(
            y=tol,
            line_dash="dash",
            line_color="#d62728",
            annotation_text=f"tolerance {tol:g}",
            annotation_position="top left",
            row=1,
            col=2,
        )
    stacked = [r for r in rows if r["gpu_busy_ms"] is not None]
    xs = [r["mode"] if len(jobs) == 1 else f"{r['mode']} · run {r['run_id']}" for r in stacked]
    base = [0.0] * len(stacked)
    for c, label in list(metrics.KERNEL_CLASSES.items()) + [(metrics.IDLE, metrics.IDLE)]:
        col = f"class_{c}_ms" if c != metrics.IDLE else f"{metrics.IDLE}_ms"
        ys = [r[col] or 0.0 for r in stacked]
        if any(ys):  # stacked by hand (base), so the other panels can group by job
            color = class_color(c)  # the kernel classes' muted colours (dashboard/colors.py), as on Profiles
            bar = go.Bar(x=xs, y=ys, base=list(base), name=label, offsetgroup="classes", marker_color=color)
            fig.add_trace(bar, row=2, col=1)
            base = [b + y for b, y in zip(base, ys)]
    fig.update_layout(
        barmode="group",
        height=900,
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        legend={"orientation": "h", "y": -0.08},  # below the panels: never over their labels
        title=f"{title} end to end · {short(rows[0]['commit'])}",
    )
    fig.update_yaxes(type="log", row=1, col=2)
    return fig
