"""Profiles: the top kernels of a profile job (per implementation) or of an e2e job's profiled call (per mode):
name, calls, total and average time, % of device time; the raw captures stored with the job, downloadable.  Runs
marked by their conditions are left out unless the "marked runs" filter shows them; a job of one says so."""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

from dashboard.colors import class_color, impl_color
from dashboard.view import Figure, PageView
from orchestrator.store.query import result_queries, view_queries
from workers.kinds.e2e import NAME as E2E

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

JOB_COLUMNS = [
    "job_id",
    "kind",
    "name",
    "shape_key",
    "dtype",
    "gpu_type",
    "run_id",
    COMPARE_COLUMN,
    MARKED_COLUMN,
    "measured_at",
    "status",
    "n_artifacts",
    "job_key",
]
ROW_COLUMNS = ["part", "name", "class", "calls", "total_ms", "avg_us", "pct"]
ARTIFACT_COLUMNS = ["id", "kind", "name", "size", "stored", "download"]
FIGURE_ID = "profile-figure"
TOP = 20


def build(src, params: Mapping[str, str]) -> PageView:
    marked = choose_marked(params)
    jobs = view_queries.profile_jobs(src, include_marked=marked == "show")
    ids = [str(j["job_id"]) for j in jobs]
    labels = {
        str(j["job_id"]): f"{j['kind']} {j['name']} {j['shape_key']} {j['dtype']} · {j['gpu_type']} · run {j['run_id']}"
        + mark_suffix(j["marked"])
        for j in jobs
    }
    job_id = choose(params, "job", ids, ids[0] if ids else ALL)
    job = next((j for j in jobs if str(j["job_id"]) == job_id), None)
    parts = _parts(src, job) if job else {}
    part = choose(params, "part", list(parts), next(iter(parts), ALL))
    view = PageView(page="profiles", title="Profiles", params={"job": job_id, "part": part, "marked": marked})
    view.filters = [
        make_filter("job", "job", ids, job_id, labels=labels),
        make_filter("part", "implementation / mode", list(parts), part),
        marked_filter(marked),
    ]
    add_compare_runs(src, jobs)
    view.add_table(
        "jobs",
        "profiled jobs (newest first; compare: the job's run against the previous run of its sweep)",
        JOB_COLUMNS,
        jobs,
        links={COMPARE_COLUMN: compare_link("kernel={name}", "gpu={gpu_type}")},
    )
    if job is None:
        view.notes.append(
            "No profile job and no profiled e2e job yet: a sweep with sweep.kinds=[profile], or "
            "+sweep=ltx_e2e with profile_steps, records them." + marked_left_out(marked)
        )
        return view
    note = marked_note([job])
    if note:
        view.notes.append(note)
    rows = [{**r, "part": p} for p, rs in parts.items() if not part or p == part for r in rs][: TOP * 4]
    table = view.add_table("top", f"top kernels of job {job_id} ({part or 'all'})", ROW_COLUMNS, rows)
    arts = result_queries.artifacts(src, job["job_id"], job["attempt"])
    for a in arts:
        a["download"] = f"/artifact/{a['id']}" if a["stored"] == "blob" else a["path"]
    view.add_table("artifacts", "raw captures", ARTIFACT_COLUMNS, arts, links={"download": "{value}"})
    if table.rows:
        top = [r for r in table.rows if r["part"] == (part or table.rows[0]["part"])][:TOP]
        fig = go.Figure(
            go.Bar(
                y=[r["name"] for r in top][::-1],  # keyed by the full name: two kernels never merge into one bar
                x=[r["total_ms"] for r in top][::-1],
                orientation="h",
                marker_color=[bar_color(job, r) for r in top][::-1],
                hovertext=[
                    f"{r['name']}<br>{r['calls']} calls · {r['avg_us']} µs avg · {r['pct']} %"
                    + (f"<br>class: {r['class']}" if r["class"] else "")
                    for r in top
                ][::-1],
                hoverinfo="text",
            )
        )
        view.notes.append(
            "Bars: each kernel of an end-to-end step in the colour of its kernel class, as on the End to end page; "
            "a profile job's kernels in the colour of the implementation that launched them, as on every page."
        )
        names = [r["name"] for r in top][::-1]
        fig.update_yaxes(tickmode="array", tickvals=names, ticktext=[_tick(n) for n in names])
        fig.update_layout(
            height=max(300, 24 * len(top) + 100),
            margin={"l": 10, "r": 10, "t": 40, "b": 40},
            title=f"top kernels · {top[0]['part']}",
            xaxis_title=_x_title(job),
        )
        view.figures.append(Figure(FIGURE_ID, fig))
    return view


def bar_color(job: dict, row: dict) -> str:
    """A top kernel's bar colour: its kernel class in an end-to-end step, else its implementation's colour."""
    return class_color(row["class"]) if job["kind"] == E2E else impl_color(row["part"])


def _tick(name: str, width: int = 70) -> str:
    """A bar's label: the kernel name, its middle elided when long (the bar itself is keyed by the full name)."""
    return name if len(name) <= width else name[: width - 25] + "…" + name[-24:]


def _x_title(job: dict) -> str:
    return "ms per denoising step" if job["kind"] == E2E else "total ms over the captured calls"


def _parts(src, job: dict) -> dict[str, list[dict]]:
    """implementation or mode -> rows with name, class, calls, total_ms, avg_us, pct."""
    if job["kind"] == E2E:
        out = {}
        for mode, prof in view_queries.e2e_profile(src, job["job_id"], job["attempt"]).items():
            out[mode] = [
                {
                    "name": r.get("name"),
                    "class": r.get("class"),
                    "calls": r.get("calls_per_step"),
                    "total_ms": r.get("ms_per_step"),
                    "avg_us": r.get("avg_us"),
                    "pct": r.get("pct"),
                }
                for r in prof.get("top") or []
            ]
        return out
    return {
        impl: [
            {
                "name": r.get("name"),
                "class": None,
                "calls": r.get("calls"),
                "total_ms": (r.get("total_ns") or 0) / 1e6,
                "avg_us": (r.get("avg_ns") or 0) / 1e3,
                "pct": r.get("pct"),
            }
            for r in rs
        ]
        for impl, rs in result_queries.profile_kernel_rows(src, job["job_id"], job["attempt"]).items()
    }
