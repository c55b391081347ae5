"""Compare: two runs or two commits side by side, as `python -m orchestrator compare` reports them — the summary per
kernel × GPU type × implementation, every series with its ratio, 95 % interval and the regression rule's verdict,
and per kernel and GPU type a plot of each shape's baseline and current median.

URL parameters: ``baseline`` and ``current`` (``run:ID`` or ``commit:SHA``; default: the newest run against the
previous run of its sweep), or ``run=ID`` (that run against the previous run of its sweep: the link every page's
``compare`` column holds), ``metric`` (default: the reading a call is timed by, or for a run without micro jobs
its end-to-end step time or its compiled code's instruction count), ``kernel``, ``gpu``, ``show`` (``all`` or
``changes``) and ``cpu`` (``1``: CPU timings too)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import plotly.graph_objects as go

from dashboard import metrics
from dashboard.colors import impl_color, mode_color
from dashboard.view import Figure, PageView, short
from orchestrator.store.query import compare_queries
from orchestrator.store.query.compare_queries import plot_groups, verdict_text
from workers import kinds

from ._common import ALL, choose, make_filter, mark_suffix, marked_note

SUMMARY_COLUMNS = [
    "kernel",
    "gpu_type",
    "impl",
    "geomean_ratio",
    "min_ratio",
    "max_ratio",
    "series",
    "confirmed_regressions",
    "confirmed_improvements",
    "unconfirmed",
    "correctness_lost",
    "new",
    "vanished",
]
SERIES_COLUMNS = [
    "kernel",
    "gpu_type",
    "impl",
    "shape",
    "dtype",
    "baseline_median",
    "current_median",
    "ratio",
    "ci_low",
    "ci_high",
    "verdict",
    "correct_baseline",
    "correct_current",
    "state",
    "reason",
    "hardware_key",
    "why",
]
WHY_COLUMN = "why"  # a series' link to the Regression page: its two sides' profiles and machine code side by side
SHOW = ("all", "changes")
MAX_FIGURES = 12


def _run_label(r: Mapping) -> str:
    when = r["started_at"].strftime("%Y-%m-%d %H:%M") if r.get("started_at") else "?"
    return f"run {r['id']} · {r['sweep']} · {short(r['commit'])} · {when}{mark_suffix(r.get('marked'))}"


_CACHE: dict[tuple, dict] = {}
_CACHE_SIZE = 8


def clear_cache() -> None:
    """Forget the comparisons kept for the next request: the next view computes its comparison again."""
    _CACHE.clear()


def _compare(src, base: list[int], cur: list[int], include_cpu: bool, metric: str) -> dict:
    """compare_queries.compare, kept for the next request (a filter change, the CSV) while every run compared has
    finished: a finished run's results do not change."""
    rows = compare_queries.run_rows(src, base + cur)
    finished = all(r["status"] != "running" for r in rows) and len(rows) == len(set(base + cur))
    key = (id(src), tuple(base), tuple(cur), include_cpu, metric)
    if finished and key in _CACHE:
        return _CACHE[key]
    report = compare_queries.compare(src, base, cur, include_cpu=include_cpu, metric=metric)
    if finished:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = report
    return report


def _runs_of(src, choice: str) -> list[int]:
    kind, _, value = choice.partition(":")
    if kind == "run":
        return [int(value)]
    return compare_queries.runs_of_commit(src, value)[1]  # its plain runs: a marked run does not stand for it


def _run_param(params: Mapping[str, str]) -> dict[str, str]:
    """The ``run`` parameter (a link from another page), kept in the view's URL: the page took it."""
    return {"run": params["run"]} if "run" in params else {}


def _default_metric(kinds: Mapping[int, list[str]], runs: list[int]) -> str:
    """What a comparison of ``runs`` shows unless the URL says: the kind of job they hold, micro first."""
    held = {k for r in runs for k in kinds.get(r, ())}
    return next(
        (m for kind, m in metrics.COMPARE_DEFAULT_OF_KIND.items() if kind in held),
        metrics.DEFAULT_READING,
    )


@dataclass
class Sides:
    """The two sides a URL names (``baseline``/``current`` as ``run:ID`` or ``commit:SHA``, or ``run=ID``): the
    choices offered, each side's choice and runs, and whether a ``run`` parameter named no run."""

    choices: dict
    options: list[tuple[str, str]]
    baseline: str
    current: str
    base_runs: list[int]
    cur_runs: list[int]
    run_unknown: bool


