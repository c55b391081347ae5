"""Overview, kernel x GPU type from the newest run of each, in two views: the speed-up of one implementation against
eager and against the faster torch.compile (a log colour scale, the value printed in each cell), or the fastest
implementation of each cell.  Cells that failed correctness, and Triton's interpreter on a CPU, are shown as such,
never as a speed; a click on a cell opens the trend of every shape of that kernel."""

from __future__ import annotations

import math
from collections.abc import Mapping
from urllib.parse import urlencode

import plotly.graph_objects as go

from dashboard import metrics
from dashboard.colors import MARKED_CELL, SPEEDUP_SCALE, impl_color
from dashboard.view import Figure, PageView, short
from orchestrator.store.query import run_queries, view_queries
from orchestrator.store.query.run_queries import interpreted

from ._common import COMPARE_COLUMN, add_compare_runs, choose, compare_link, make_filter, mark_hover

VIEWS = {"speedup": "speed-up of one implementation", "fastest": "fastest implementation"}
COLUMNS = [
    "kernel",
    "gpu_type",
    "impl",
    "reading",
    "speedup_vs_eager",
    "speedup_vs_compile",
    "compile_baseline",
    "compile_run_id",
    "marked",
    "correct",
    "n_jobs",
    "min_speedup_vs_eager",
    "max_speedup_vs_eager",
    "run_id",
    COMPARE_COLUMN,
    "commit",
    "measured_at",
]
FASTEST_COLUMNS = [
    "kernel",
    "gpu_type",
    "reading",
    "fastest",
    "speedup_vs_eager",
    "runner_up",
    "margin",
    "jobs_won",
    "n_jobs",
    "competitors",
    "left_out",
    "run_id",
    "marked",
    COMPARE_COLUMN,
    "commit",
    "measured_at",
]
# The tables' headers as the page shows them (the CSV keeps the column names) and the numbers it rounds
HEADERS = {
    "gpu_type": "GPU type",
    "impl": "implementation",
    "speedup_vs_eager": "× eager",
    "speedup_vs_compile": "× best compile",
    "compile_baseline": "compile mode",
    "compile_run_id": "compile run",
    "n_jobs": "shape/dtype jobs",
    "min_speedup_vs_eager": "min × eager",
    "max_speedup_vs_eager": "max × eager",
    "run_id": "run",
    "measured_at": "measured at (UTC)",
    "runner_up": "runner-up",
    "margin": "× runner-up",
    "jobs_won": "jobs won",
    "left_out": "left out",
}
ROUNDED = dict.fromkeys(
    ("speedup_vs_eager", "speedup_vs_compile", "min_speedup_vs_eager", "max_speedup_vs_eager", "margin"), 2
)
HEATMAP_ID = "overview-heatmap"
SPEEDUP_TRACES = ("speed-up vs eager", "speed-up vs the faster torch.compile")
MARKED = "not a speed-up"  # the grey cells: failed correctness, Triton's interpreter, no timing
_SPEEDUP_KEYS = ("speedup_vs_eager", "speedup_vs_compile", "min_speedup_vs_eager", "max_speedup_vs_eager")


def trend_link(kernel: str, gpu_type: str, impl: str, reading: str) -> str:
    """The Trends page of ``kernel`` on ``gpu_type``: every shape and dtype (shape= and dtype= empty: all)."""
    return "/trends?" + urlencode(
        {"kernel": kernel, "shape": "", "dtype": "", "gpu_type": gpu_type, "impl": impl, "reading": reading}
    )


