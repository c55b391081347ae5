"""Tune: one tune run (``+sweep=tune``, workers/jobs/tune.py) per kernel and shape — each candidate launch
configuration's time with its interquartile range, the launch table's current choice and the fastest correct candidate
marked, the candidates the target's compile dropped and why, and every job of the run with its winner and margin.
Whether a margin is beyond noise, and the launch-table change, come from ``python -m orchestrator tune table``.  Runs
marked by their conditions are offered only when the "marked runs" filter shows them (or the URL names one); one says
so."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from dashboard.colors import TUNE_COLORS
from dashboard.view import Figure, PageView, short
from orchestrator.store.query import tune_queries

from ._common import choose, choose_marked, make_filter, mark_suffix, marked_filter, marked_left_out, marked_note

FIGURE_ID = "tune-figure"
METRICS = {"time_us": "per call (µs)", "graph_time_us": "graph replay (µs)", "kernel_time_us": "kernel time (µs)"}
CANDIDATE_COLUMNS = ["impl", "role", "knobs", "median_us", "q1_us", "q3_us", "iqr_us", "speedup", "correct"]
JOB_COLUMNS = [
    "kernel",
    "shape",
    "dtype",
    "bucket",
    "current",
    "winner",
    "margin_pct",
    "candidates",
    "dropped",
    "view",
]
HEADERS = {"margin_pct": "margin (%)", "median_us": "median µs", "q1_us": "q1 µs", "q3_us": "q3 µs", "iqr_us": "IQR µs"}
ROUNDED = {"margin_pct": 1, "median_us": 2, "q1_us": 2, "q3_us": 2, "iqr_us": 2, "speedup": 3}


def roles(row: dict, metric: str) -> tuple[str | None, str | None]:
    """(the current choice, the fastest correct candidate by ``metric``) of one tune job."""
    return row["current"], tune_queries.fastest(row, metric)


def build(src, params: Mapping[str, str]) -> PageView:
    every = tune_queries.tune_runs(src)
    # a run the URL names (the Runs page's link) is shown as asked, marked or not
    named = next((r for r in every if str(r["id"]) == params.get("run")), None)
    marked = choose_marked(params, "show" if named and named["marked"] else "leave")
    runs = [r for r in every if marked == "show" or not r["marked"]]
    view = PageView(page="tune", title="Tune", params={"marked": marked})
    view.filters = [marked_filter(marked)]
    if not runs:
        view.notes.append(
            "No tune run in the store: `python -m orchestrator +sweep=tune sweep.kernels=[rmsnorm] target=h200` "
            "times every launch candidate of a kernel on a GPU type (README, Tune a new GPU type)."
            + marked_left_out(marked)
        )
        view.add_table("jobs", "tune jobs", JOB_COLUMNS, [])
        return view
    ids = [str(r["id"]) for r in runs]
    run = choose(params, "run", ids)
    info = next(r for r in runs if str(r["id"]) == run)
    rows = tune_queries.tune_results(src, int(run))
    kernels = sorted({r["kernel"] for r in rows})
    kernel = choose(params, "kernel", kernels)
    of_kernel = [r for r in rows if r["kernel"] == kernel]
    shapes = list(dict.fromkeys(r["shape_key"] for r in of_kernel))
    shape = choose(params, "shape", shapes)
    dtypes = sorted({r["dtype"] for r in of_kernel if r["shape_key"] == shape})
    dtype = choose(params, "dtype", dtypes)
    metric = choose(params, "metric", list(METRICS))
    view.params = {"run": run, "kernel": kernel, "shape": shape, "dtype": dtype, "metric": metric, "marked": marked}
    labels = {
        str(r["id"]): f"run {r['id']} · {', '.join(r['devices'])} · {short(r['commit'])}{mark_suffix(r['marked'])}"
        for r in runs
    }
    note = marked_note([info], run_key="id")
    if note:
        view.notes.append(note)
    view.filters = [
        make_filter("run", "tune run", ids, run, labels=labels),
        make_filter("kernel", "kernel", kernels, kernel),
        make_filter("shape", "shape", shapes, shape),
        make_filter("dtype", "dtype", dtypes, dtype),
        make_filter("metric", "reading", list(METRICS), metric, labels=METRICS),
        marked_filter(marked),
    ]
    jobs = []
    for r in rows:
        current, winner = roles(r, metric)
        cur = r["candidates"].get(current, {}).get(metric)
        win = r["candidates"].get(winner, {}).get(metric) if winner else None
        jobs.append(
            {
                **r,
                "shape": r["shape_key"],
                "current": current,
                "winner": winner,
                "margin_pct": (cur / win - 1.0) * 100.0 if cur and win else None,
                "candidates": len(r["candidates"]),
                "dropped": len(r["dropped"]),
                "view": "show",
            }
        )
    job = next((r for r in of_kernel if r["shape_key"] == shape and r["dtype"] == dtype), None)
    if job is None:
        view.add_table("jobs", "the run's jobs", JOB_COLUMNS, jobs).headers = HEADERS
        return view
    current, winner = roles(job, metric)
    candidates = []
    for impl, c in job["candidates"].items():
        samples = c.get(f"{metric}_samples") or []
        q1, q3 = (float(np.percentile(samples, 25)), float(np.percentile(samples, 75))) if samples else (None, None)
        role = " + ".join(n for n, hit in (("current", impl == current), ("winner", impl == winner)) if hit)
        base = job["candidates"].get(current, {}).get(metric)
        candidates.append(
            {
                "impl": impl,
                "role": role,
                "knobs": c.get("knobs"),
                "median_us": c.get(metric),
                "q1_us": q1,
                "q3_us": q3,
                "iqr_us": (q3 - q1) if samples else None,
                "speedup": (base / c[metric]) if base and c.get(metric) else None,
                "correct": None if c.get("correct") is None else c["correct"] >= 0.5,  # a verdict, not 1.0
            }
        )
    candidates.sort(key=lambda c: (c["median_us"] is None, c["median_us"] or 0.0))
    table = view.add_table(
        "candidates", f"{kernel} {shape} {dtype}: candidates by {METRICS[metric]}", CANDIDATE_COLUMNS, candidates
    )
    table.headers, table.rounded = HEADERS, ROUNDED
    table = view.add_table(
        "jobs",
        f"run {run}: every job, its current choice and fastest candidate (margin: how much slower the current "
        "choice is than the winner, in %)",
        JOB_COLUMNS,
        jobs,
        links={
            "view": "/tune?run="
            + run
            + "&kernel={kernel}&shape={shape}&dtype={dtype}&metric="
            + metric
            + "&marked="
            + marked
        },
    )
    table.headers, table.rounded = HEADERS, ROUNDED
    if job["dropped"]:
        dropped = "; ".join(f"{impl}: {why}" for impl, why in job["dropped"].items())
        view.notes.append(f"Dropped before timing ({job['arch'] or 'the target'}): {dropped}")
    view.notes.append(
        f"Measured on {job['device']['name'] or '?'} ({job['arch']}), commit {short(job['commit'])}. The margin is "
        "judged against the between-run spread by `python -m orchestrator tune table --gpu-type "
        f"{job['device']['gpu_type'] or 'TYPE'}`, which proposes the launch-table change."
    )
    if info["gpu_types"] == ["cpu"]:
        view.notes.append("Triton's interpreter on a CPU: these times are not a kernel's speed.")
    view.figures.append(Figure(FIGURE_ID, _figure(candidates, f"{kernel} {shape} {dtype}", metric)))
    return view


def _figure(candidates: list[dict], title: str, metric: str) -> go.Figure:
    timed = [c for c in candidates if c["median_us"] is not None]
    color = [TUNE_COLORS.get(c["role"].split(" + ")[0] if c["role"] else "other", TUNE_COLORS["other"]) for c in timed]
    if any(c["role"] == "current + winner" for c in timed):
        color = [TUNE_COLORS["both"] if c["role"] == "current + winner" else k for c, k in zip(timed, color)]
    fig = go.Figure(
        go.Bar(
            x=[c["impl"] for c in timed],
            y=[c["median_us"] for c in timed],
            name=METRICS[metric],
            marker_color=color,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [(c["q3_us"] - c["median_us"]) if c["q3_us"] is not None else 0 for c in timed],
                "arrayminus": [(c["median_us"] - c["q1_us"]) if c["q1_us"] is not None else 0 for c in timed],
            },
            text=[c["role"] for c in timed],
            textposition="outside",
            hovertext=[
                f"{c['impl']}<br>median {c['median_us']:.4g} µs (IQR {c['q1_us'] or 0:.4g}-{c['q3_us'] or 0:.4g})"
                + (f"<br>{c['role']}" if c["role"] else "")
                for c in timed
            ],
            hoverinfo="text",
        )
    )
    fig.update_layout(
        height=420,
        title=f"{title}: time against launch configuration (median, bars: interquartile range)",
        xaxis={
            "title": "candidate",
            "type": "category",
            "categoryorder": "array",
            "categoryarray": [c["impl"] for c in timed],
        },
        yaxis_title=METRICS[metric],
        margin={"l": 10, "r": 10, "t": 60, "b": 140},
        showlegend=False,
    )
    return fig
