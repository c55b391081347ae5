"""Regression: why one series changed between two sides, as `python -m orchestrator explain` says it — the series'
verdict and ratio from the comparison, both sides' profiled kernels as bars (device time per call), what changed in
words (the autotuner's pick, kernels, launches, the compiled launches' configuration and resources), and both sides'
kernels and compiled launches as tables.

URL parameters: ``baseline`` and ``current`` (``run:ID`` or ``commit:SHA``, as on Compare; default: the newest run
against the previous run of its sweep), or ``run=ID``; ``series`` (``kernel|shape|dtype|impl``, default: the
first confirmed regression of the comparison, else its first change, else its first series)."""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

from dashboard.view import Figure, PageView
from orchestrator.store.query import compare_queries, explain_queries
from orchestrator.store.query.compare_queries import verdict_text

from ._common import choose, make_filter, marked_note
from .compare import choose_sides, series_id

CHANGE_COLUMNS = ["change"]
KERNEL_COLUMNS = ["side", "name", "calls", "us_per_call", "avg_us"]
LAUNCH_COLUMNS = ["side", "arch", "kernel", *explain_queries.LAUNCH_FIGURES]
TABLES = (  # (name, title, columns), shown also when there is nothing to explain
    ("changes", "what changed", CHANGE_COLUMNS),
    ("kernels", "profiled kernels per call, both sides", KERNEL_COLUMNS),
    ("launches", "compiled launches (isa jobs), both sides", LAUNCH_COLUMNS),
)
FIGURE_ID = "regression-kernels"
SIDE_COLORS = {"baseline": "#9e9e9e", "current": "#d62728"}


def _default(rows: list[dict]) -> str | None:
    order = (compare_queries.is_confirmed_regression, lambda r: bool(verdict_text(r)), lambda r: True)
    return next((series_id(r) for test in order for r in rows if test(r)), None)


def build(src, params: Mapping[str, str]) -> PageView:
    sides = choose_sides(src, params)
    allowed = [v for v, _ in sides.options]
    view = PageView(page="regression", title="Regression")
    view.filters = [
        make_filter("baseline", "baseline (run or commit)", allowed, sides.baseline, labels=dict(sides.options)),
        make_filter("current", "current (run or commit)", allowed, sides.current, labels=dict(sides.options)),
    ]
    report = compare_queries.compare(src, sides.base_runs, sides.cur_runs, include_cpu=True)
    note = marked_note((*report["baseline"], *report["current"]), run_key="id")
    if note:
        view.notes.append(note)
    rows = [r for r in report["series"] if r["state"] == "both" and r["kernel"]]
    ids = list(dict.fromkeys(series_id(r) for r in rows))
    labels = {series_id(r): f"{series_id(r).replace('|', ' ')} · {verdict_text(r) or 'no change'}" for r in rows}
    chosen = choose(params, "series", ids, _default(rows) or "")
    view.filters.append(make_filter("series", "series", ids, chosen, labels=labels))
    view.params = {"baseline": sides.baseline, "current": sides.current, "series": chosen}
    if not chosen:
        view.notes.append("The two sides share no series: pick other runs (or commits) to compare.")
        for name, title, columns in TABLES:
            view.add_table(name, title, columns, [])
        return view
    row = next(r for r in rows if series_id(r) == chosen)
    kernel, shape, dtype, impl = chosen.split("|")
    doc = explain_queries.explanation(src, sides.base_runs, sides.cur_runs, kernel, shape, dtype, impl)
    ci = f" (95 % interval {row['ci_low']:.3f} to {row['ci_high']:.3f})" if row.get("ci_low") else ""
    view.notes.append(
        f"{chosen.replace('|', ' ')} on {row.get('gpu_type') or row.get('hardware_key')}: current / baseline "
        f"{row['ratio']:.3f}{ci}, {verdict_text(row) or 'no change the regression rule reports'}. Baseline run(s) "
        f"{', '.join(map(str, sides.base_runs))}, current run(s) {', '.join(map(str, sides.cur_runs))}."
    )
    for line in doc["missing"]:
        view.notes.append(f"Not captured: {line}.")
    (changes, kernels_t, launches_t) = TABLES
    view.add_table(*changes, [{"change": c} for c in doc["changes"]])
    kernels = [
        {
            "side": side,
            "name": k["name"],
            "calls": k["calls"],
            "us_per_call": k["total_ns"] / 1e3,
            "avg_us": k["avg_ns"] / 1e3,
        }
        for side in ("baseline", "current")
        for k in doc[side].get("profile") or []
    ]
    view.add_table(*kernels_t, kernels)
    launches = [
        {"side": side, "arch": arch, **ln}
        for side in ("baseline", "current")
        for arch, lns in sorted((doc[side].get("isa") or {}).items())
        for ln in lns
    ]
    view.add_table(*launches_t, launches)
    if kernels:
        view.figures.append(Figure(FIGURE_ID, _figure(chosen, kernels)))
    return view


def _figure(series: str, kernels: list[dict]) -> go.Figure:
    """Each profiled kernel's device time per call, baseline and current bars side by side."""
    names = list(dict.fromkeys(k["name"] for k in kernels))
    fig = go.Figure()
    for side in ("baseline", "current"):
        per = {k["name"]: k["us_per_call"] for k in kernels if k["side"] == side}
        fig.add_bar(
            name=side,
            y=names,
            x=[per.get(n, 0.0) for n in names],
            orientation="h",
            marker_color=SIDE_COLORS[side],
            hovertext=[
                f"{n} {side}: {per[n]:.3f} µs a call" if n in per else f"{n}: not on the {side} side" for n in names
            ],
            hoverinfo="text",
        )
    fig.update_layout(
        title=f"{series.replace('|', ' ')}: device time per call by kernel",
        barmode="group",
        height=160 + 40 * len(names),
        xaxis_title="µs per call",
        yaxis={"type": "category", "autorange": "reversed"},
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )
    return fig