def build(src, params: Mapping[str, str]) -> PageView:
    choices = view_queries.micro_choices(src)
    reading = choose(params, "reading", list(metrics.READINGS), metrics.DEFAULT_READING)
    shown = choose(params, "view", list(VIEWS), "speedup")
    if shown == "fastest":
        return _fastest(src, reading)
    impls = [i for i in choices["impls"] if i != metrics.BASELINE_IMPL]
    impl = choose(params, "impl", impls, metrics.DEFAULT_IMPL if metrics.DEFAULT_IMPL in impls else None)
    cells = view_queries.speedup_matrix(src, reading, impl) if impl else []
    for c in cells:
        if interpreted(c):  # timed in Triton's interpreter: a ratio no one would get
            c.update(dict.fromkeys(_SPEEDUP_KEYS))
    add_compare_runs(src, cells)
    view = PageView(page="overview", title="Overview", params={"view": shown, "reading": reading, "impl": impl})
    view.filters = [*_view_filters(shown, reading), make_filter("impl", "implementation", impls, impl)]
    table = _kernel_gpu_table(view, "cells", f"{impl} speed-up", COLUMNS, cells)
    if not cells:
        view.notes.append(f"No {impl or 'implementation'} measurement with the reading {reading} yet.")
        return view
    view.notes.append(
        "Each cell: geometric mean over the shapes and dtypes of the newest run that measured the kernel on that GPU "
        "type (against eager) and of the newest run that timed a torch.compile mode of it (against the faster "
        "torch.compile: the table's compile run), printed in the cell; the colours are on a log scale (1× white, 2× "
        "and ½× one step each side). Grey cells are not speeds: ✗ = failed correctness; interpreted = Triton's "
        "interpreter ran it on a CPU (a time, not a kernel's speed); no torch.compile = no run timed one. Runs marked "
        "by their conditions (a GPU shared with other nodes, a rehearsal, uncommitted changes) are passed over where "
        "a plain run exists; a cell from a marked run says so (column marked). "
        "Click a cell for the trend of every shape."
    )
    _earlier_compile_note(view, cells)
    _rehearsal_note(view, src, table.rows)
    tags = run_queries.rehearsal_gpu_types(src)
    view.figures.append(Figure(HEATMAP_ID, _heatmaps(table.rows, impl, reading, tags)))
    return view


def _earlier_compile_note(view: PageView, cells: list[dict]) -> None:
    """Say which cells compare with torch.compile from an earlier run than their newest (which timed none)."""
    older: dict[tuple[int, int], list[str]] = {}
    for r in cells:
        if r.get("compile_run_id") not in (None, r["run_id"]):
            older.setdefault((r["compile_run_id"], r["run_id"]), []).append(f"{r['kernel']} on {r['gpu_type']}")
    if older:
        view.notes.append(
            "Against torch.compile from an earlier run where the newest timed none: "
            + "; ".join(
                f"{', '.join(sorted(names))}: run {c} (the newest, run {n}, timed no torch.compile)"
                for (c, n), names in sorted(older.items())
            )
            + "."
        )


def _view_filters(shown: str, reading: str) -> list:
    """The filters both views offer: the view and the reading."""
    return [
        make_filter("view", "view", list(VIEWS), shown, labels=VIEWS),
        make_filter("reading", "reading", list(metrics.READINGS), reading, labels=metrics.READINGS),
    ]


def _kernel_gpu_table(view: PageView, name: str, what: str, columns: list[str], rows: list[dict]):
    """A table of one row per kernel and GPU type, each row linked to the comparison of its newest run."""
    table = view.add_table(
        name,
        f"{what} per kernel and GPU type (newest run of each; compare: that run against the previous run of its sweep)",
        columns,
        rows,
        links={COMPARE_COLUMN: compare_link("metric={reading}", "kernel={kernel}", "gpu={gpu_type}")},
    )
    table.headers, table.rounded = HEADERS, ROUNDED
    return table


def _rehearsal_note(view: PageView, src, rows: list[dict]) -> None:
    tags = run_queries.rehearsal_gpu_types(src)
    shown = {r["gpu_type"] for r in rows} & set(tags)
    if shown:
        view.notes.append(
            "Rehearsal: "
            + ", ".join(f"{g} is a GPU-type tag of a rehearsal node, really {tags[g]}" for g in sorted(shown))
            + " (node join --label); its column is not hardware of that type."
        )


