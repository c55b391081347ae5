"""Trends: median and IQR band per series (kernel, shape, dtype, implementation, device) over dates or commits,
with the changes the regression rule confirms marked; filters for every key of a series and the reading."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping

import plotly.graph_objects as go

from dashboard import metrics
from dashboard.view import Figure, PageView, short
from orchestrator.store import queries

from ._common import ALL, SERIES_COLUMNS, choose, make_filter

COLUMNS = [
    *SERIES_COLUMNS,
    "measured_at",
    "commit",
    "run_id",
    "median",
    "q1",
    "q3",
    "unit",
    "speedup_vs_eager",
    "flag",
    "job_key",
]
FIGURE_ID = "trend-figure"
MAX_SERIES = 12
Y_MODES = {"time": "time (median, IQR band)", "speedup": "speed-up vs eager (same job)"}
X_MODES = {"date": "date", "commit": "commit (in measurement order)"}
LAST = {
    "50": "newest 50 per series",
    "100": "newest 100 per series",
    "500": "newest 500 per series",
    "all": "every point",
}  # how much of each series the page shows (flags are judged on the whole series)
FLAG_STYLE = {"regression": ("triangle-up", "#d62728"), "improvement": ("triangle-down", "#2ca02c")}


def build(src, params: Mapping[str, str]) -> PageView:
    choices = queries.micro_choices(src, params.get("kernel") or None)
    kernel = choose(params, "kernel", choices["kernels"])
    if kernel == ALL and choices["kernels"]:
        kernel = choices["kernels"][0]
    shapes = choices["shapes_of"].get(kernel, [])
    dtypes = choices["dtypes_of"].get(kernel, [])
    shape = choose(params, "shape", shapes)
    dtype = choose(params, "dtype", dtypes, ALL)
    impl = choose(params, "impl", choices["impls"], ALL)
    gpu = choose(params, "gpu_type", choices["gpu_types"], ALL)
    reading = choose(params, "reading", list(metrics.READINGS), metrics.DEFAULT_READING)
    y = choose(params, "y", list(Y_MODES), "time")
    x = choose(params, "x", list(X_MODES), "date")
    last = choose(params, "last", list(LAST), "100")
    view = PageView(
        page="trends",
        title="Trends",
        params={
            "kernel": kernel,
            "shape": shape,
            "dtype": dtype,
            "impl": impl,
            "gpu_type": gpu,
            "reading": reading,
            "y": y,
            "x": x,
            "last": last,
        },
    )
    view.filters = [
        make_filter("kernel", "kernel", choices["kernels"], kernel),
        make_filter("shape", "shape", shapes, shape, with_all=True),
        make_filter("dtype", "dtype", dtypes, dtype, with_all=True),
        make_filter("impl", "implementation", choices["impls"], impl, with_all=True),
        make_filter("gpu_type", "GPU type", choices["gpu_types"], gpu, with_all=True),
        make_filter("reading", "reading", list(metrics.READINGS), reading, labels=metrics.READINGS),
        make_filter("y", "y axis", list(Y_MODES), y, labels=Y_MODES),
        make_filter("x", "x axis", list(X_MODES), x, labels=X_MODES),
        make_filter("last", "points", list(LAST), last, labels=LAST),
    ]
    points = (
        queries.trend_points(
            src,
            kernel,
            shape=shape or None,
            dtype=dtype or None,
            impl=impl or None,
            gpu_type=gpu or None,
            metric=reading,
        )
        if kernel
        else []
    )
    series: dict[tuple, list[dict]] = defaultdict(list)
    for p in points:
        series[(p["shape_key"], p["dtype"], p["impl"], p["hardware_key"])].append(p)
    keys = sorted(series)
    if len(keys) > MAX_SERIES:
        view.notes.append(f"{len(keys)} series match; showing the first {MAX_SERIES}: narrow the filters.")
        keys = keys[:MAX_SERIES]
    records = []
    for key in keys:
        pts = series[key]
        flags = queries.flag_series(pts, higher_is_worse=not metrics.higher_is_better(reading))
        keep = len(pts) if last == "all" else int(last)
        for p, flag in list(zip(pts, flags))[-keep:]:
            q1, q3 = _quartiles(p["samples"], p["value"])
            speedup = None
            if p["correct"] is not False and p["eager_value"] and p["value"]:
                speedup = p["eager_value"] / p["value"]
            records.append(
                {
                    **p,
                    "shape": p["shape_key"],
                    "reading": reading,
                    "median": p["value"],
                    "q1": q1,
                    "q3": q3,
                    "speedup_vs_eager": speedup,
                    "flag": flag,
                }
            )
    table = view.add_table("points", "the points plotted", COLUMNS, records)
    if not records:
        view.notes.append("No measurement matches these filters.")
        return view
    n_flags = sum(1 for r in table.rows if r["flag"])
    view.notes.append(
        f"{len(keys)} series, {len(table.rows)} points; {n_flags} confirmed change(s) marked "
        "(≥ 5 % and Mann-Whitney U p < 0.01 against the 5 points before, two in a row)."
    )
    view.figures.append(Figure(FIGURE_ID, _figure(table.rows, y, x, reading)))
    return view


def _quartiles(samples, value):
    xs = [float(s) for s in samples or [] if s is not None]
    if len(xs) < 4:
        return value, value
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def _figure(rows: list[dict], y: str, x: str, reading: str) -> go.Figure:
    fig = go.Figure()
    order = {c: i for i, c in enumerate(dict.fromkeys(r["commit"] for r in rows))}
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        grouped[(r["shape"], r["dtype"], r["impl"], r["gpu_type"], r["hardware_key"])].append(r)
    for i, ((shape, dtype, impl, gpu, _hw), pts) in enumerate(grouped.items()):
        name = f"{impl} · {shape} · {dtype} · {gpu}"
        xs = [r["measured_at"] if x == "date" else f"{order[r['commit']]:03d} {short(r['commit'])}" for r in pts]
        ys = [r["median"] if y == "time" else r["speedup_vs_eager"] for r in pts]
        hover = [
            f"{name}<br>commit {short(r['commit'])} · run {r['run_id']}<br>{r['measured_at']}<br>"
            f"device {r['hardware_key']}<br>median {r['median']} {r['unit']}"
            + (f" (IQR {r['q1']}–{r['q3']})" if y == "time" else f"<br>speed-up {r['speedup_vs_eager']}")
            + (f"<br><b>{r['flag']}</b>" if r["flag"] else "")
            for r in pts
        ]
        color = _COLORS[i % len(_COLORS)]
        if y == "time":
            fig.add_trace(
                go.Scatter(
                    x=xs + xs[::-1],
                    y=[r["q3"] for r in pts] + [r["q1"] for r in pts][::-1],
                    fill="toself",
                    fillcolor=_rgba(color, 0.15),
                    line={"width": 0},
                    mode="lines",
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=name,
                    name=name + " IQR",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name=name,
                legendgroup=name,
                line={"color": color},
                hovertext=hover,
                hoverinfo="text",
            )
        )
        for flag, (symbol, fcolor) in FLAG_STYLE.items():
            marked = [j for j, r in enumerate(pts) if r["flag"] == flag]
            if marked:
                fig.add_trace(
                    go.Scatter(
                        x=[xs[j] for j in marked],
                        y=[ys[j] for j in marked],
                        mode="markers",
                        marker={"symbol": symbol, "size": 14, "color": fcolor},
                        name=f"{flag} ({name})",
                        legendgroup=name,
                        hovertext=[hover[j] for j in marked],
                        hoverinfo="text",
                    )
                )
    unit = rows[0]["unit"] or metrics.unit(reading)
    fig.update_layout(
        height=480,
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        legend={"font": {"size": 10}},
        yaxis_title=f"{reading} ({unit})" if y == "time" else "speed-up vs eager (×)",
        xaxis_title="measured at" if x == "date" else "commit",
        title=f"{rows[0]['kernel']}: {Y_MODES[y]}",
    )
    return fig


_COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#d62728",
    "#393b79",
    "#637939",
]


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"
