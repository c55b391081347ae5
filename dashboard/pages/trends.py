"""Trends: median and IQR band per series (kernel, shape, dtype, implementation, device) over dates or commits,
with the changes the regression rule confirms marked; filters for every key of a series and the reading."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from dashboard import metrics
from dashboard.colors import impl_color, rgba
from dashboard.view import Figure, PageView, short
from orchestrator.store.query import revision_cache, series_queries, trend_queries, view_queries
from orchestrator.store.query.trend_queries import (
    CONFIRMED,
    KERNEL_CHANGED,
    PICKS_UNKNOWN,
    STATUS_WORDS,
    UNCONFIRMED,
    row_medians,
)

from ._common import (
    ALL,
    COMPARE_COLUMN,
    MARKED_COLUMN,
    MARKED_RUNS,
    SERIES_COLUMNS,
    PageFilter,
    add_compare_runs,
    compare_link,
    mark_hover,
    marked_note,
    read_filters,
)

COLUMNS = [  # the median and IQR next to the series' keys: readable without scrolling
    *SERIES_COLUMNS,
    "median",
    "q1",
    "q3",
    "unit",
    "verdict",
    "measured_at",
    "commit",
    "run_id",
    COMPARE_COLUMN,
    "speedup_vs_eager",
    "correct",
    MARKED_COLUMN,
    "reason",
    "job_key",
]
FIGURE_ID = "trend-figure"
MAX_SERIES = 12
DASHES = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "cross", "x", "triangle-left", "star", "hexagon")
SCALES = {"linear": "linear", "log": "log (implementations far apart)"}
# With no scale asked for, a time view whose series lie this far apart (largest / smallest median) opens on a log
# axis: eager's chain of kernels at ten times a fused kernel's time would flatten every other series on a linear one
FAR_APART = 4.0
SHAPE_COLORS = plotly.colors.qualitative.Dark24  # the series of one implementation, one colour per shape
RANGES = {"fit": "fit the points (old outliers on the edge)", "all": "every point"}
INCORRECT = "incorrect: failed correctness, not a speed"
INCORRECT_STYLE = ("x-thin-open", "#d62728")
# An old outlier does not set the y range (the "fit" range): a point is one when it lies far from both the median of
# its series and the median of its neighbours (NEIGHBOURS each side) — at least SPIKE_FLOOR times (or 1 / that)
# and SPIKE_SPREADS times the series' run-to-run spread (log scale) — and is not one of the series' KEEP_NEWEST
# newest points, which the range always holds (a current change is never pushed off the plot).
KEEP_NEWEST = 5
SPIKE_FLOOR = 1.25
SPIKE_SPREADS = 6.0
NEIGHBOURS = 3
EDGE = "outside the y range"  # the trace of the markers drawn on the edge for the points left out
Y_MODES = {"time": "time (median, IQR band)", "speedup": "speed-up vs eager (same job)"}
X_MODES = {"date": "date", "commit": "commit (in measurement order)"}
LAST = {
    "50": "newest 50 per series",
    "100": "newest 100 per series",
    "500": "newest 500 per series",
    "all": "every point",
}  # how much of each series the page shows (flags are judged on the whole series)
# Marker per verdict of the regression rule (its status, and the direction where it is confirmed); the words are
# the rule's own (regression_rule.verdict_words), as the regressions command prints them.
CONFIRMED_STYLE = {"regression": ("triangle-up", "#d62728"), "improvement": ("triangle-down", "#2ca02c")}
OPEN_STYLE = {
    UNCONFIRMED: ("circle-open", "#7f7f7f"),
    KERNEL_CHANGED: ("diamond-open", "#7f7f7f"),
    PICKS_UNKNOWN: ("square-open", "#7f7f7f"),
}


# The page's filters, each declared once (dashboard/pages/_common.py PageFilter): its URL parameter, values, default
# and dropdown.  ``choices``: view_queries.micro_choices.
FILTERS = (
    PageFilter("kernel", "kernel", lambda c, _: c["kernels"], required=True),
    PageFilter("shape", "shape", lambda c, v: c["shapes_of"].get(v["kernel"], []), with_all=True),
    PageFilter("dtype", "dtype", lambda c, v: c["dtypes_of"].get(v["kernel"], []), ALL, with_all=True),
    PageFilter("impl", "implementation", lambda c, _: c["impls"], ALL, with_all=True),
    PageFilter("gpu_type", "GPU type", lambda c, _: c["gpu_types"], ALL, with_all=True),
    PageFilter("reading", "reading", metrics.READINGS, metrics.DEFAULT_READING),
    PageFilter("y", "y axis", Y_MODES, "time"),
    PageFilter("x", "x axis", X_MODES, "date"),
    PageFilter("last", "points", LAST, "100"),
    PageFilter("scale", "y scale", SCALES, "linear"),
    PageFilter("yrange", "y range", RANGES, "fit"),
    PageFilter("marked", "marked runs", MARKED_RUNS, "leave"),
)


def build(src, params: Mapping[str, str]) -> PageView:
    choices = view_queries.micro_choices(src, params.get("kernel") or None)
    chosen, filters = read_filters(FILTERS, params, choices)
    kernel, shape, dtype, impl, gpu, reading, y, x, last, scale, yrange, marked = chosen.values()  # FILTERS' order
    view = PageView(page="trends", title="Trends", params=chosen)
    view.filters = filters
    points = (
        revision_cache.memo(
            src,
            series_queries.trend_points,
            kernel,
            shape=shape or None,
            dtype=dtype or None,
            impl=impl or None,
            gpu_type=gpu or None,
            metric=reading,
            with_samples=False,  # the IQR band comes with the verdicts, from the repeats the rule decodes
            include_marked=marked == "show",
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
    verdicts, bands = (
        trend_queries.trend_judged(
            src,
            kernel,
            metric=reading,
            shape=shape or None,
            dtype=dtype or None,
            impl=impl or None,
            hardware_keys={k[3] for k in keys},
            last=None if last == "all" else int(last),  # only the points shown are judged
            include_marked=marked == "show",
        )
        if keys
        else ({}, {})
    )
    records = []
    for key in keys:
        pts = series[key]
        judged = verdicts.get((kernel, *key), {})
        band = bands[(kernel, *key)]
        flags = [judged.get((p["run_id"], p["attempt"], p["job_key"])) for p in pts]
        keep = len(pts) if last == "all" else int(last)
        for p, flag in list(zip(pts, flags))[-keep:]:
            q1, q3 = band[(p["run_id"], p["attempt"], p["job_key"])]
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
                    "verdict": flag["verdict"] if flag else None,
                    "reason": flag["reason"] if flag else None,
                    "status": flag["status"] if flag else None,
                    "direction": flag["direction"] if flag else None,
                }
            )
    add_compare_runs(src, records)
    table = view.add_table(
        "points",
        "the points plotted (compare: the point's run against the previous run of its sweep)",
        COLUMNS,
        records,
        links={COMPARE_COLUMN: compare_link("metric={reading}", "kernel={kernel}", "gpu={gpu_type}")},
    )
    if not records:
        view.notes.append("No measurement matches these filters.")
        return view
    view.notes.append(f"{len(keys)} series, {len(table.rows)} points; {_verdict_counts(records)}.")
    note = marked_note(records)  # marked runs are shown only when the filter asks; then said, and in each hover
    if note:
        view.notes.append(note)
    wrong = sum(r["correct"] is False for r in records)
    if wrong:
        view.notes.append(
            f"{wrong} point(s) failed correctness (✗, column correct): a time, never a speed-up; the failing check "
            "is in the run's report (`python -m orchestrator report RUN`) and on the Runs page."
        )
    shown = [{**row, "status": r["status"], "direction": r["direction"]} for row, r in zip(table.rows, records)]
    if "scale" not in params and y == "time":
        medians = [r["median"] for r in shown if r.get("median")]
        if medians and max(medians) >= FAR_APART * min(medians):
            scale = "log"
            view.params["scale"] = scale
            next(f for f in view.filters if f.name == "scale").value = scale
    fig = _figure(shown, y, x, reading, scale)  # the table's values, as the CSV
    outliers = stale_outliers(shown, y)
    if outliers and yrange == "fit":
        _fit_range(fig, shown, outliers, y, x, scale)
    if outliers:
        view.notes.append(_outlier_note(len(outliers), yrange))
    view.figures.append(Figure(FIGURE_ID, fig))
    return view


def _outlier_note(n: int, yrange: str) -> str:
    what = (
        f"{n} old point(s) lie far from their series and their neighbours in it (a spike of {SPIKE_FLOOR:g}× or "
        f"more, beyond {SPIKE_SPREADS:g} × the series' run-to-run spread, not among its newest {KEEP_NEWEST})"
    )
    if yrange == "fit":
        return (
            f"y range: {what}; they are left out of the range, so they do not squash the current trend, and drawn "
            f"as ▲ / ▼ on its edge (hover for the value); y range: every point shows them where they are."
        )
    return f"y range: every point, {what}; y range: fit leaves them out of the range."


def _ys(r: dict, y: str) -> float | None:
    return r["median"] if y == "time" else r["speedup_vs_eager"]


def stale_outliers(rows: list[dict], y: str) -> list[int]:
    """The indices in ``rows`` of the old outliers (the module's rule: SPIKE_FLOOR, SPIKE_SPREADS, KEEP_NEWEST)."""
    by_series: dict[tuple, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        v = _ys(r, y)
        if v is not None and v > 0:
            by_series[(r["shape"], r["dtype"], r["impl"], r["gpu_type"], r["hardware_key"])].append(i)
    out = []
    for idx in by_series.values():
        logs = np.log([_ys(rows[i], y) for i in idx])
        if len(logs) <= KEEP_NEWEST:
            continue
        steps = np.abs(np.diff(logs))
        spread = 1.4826 * float(np.median(steps)) / np.sqrt(2)  # one point's scatter from the successive steps
        floor = max(np.log(SPIKE_FLOOR), SPIKE_SPREADS * spread)
        middle = np.median(logs)
        old = len(logs) - KEEP_NEWEST
        # each old point's neighbours (NEIGHBOURS each side, fewer at the ends), their medians on one sort
        before = [logs[max(0, j - NEIGHBOURS) : j] for j in range(old)]
        after = [logs[j + 1 : j + 1 + NEIGHBOURS] for j in range(old)]
        counts = np.array([[b.size, a.size] for b, a in zip(before, after)])
        near = row_medians([before, after], counts)
        far = np.minimum(np.abs(logs[:old] - near), np.abs(logs[:old] - middle)) > floor
        out += [idx[j] for j in np.flatnonzero(far)]
    return sorted(out)


def _fit_range(fig: go.Figure, rows: list[dict], outliers: list[int], y: str, x: str, scale: str) -> None:
    """Set the y range to hold every point but ``outliers`` (with their IQR where the view draws it), and draw the
    outliers as markers on the range's edge."""
    left = set(outliers)
    kept = [v for i, r in enumerate(rows) if i not in left for v in _held(r, y)]
    lo, hi = min(kept), max(kept)
    if scale == "log":
        lo, hi = np.log10(lo), np.log10(hi)
    pad = (hi - lo) * 0.06 or abs(hi) * 0.06 or 1.0
    lo, hi = lo - pad, hi + pad
    fig.update_yaxes(range=[lo, hi], autorange=False)
    top, bottom = (10**hi, 10**lo) if scale == "log" else (hi, lo)
    order = {c: i for i, c in enumerate(dict.fromkeys(r["commit"] for r in rows))}
    marks = [rows[i] for i in outliers if not bottom <= _ys(rows[i], y) <= top]  # the others are in sight
    if not marks:
        return
    fig.add_trace(
        go.Scatter(
            x=[r["measured_at"] if x == "date" else f"{order[r['commit']]:03d} {short(r['commit'])}" for r in marks],
            y=[top if _ys(r, y) > top else bottom for r in marks],
            mode="markers",
            name=EDGE,
            marker={
                # not the triangles of a confirmed regression or improvement: an arrow against the edge
                "symbol": ["arrow-bar-up" if _ys(r, y) > top else "arrow-bar-down" for r in marks],
                "size": 12,
                "color": [impl_color(r["impl"]) for r in marks],
                "line": {"width": 1, "color": "#333"},
            },
            cliponaxis=False,
            hovertext=[
                f"{r['impl']} · {r['shape']} · {r['dtype']} · {r['gpu_type']}<br>run {r['run_id']} · "
                f"{r['measured_at']}<br>{_ys(r, y):.4g} {'' if y != 'time' else r['unit'] or ''}: outside the y "
                "range (an old outlier)"
                for r in marks
            ],
            hoverinfo="text",
        )
    )


def _held(r: dict, y: str) -> list[float]:
    """The values of a point the y range holds: its median, and its IQR where the view draws it."""
    v = _ys(r, y)
    if v is None:
        return []
    return [v, r["q1"], r["q3"]] if y == "time" and r["q1"] is not None and r["q3"] is not None else [v]


def _verdict_counts(records: list[dict]) -> str:
    """The verdicts marked, in the rule's words: "1 confirmed regression, 2 baseline changed its kernel"."""
    counts: dict[str, int] = {}
    for r in records:
        if r["status"] == CONFIRMED:
            counts[f"confirmed {r['direction']}"] = counts.get(f"confirmed {r['direction']}", 0) + 1
        elif r["status"]:
            counts[STATUS_WORDS[r["status"]]] = counts.get(STATUS_WORDS[r["status"]], 0) + 1
    judged = (
        "verdicts of the regression rule, as `python -m orchestrator regressions RUN --improvements --include-cpu` "
        "gives them for each point's run"
    )
    if not counts:
        return f"no change marked ({judged})"
    return ", ".join(f"{n} {words}" for words, n in counts.items()) + f" marked ({judged})"


def _markers(xs: list, ys: list, hover: list, which: list[int], marker: dict, name: str, group: str) -> dict:
    """A trace of markers over the points ``which`` of one series (its verdicts, its incorrect points)."""
    return {
        "type": "scatter",
        "x": [xs[j] for j in which],
        "y": [ys[j] for j in which],
        "mode": "markers",
        "marker": marker,
        "name": name,
        "legendgroup": group,
        "hovertext": [hover[j] for j in which],
        "hoverinfo": "text",
    }


def _figure(rows: list[dict], y: str, x: str, reading: str, scale: str = "linear") -> go.Figure:
    """Per series its median line, IQR band and verdict markers.  Built as plain traces without Plotly's
    per-property validation (``_validate=False``): validating a dozen series' traces took a fifth of a first view."""
    traces: list[dict] = []
    order = {c: i for i, c in enumerate(dict.fromkeys(r["commit"] for r in rows))}
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        grouped[(r["shape"], r["dtype"], r["impl"], r["gpu_type"], r["hardware_key"])].append(r)
    shape_index = {sh: i for i, sh in enumerate(sorted({key[0] for key in grouped}))}
    # one implementation over several shapes (a click from the Overview): a colour per shape, else nine lines of
    # one colour differ only by dash; several implementations keep each its colour on every page
    by_shape = len({key[2] for key in grouped}) == 1 and len(shape_index) > 1
    for (shape, dtype, impl, gpu, _hw), pts in grouped.items():
        name = f"{impl} · {shape} · {dtype} · {gpu}"
        xs = [r["measured_at"] if x == "date" else f"{order[r['commit']]:03d} {short(r['commit'])}" for r in pts]
        ys = [r["median"] if y == "time" else r["speedup_vs_eager"] for r in pts]
        hover = [
            f"{name}<br>commit {short(r['commit'])} · run {r['run_id']}<br>{r['measured_at']}<br>"
            f"device {r['hardware_key']}<br>median {r['median']} {r['unit']}"
            + (f" (IQR {r['q1']}–{r['q3']})" if y == "time" else f"<br>speed-up {r['speedup_vs_eager']}")
            + (f"<br><b>{r['verdict']}</b><br>{r['reason']}" if r["verdict"] else "")
            + mark_hover(r.get(MARKED_COLUMN))
            for r in pts
        ]
        # one colour per implementation; the shapes differ by dash and marker (and colour, for one implementation)
        color = SHAPE_COLORS[shape_index[shape] % len(SHAPE_COLORS)] if by_shape else impl_color(impl)
        if y == "time":
            traces.append(
                {
                    "type": "scatter",
                    "x": xs + xs[::-1],
                    "y": [r["q3"] for r in pts] + [r["q1"] for r in pts][::-1],
                    "fill": "toself",
                    "fillcolor": rgba(color, 0.15),
                    "line": {"width": 0},
                    "mode": "lines",
                    "hoverinfo": "skip",
                    "showlegend": False,
                    "legendgroup": name,
                    "name": name + " IQR",
                }
            )
        traces.append(
            {
                "type": "scatter",
                "x": xs,
                "y": ys,
                "mode": "lines+markers",
                "name": name,
                "legendgroup": name,
                "line": {"color": color, "dash": DASHES[shape_index[shape] % len(DASHES)]},
                "marker": {"symbol": SYMBOLS[shape_index[shape] % len(SYMBOLS)]},
                "hovertext": hover,
                "hoverinfo": "text",
            }
        )
        wrong = [j for j, r in enumerate(pts) if r.get("correct") is False and ys[j] is not None]
        if wrong:
            marker = {"symbol": INCORRECT_STYLE[0], "size": 16, "color": INCORRECT_STYLE[1]}
            marker["line"] = {"width": 3, "color": INCORRECT_STYLE[1]}
            tips = [f"{h}<br><b>incorrect: failed correctness</b>" for h in hover]
            traces.append(_markers(xs, ys, tips, wrong, marker, f"{INCORRECT} ({name})", name))
        styles = [((CONFIRMED, d), d, style) for d, style in CONFIRMED_STYLE.items()]
        styles += [((st, None), STATUS_WORDS[st], style) for st, style in OPEN_STYLE.items()]
        for (status, direction), words, (symbol, fcolor) in styles:
            marked = [
                j
                for j, r in enumerate(pts)
                if r["status"] == status and (direction is None or r["direction"] == direction)
            ]
            if marked:
                marker = {"symbol": symbol, "size": 14, "color": fcolor}
                traces.append(_markers(xs, ys, hover, marked, marker, f"{words} ({name})", name))
    unit = rows[0]["unit"] or metrics.unit(reading)
    layout = {
        "height": 480,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 40},
        "legend": {"font": {"size": 10}},
        "yaxis": {"title": {"text": f"{reading} ({unit})" if y == "time" else "speed-up vs eager (×)"}, "type": scale},
        "xaxis": {"title": {"text": "measured at" if x == "date" else "commit"}},
        "title": {"text": f"{rows[0]['kernel']}: {Y_MODES[y]}"},
    }
    return go.Figure({"data": traces, "layout": layout}, _validate=False)
