"""Runs and fleet: runs with their status and counts by outcome, each failed attempt's error, and the nodes of the
fleet with their labels, GPUs and when they were last seen."""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

from dashboard.view import Figure, PageView, short
from orchestrator.store.query import run_queries, tune_queries

from ._common import ALL, COMPARE_COLUMN, add_compare_runs, choose, compare_link, make_filter

OUTCOMES = ("ok", "incorrect", "error", "crashed", "timed_out", "lost", "skipped")
OUTCOME_COLORS = {
    "ok": "#2ca02c",
    "incorrect": "#ff7f0e",
    "error": "#d62728",
    "crashed": "#8c564b",
    "timed_out": "#9467bd",
    "lost": "#7f7f7f",
    "skipped": "#bcbd22",
}
RUN_COLUMNS = [
    "id",
    "sweep",
    "device",
    "source",
    "status",
    "marked",
    "commit",
    "user",
    "host",
    "started_at",
    "finished_at",
    "n_jobs",
    *OUTCOMES,
    COMPARE_COLUMN,
    "tune",
]
FAILED_COLUMNS = [
    "run_id",
    "job_id",
    "attempt",
    "kind",
    "name",
    "shape_key",
    "dtype",
    "status",
    "gpu_type",
    "node_id",
    "measured_at",
    "error",
    "job_key",
]
NODE_COLUMNS = ["node_id", "address", "alive", "gpu_type", "gpus", "labels", "first_seen", "last_seen"]
FIGURE_ID = "runs-figure"


def build(src, params: Mapping[str, str]) -> PageView:
    runs = run_queries.run_outcomes(src, limit=100)
    ids = [str(r["id"]) for r in runs]
    run = choose(params, "run", ids, ALL)
    view = PageView(page="runs", title="Runs and fleet", params={"run": run})
    view.filters = [make_filter("run", "failed jobs of run", ids, run, with_all=True)]
    for r in runs:
        r.update({o: r["outcomes"].get(o, 0) for o in OUTCOMES})
    add_compare_runs(src, runs, run_key="id")  # the Compare page's link: this run against the previous one
    tuned = {r["id"] for r in tune_queries.tune_runs(src)}
    for r in runs:
        r["tune"] = r["id"] if r["id"] in tuned else None  # the Tune page's link, for tune runs
    view.add_table(
        "runs",
        "runs (newest first), attempts by outcome; compare: against the previous run of the sweep",
        RUN_COLUMNS,
        runs,
        links={"id": "/runs?run={value}", COMPARE_COLUMN: compare_link(), "tune": "/tune?run={value}"},
    )
    if any(r.get("marked") for r in runs):
        view.notes.append(
            "A marked run was made under conditions its commit and device do not say (uncommitted changes, a GPU "
            "shared with other nodes, a fleet rehearsal): trends, regressions and compare leave it out unless asked. "
            + " ".join(f"Run {r['id']}: {r['marked_note']}." for r in runs if r.get("marked"))[:1500]
        )
    failed = run_queries.failed_attempts(src, int(run) if run else None)
    view.add_table(
        "failed", "failed attempts and their errors" + (f" (run {run})" if run else ""), FAILED_COLUMNS, failed
    )
    fleet = run_queries.nodes(src)
    for n in fleet:
        n["gpus"] = (n["resources"] or {}).get("GPU", 0)
    view.add_table("nodes", "nodes of the fleet (last snapshot)", NODE_COLUMNS, fleet)
    if not fleet:
        view.notes.append("No node snapshot in the store yet.")
    elif any(n["rehearsal_of"] for n in fleet):
        view.notes.append(
            "A rehearsal node's GPU type is a tag set at `node join --label`, not its hardware: its real type is "
            "named beside the tag."
        )
    rows = view.tables[0].rows[::-1]
    fig = go.Figure()
    for o in OUTCOMES:
        ys = [r[o] for r in rows]
        if any(ys):
            fig.add_trace(
                go.Bar(
                    x=[f"{r['id']}" for r in rows],
                    y=ys,
                    name=o,
                    marker_color=OUTCOME_COLORS[o],
                    hovertext=[f"run {r['id']} · {r['sweep']} · {short(r['commit'])}<br>{o}: {r[o]}" for r in rows],
                    hoverinfo="text",
                )
            )
    fig.update_layout(
        barmode="stack",
        height=320,
        xaxis={"title": "run", "type": "category"},
        yaxis_title="attempts",
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        title="attempts by outcome per run",
    )
    view.figures.append(Figure(FIGURE_ID, fig))
    return view