def choose_sides(src, params: Mapping[str, str]) -> Sides:
    """By default the newest run with timings that has an earlier run of its sweep, against that run."""
    choices = compare_queries.compare_choices(src)
    options = [(f"run:{r['id']}", _run_label(r)) for r in choices["runs"]]
    options += [
        (f"commit:{c['commit']}", f"commit {short(c['commit'])} · runs {', '.join(map(str, c['runs']))}")
        for c in choices["commits"]
    ]
    allowed = [v for v, _ in options]
    previous = compare_queries.previous_runs(src)
    plain_previous = compare_queries.previous_runs(src, plain=True)
    # by default the newest plain run with timings that has an earlier plain run of its sweep, against that run (a
    # run marked by its conditions: shared GPU, rehearsal, uncommitted changes, is compared only when asked)
    newest = next(
        (r["id"] for r in choices["runs"] if r["id"] in plain_previous and r["id"] in choices["micro"]),
        choices["runs"][0]["id"],
    )
    cur_default = f"run:{params['run']}" if params.get("run", "").isdigit() else f"run:{newest}"
    run_unknown = "run" in params and cur_default not in allowed
    if cur_default not in allowed:
        cur_default = f"run:{newest}"
    prev = plain_previous.get(int(cur_default.split(":")[1])) or previous.get(int(cur_default.split(":")[1]))
    current = choose(params, "current", allowed, cur_default)
    baseline = choose(params, "baseline", allowed, f"run:{prev}" if prev is not None else cur_default)
    return Sides(choices, options, baseline, current, _runs_of(src, baseline), _runs_of(src, current), run_unknown)


def build(src, params: Mapping[str, str]) -> PageView:
    sides = choose_sides(src, params)
    choices, options, allowed = sides.choices, sides.options, [v for v, _ in sides.options]
    baseline, current, run_unknown = sides.baseline, sides.current, sides.run_unknown
    show = choose(params, "show", SHOW, "all")
    include_cpu = params.get("cpu") == "1"
    view = PageView(page="compare", title="Compare")
    labels = dict(options)
    base_runs, cur_runs = sides.base_runs, sides.cur_runs
    metric = choose(params, "metric", list(metrics.COMPARE_METRICS), _default_metric(choices["kinds"], cur_runs))
    view.filters = [
        make_filter("baseline", "baseline (run or commit)", allowed, baseline, labels=labels),
        make_filter("current", "current (run or commit)", allowed, current, labels=labels),
        make_filter("metric", "compared", list(metrics.COMPARE_METRICS), metric, labels=metrics.COMPARE_METRICS),
    ]
    try:
        report = _compare(src, base_runs, cur_runs, include_cpu, metric)
    except compare_queries.RefError as exc:
        view.params = {"baseline": baseline, "current": current, "metric": metric, **_run_param(params)}
        view.notes.append(f"Nothing to compare: {exc}. Pick another baseline or current.")
        view.add_table("summary", "geometric mean of current / baseline per kernel × GPU type", SUMMARY_COLUMNS, [])
        view.add_table("series", "every series", SERIES_COLUMNS, [])
        return view
    note = marked_note((*report["baseline"], *report["current"]), run_key="id")
    if note:
        view.notes.append(note)
    rows = report["series"]
    kernels = sorted({r["kernel"] for r in rows if r["kernel"]})
    gpus = sorted({r["gpu_type"] or "" for r in rows} - {""})
    kernel = choose(params, "kernel", kernels, ALL)
    gpu = choose(params, "gpu", gpus, ALL)
    view.filters += [
        make_filter("kernel", "kernel", kernels, kernel, with_all=True),
        make_filter("gpu", "GPU type", gpus, gpu, with_all=True),
        make_filter("show", "series", SHOW, show, labels={"all": "every series", "changes": "changes only"}),
        make_filter(
            "cpu", "CPU timings", ["0", "1"], "1" if include_cpu else "0", labels={"0": "left out", "1": "shown"}
        ),
    ]
    view.params = {
        "baseline": baseline,
        "current": current,
        "metric": metric,
        "kernel": kernel,
        "gpu": gpu,
        "show": show,
        "cpu": "1" if include_cpu else "0",
        **_run_param(params),
    }
    if run_unknown:
        view.notes.append(f"run={params['run']}: no such run; showing {current.replace(':', ' ')}.")
    rows = [r for r in rows if (not kernel or r["kernel"] == kernel) and (not gpu or r["gpu_type"] == gpu)]
    c = compare_queries.counts(rows)
    verdict = (
        f"{c['confirmed_regressions']} confirmed regression(s), {c['correctness_lost']} correctness loss(es)"
        if c["confirmed_regressions"] or c["correctness_lost"]
        else "Nothing compared (no series measured on both sides)"
        if not c["series"]
        else "No confirmed regression, no correctness loss"
    )
    view.notes.append(
        f"{verdict}: {c['series']} series compared, {c['confirmed_improvements']} confirmed improvement(s), "
        f"{c['unconfirmed']} unconfirmed, {c['new']} new, {c['vanished']} vanished. Baseline run(s) "
        f"{', '.join(map(str, base_runs))}, current run(s) {', '.join(map(str, cur_runs))}; "
        f"{report['metric']} ({report['unit']}), ratio = current / baseline."
    )
    if report["cpu_series"]:
        view.notes.append(f"{report['cpu_series']} series timed on a CPU left out (CPU timings: shown).")
    if c["unconfirmed"] and len(base_runs) < 2:
        view.notes.append(
            "Unconfirmed: one run a side gives no between-run spread; compare commits with two runs each."
        )
    view.add_table(
        "summary",
        "geometric mean of current / baseline per kernel × GPU type",
        SUMMARY_COLUMNS,
        compare_queries.summarize(rows),
    )
    shown = [r for r in rows if verdict_text(r)] if show == "changes" else rows
    view.add_table(
        "series",
        "every series" if show == "all" else "changes",
        SERIES_COLUMNS,
        [{**r, "verdict": verdict_text(r) or "no change", WHY_COLUMN: series_id(r)} for r in shown],
        links={WHY_COLUMN: f"/regression?baseline={baseline}&current={current}&series={{value}}"},
    )
    for n, ((k, g), group) in enumerate(plot_groups(rows).items()):
        if n >= MAX_FIGURES:
            view.notes.append(f"Plots of the first {MAX_FIGURES} kernel × GPU types; pick a kernel for the rest.")
            break
        colour = mode_color if kinds.runs_model(metrics.kind(metric)) else impl_color  # an e2e series' impl is its mode
        view.figures.append(Figure(f"compare-{n}", _figure(k, g, group, report["unit"], colour)))
    return view