def _label(r: dict | None, key: str, impl: str) -> str:
    """What a speed-up cell says."""
    if r is None:
        return ""
    if r["correct"] is False:  # before "interpreted": a wrong result is wrong on any device
        return "✗ incorrect"
    if interpreted({**r, "impl": impl}):
        return "interpreted"
    if r[key] is None and key == "speedup_vs_compile" and r.get("compile_run_id") is None:
        return "no torch.compile"
    return "—" if r[key] is None else f"{r[key]:.2f}×"


def log_range(values: list[float]) -> int:
    """The colour scale's half-width in powers of two: every value fits, and at least 2× either side."""
    logs = [abs(math.log2(v)) for v in values if v and v > 0]
    return max(1, math.ceil(max(logs, default=1.0)))


def _heatmaps(rows: list[dict], impl: str, reading: str, tags: Mapping[str, str] | None = None) -> go.Figure:
    from plotly.subplots import make_subplots

    kernels = sorted({r["kernel"] for r in rows})
    gpus = sorted({r["gpu_type"] for r in rows})
    by = {(r["kernel"], r["gpu_type"]): r for r in rows}
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,  # the kernel names once, left of both panels: never drawn over the first
        horizontal_spacing=0.04,
        subplot_titles=(f"{impl} vs eager", f"{impl} vs the faster torch.compile"),
    )
    half = log_range([r[k] for r in rows for k in ("speedup_vs_eager", "speedup_vs_compile") if r[k]])
    for col, (key, name) in enumerate(zip(("speedup_vs_eager", "speedup_vs_compile"), SPEEDUP_TRACES), start=1):
        text = [[_label(by.get((k, g)), key, impl) for g in gpus] for k in kernels]
        values = [[(by.get((k, g)) or {}).get(key) for g in gpus] for k in kernels]
        hover = [[_hover(by.get((k, g)), text[i][j], key) for j, g in enumerate(gpus)] for i, k in enumerate(kernels)]
        fig.add_trace(
            _grid(
                [[math.log2(v) if v else None for v in row] for row in values],
                gpus,
                kernels,
                text,
                hover,
                coloraxis="coloraxis",
                name=name,
            ),
            row=1,
            col=col,
        )
        marked = [[0 if t and v is None else None for t, v in zip(tr, vr)] for tr, vr in zip(text, values)]
        if any(m is not None for row in marked for m in row):  # grey cells that say what they are
            fig.add_trace(
                go.Heatmap(
                    z=marked,
                    x=gpus,
                    y=kernels,
                    text=[[t if m is not None else "" for t, m in zip(tr, mr)] for tr, mr in zip(text, marked)],
                    texttemplate="%{text}",
                    hovertext=hover,
                    hoverinfo="text",
                    colorscale=[[0, MARKED_CELL], [1, MARKED_CELL]],
                    showscale=False,
                    name=MARKED,
                    xgap=2,
                    ygap=2,
                ),
                row=1,
                col=col,
            )
    ticks = list(range(-half, half + 1))
    fig.update_layout(
        coloraxis={
            "colorscale": SPEEDUP_SCALE,
            "cmin": -half,
            "cmax": half,
            "colorbar": {
                "title": {"text": "speed-up"},
                "tickvals": ticks,
                "ticktext": [_times(2.0**t) for t in ticks],
            },
        }
    )
    if tags and set(tags) & set(gpus):  # a rehearsal tag's column says what it really is; clicks keep the tag
        fig.update_xaxes(
            tickvals=gpus, ticktext=[f"{g}<br>(rehearsal, really {tags[g]})" if g in tags else g for g in gpus]
        )
    return _sized(fig, len(kernels), 80, f"speed-up, reading: {metrics.READINGS[reading]}")


def _grid(z: list, gpus: list[str], kernels: list[str], text: list, hover: list, **style) -> go.Heatmap:
    """A kernel x GPU type heatmap whose cells print ``text`` and show ``hover``, with gaps between them."""
    return go.Heatmap(
        z=z,
        x=gpus,
        y=kernels,
        text=text,
        texttemplate="%{text}",
        hovertext=hover,
        hoverinfo="text",
        xgap=2,
        ygap=2,
        **style,
    )