def series_id(row: Mapping) -> str | None:
    """The series' id on the Regression page (kernel|shape|dtype|impl), for a kernel series both sides hold."""
    if row["state"] != "both" or not row["kernel"]:
        return None
    shape = "x".join(map(str, row["shape"])) if isinstance(row["shape"], list) else str(row["shape"])
    return f"{row['kernel']}|{shape}|{row['dtype']}|{row['impl']}"


def _figure(kernel: str, gpu: str, rows, unit: str, color_of=impl_color) -> go.Figure:
    """Each shape's baseline and current median per implementation.  Built as plain traces without Plotly's
    per-property validation (``_validate=False``): a 235-series comparison draws about 200 traces, and validating
    them took longer than the comparison itself."""
    traces = []
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    for impl in impls:
        rs = [r for r in rows if r["impl"] == impl]
        ys = [
            f"{'x'.join(map(str, r['shape'])) if isinstance(r['shape'], list) else r['shape']} {r['dtype']}" for r in rs
        ]
        colour = color_of(impl)
        for side, symbol in (("baseline", "circle-open"), ("current", "circle")):
            traces.append(
                {
                    "type": "scatter",
                    "x": [r[f"{side}_median"] for r in rs],
                    "y": ys,
                    "mode": "markers",
                    "name": f"{impl} {side}",
                    "legendgroup": impl,
                    "marker": {"symbol": symbol, "color": colour, "size": 9},
                    "hovertext": [f"{impl} {y} {side}: {r[f'{side}_median']} {unit}" for r, y in zip(rs, ys)],
                    "hoverinfo": "text",
                }
            )
    n = len({r["dtype"] + str(r["shape"]) for r in rows})
    layout = {
        "title": {"text": f"{kernel} · {gpu}: baseline (hollow) and current (filled)"},
        "height": 140 + 24 * n,
        "xaxis": {"type": "log", "title": {"text": f"{unit} (log)"}},
        "yaxis": {"type": "category"},
        "margin": {"l": 10, "r": 10, "t": 40, "b": 40},
    }
    return go.Figure({"data": traces, "layout": layout}, _validate=False)