def _sized(fig: go.Figure, rows: int, top: int, title: str) -> go.Figure:
    """A heatmap of ``rows`` kernels sized to them, its labels given room, under ``title`` (``top`` pixels)."""
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    fig.update_layout(
        height=max(320, 44 * rows + 160),
        margin={"l": 10, "r": 10, "t": top, "b": 40},
        title=title,
    )
    return fig


def _times(x: float) -> str:
    """A power of two as the colour bar labels it: 1/4×, 1/2×, 1×, 2×, 4×."""
    return f"{x:g}×" if x >= 1 else f"1/{1 / x:g}×"


def _hover(r: dict | None, label: str, key: str = "speedup_vs_eager") -> str:
    if r is None:
        return ""
    if key == "speedup_vs_compile":
        if r.get("compile_run_id") is None:
            return f"{r['kernel']} on {r['gpu_type']}<br>no plain run timed a torch.compile mode of it"
        return (
            f"{r['kernel']} on {r['gpu_type']}<br>{label} ({r.get('compile_baseline') or 'compile'})"
            f"<br>run {r['compile_run_id']} · {short(r.get('compile_commit'))}<br>{r.get('compile_measured_at') or ''}"
            + (
                f"<br>(the newest run, {r['run_id']}, timed no torch.compile)"
                if r["compile_run_id"] != r["run_id"]
                else ""
            )
        )
    return (
        f"{r['kernel']} on {r['gpu_type']}<br>{label}<br>run {r['run_id']} · {short(r['commit'])}"
        f"<br>{r['measured_at']} · {r['n_jobs']} shape/dtype jobs" + mark_hover(r.get("marked"))
    )


# -- the fastest implementation per kernel x GPU type ----------------------------------------------------------------
def fastest_cells(cells: list[dict]) -> list[dict]:
    """Per cell of view_queries.newest_micro_cells, the fastest implementation.  The implementations that compete were
    timed in every timed job (shape, dtype) of the cell and failed correctness in none, and are not Triton's
    interpreter on a CPU; the fastest has the smallest geometric mean of the reading over those jobs.  Adds
    fastest, runner_up, margin (runner-up / fastest), speedup_vs_eager (eager / fastest), jobs_won (jobs in which
    the fastest was fastest), n_jobs, competitors and left_out (who did not compete, and why)."""
    out = []
    for c in cells:
        jobs = [j for j in c["jobs"] if any(j in t for t in c["times"].values())]
        competing, left_out = {}, []
        for impl, times in sorted(c["times"].items()):
            if c["correct"].get(impl) is False:  # before "interpreted": a wrong result is wrong on any device
                left_out.append(f"{impl} (incorrect)")
            elif interpreted({"gpu_type": c["gpu_type"], "impl": impl}):
                left_out.append(f"{impl} (interpreted)")
            elif any(j not in times for j in jobs):
                left_out.append(f"{impl} ({sum(j in times for j in jobs)} of {len(jobs)} jobs)")
            else:
                competing[impl] = math.exp(sum(math.log(times[j]) for j in jobs) / len(jobs))
        ranked = sorted(competing, key=competing.get)
        best = ranked[0] if ranked else None
        second = ranked[1] if len(ranked) > 1 else None
        out.append(
            {
                **c,
                "fastest": best,
                "runner_up": second,
                "margin": competing[second] / competing[best] if second else None,
                "speedup_vs_eager": (
                    competing[metrics.BASELINE_IMPL] / competing[best]
                    if best and metrics.BASELINE_IMPL in competing
                    else None
                ),
                "jobs_won": sum(min(competing, key=lambda i: c["times"][i][j]) == best for j in jobs) if best else 0,
                "n_jobs": len(jobs),
                "competitors": ", ".join(ranked),
                "left_out": ", ".join(left_out) or None,
                "competing": competing,
            }
        )
    return out


def _fastest(src, reading: str) -> PageView:
    rows = fastest_cells(view_queries.newest_micro_cells(src, reading))
    add_compare_runs(src, rows)
    view = PageView(page="overview", title="Overview", params={"view": "fastest", "reading": reading})
    view.filters = _view_filters("fastest", reading)
    table = _kernel_gpu_table(view, "fastest", "fastest implementation", FASTEST_COLUMNS, rows)
    if not rows:
        view.notes.append(f"No measurement with the reading {reading} yet.")
        return view
    view.notes.append(
        "Each cell: the implementation with the smallest geometric mean time over the shapes and dtypes of the newest "
        "run that timed a torch.compile mode of the kernel on that GPU type (else the newest that measured it; runs "
        "marked by their conditions passed over), and how much faster it is than the runner-up. Competing: the "
        "implementations timed in every one of those jobs that failed correctness in none; Triton's interpreter on a "
        "CPU never competes (a time, not a kernel's speed). Click a cell for the fastest one's trend, every shape."
    )
    _rehearsal_note(view, src, table.rows)
    view.figures.append(Figure(HEATMAP_ID, _fastest_heatmap(rows, reading)))
    return view


def _fastest_heatmap(rows: list[dict], reading: str) -> go.Figure:
    kernels = sorted({r["kernel"] for r in rows})
    gpus = sorted({r["gpu_type"] for r in rows})
    by = {(r["kernel"], r["gpu_type"]): r for r in rows}
    impls = sorted({r["fastest"] for r in rows if r["fastest"]})
    index = {impl: i for i, impl in enumerate(impls)}
    n = max(len(impls), 1)
    # one colour band per implementation, its colour on every page (dashboard/colors.py)
    scale = []
    for i, impl in enumerate(impls):
        scale += [[i / n, impl_color(impl)], [(i + 1) / n, impl_color(impl)]]
    z, text, hover, custom = [], [], [], []
    for k in kernels:
        zr, tr, hr, cr = [], [], [], []
        for g in gpus:
            r = by.get((k, g))
            best = r and r["fastest"]
            zr.append(index[best] if best else None)
            cr.append(best or "")
            if r is None:
                tr.append("")
                hr.append("")
                continue
            if not best:
                tr.append("none timed in every job")
            elif r["runner_up"]:
                tr.append(f"<b>{best}</b><br>{r['margin']:.2f}× {r['runner_up']}")
            else:
                tr.append(f"<b>{best}</b><br>(alone)")
            ranked = sorted(r["competing"].items(), key=lambda x: x[1])
            ranking = "<br>".join(f"{impl}: {t:.4g} {metrics.unit(reading)}" for impl, t in ranked)
            hr.append(
                f"{k} on {g}: fastest {best or '–'}, won {r['jobs_won']} of {r['n_jobs']} jobs<br>{ranking}"
                + (f"<br>left out: {r['left_out']}" if r["left_out"] else "")
                + f"<br>run {r['run_id']} · {short(r['commit'])}"
                + (
                    f" (the newest, run {r['newest_run_id']}, timed no torch.compile)"
                    if r.get("newest_run_id") is not None
                    else ""
                )
            )
        z.append(zr)
        text.append(tr)
        hover.append(hr)
        custom.append(cr)
    fig = go.Figure(
        _grid(
            z,
            gpus,
            kernels,
            text,
            hover,
            customdata=custom,
            colorscale=scale or [[0, "#ffffff"], [1, "#ffffff"]],
            zmin=-0.5,  # index i maps to the middle of its band [i/n, (i+1)/n] of the scale
            zmax=n - 0.5,
            name="fastest implementation",
            colorbar={
                "title": {"text": "fastest"},
                "tickvals": list(range(len(impls))),
                "ticktext": impls,
            },
        )
    )
    return _sized(
        fig,
        len(kernels),
        60,
        f"fastest implementation, reading: {metrics.READINGS[reading]} (in a cell: × faster than the runner-up)",
    )
