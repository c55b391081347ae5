"""Small helpers the page modules share: reading a URL parameter against its allowed values, the compare links, and
the marks of runs made under conditions their commit and device do not say."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dashboard.view import Filter

ALL = ""  # the value of "no filter"
# The columns that name one series of points (a kernel's shape, dtype and implementation on one device, per-call or
# another reading): the first columns of the tables of the pages that plot series.
SERIES_COLUMNS = ["kernel", "shape", "dtype", "impl", "gpu_type", "hardware_key", "reading"]


def choose(params: Mapping[str, str], name: str, allowed: Sequence[str], default: str | None = None) -> str:
    """``params[name]`` when it is one of ``allowed`` (or "" = all), else ``default`` (else the first allowed)."""
    value = params.get(name)
    if value is not None and (value == ALL or value in allowed):
        return value
    if default is not None:
        return default
    return allowed[0] if allowed else ALL


def make_filter(
    name: str,
    label: str,
    values: Sequence[str],
    value: str,
    *,
    with_all: bool = False,
    labels: Mapping[str, str] | None = None,
) -> Filter:
    options = [(ALL, "all")] if with_all else []
    options += [(v, (labels or {}).get(v, v)) for v in values]
    return Filter(name=name, label=label, options=options, value=value)


@dataclass(frozen=True)
class PageFilter:
    """One filter of a page, declared once: the URL parameter it reads (its value parsed against the allowed values)
    and the dropdown it shows (a :class:`Filter`, whose component the app's callback takes as an Input by its name).

    ``values``: the allowed values: a sequence, a mapping value -> label (its keys, labelled), or a function of the
    page's ``choices`` and the filters chosen before this one.  ``default``: the value when the parameter is missing
    or not allowed (None: the first allowed).  ``with_all``: "all" is offered.  ``required``: "all" stands for the
    first allowed value."""

    name: str
    label: str
    values: Sequence[str] | Mapping[str, str] | Callable[[Mapping[str, Any], Mapping[str, str]], Sequence[str]]
    default: str | None = None
    with_all: bool = False
    required: bool = False

    def allowed(self, choices: Mapping[str, Any], chosen: Mapping[str, str]) -> list[str]:
        return list(self.values(choices, chosen) if callable(self.values) else self.values)

    def labels(self) -> Mapping[str, str] | None:
        return self.values if isinstance(self.values, Mapping) else None


def read_filters(
    filters: Sequence[PageFilter], params: Mapping[str, str], choices: Mapping[str, Any]
) -> tuple[dict[str, str], list[Filter]]:
    """(filter name -> its value, in declaration order; the filters to show) for a page's URL parameters."""
    chosen: dict[str, str] = {}
    shown = []
    for f in filters:
        allowed = f.allowed(choices, chosen)
        value = choose(params, f.name, allowed, f.default)
        if f.required and value == ALL and allowed:
            value = allowed[0]
        chosen[f.name] = value
        shown.append(make_filter(f.name, f.label, allowed, value, with_all=f.with_all, labels=f.labels()))
    return chosen, shown


# The column that links a row's run to the Compare page: the run against the previous run of its sweep (the page's
# default baseline).  Its cell is the run id, or empty for a run with no earlier run of its sweep.
COMPARE_COLUMN = "compare"


def compare_link(*filters: str) -> str:
    """The Compare page's URL template for a table's compare column: ``run={value}`` and each of ``filters``
    (``"kernel={kernel}"``: the Compare filter and the row's column that fills it; view.link_target)."""
    return "/compare?" + "&".join(("run={value}", *filters))


def add_compare_runs(src, records: Sequence[dict], run_key: str = "run_id") -> None:
    """Set each record's compare column: its run's id where the run has an earlier run of its sweep, else None."""
    from orchestrator.store.query import compare_queries

    previous = compare_queries.previous_runs(src)
    for r in records:
        r[COMPARE_COLUMN] = r.get(run_key) if r.get(run_key) in previous else None


# Runs marked by their conditions (orchestrator/store/conditions.py: uncommitted changes, a GPU shared with other
# nodes, a fleet rehearsal) are left out of a page's rows unless its "marked" filter shows them; a row of a marked run
# carries the marks in its MARKED_COLUMN (the query's "marked": the conditions in words, "" for a plain run).
MARKED = "marked"
MARKED_COLUMN = "marked"
MARKED_RUNS = {
    "leave": "leave out marked runs",
    "show": "show marked runs (shared GPU, rehearsal, uncommitted changes)",
}


def choose_marked(params: Mapping[str, str], default: str = "leave") -> str:
    """The "marked" URL parameter: "leave" (the default) or "show"."""
    return choose(params, MARKED, list(MARKED_RUNS), default)


def marked_filter(value: str) -> Filter:
    return make_filter(MARKED, "marked runs", list(MARKED_RUNS), value, labels=MARKED_RUNS)


def marked_left_out(value: str) -> str:
    """What a page that found nothing adds while marked runs are left out (``value`` "leave"): where they are."""
    if value != "leave":
        return ""
    return " Runs marked by their conditions are left out: the filter 'marked runs' shows them."


def mark_suffix(marked: str | None) -> str:
    """What a run's label adds for its marks: " · marked: GPU shared with other nodes", or ""."""
    return f" · marked: {marked}" if marked else ""


def mark_hover(marked: str | None) -> str:
    """What a point's hover text adds for its run's marks, on a line of its own, or ""."""
    return f"<br>marked: {marked}" if marked else ""


def marked_note(records: Iterable[Mapping], run_key: str = "run_id") -> str | None:
    """The note a page shows when it shows rows of marked runs: each run and its marks, once; None when none is."""
    marks = {r[run_key]: r[MARKED_COLUMN] for r in records if r.get(MARKED_COLUMN)}
    if not marks:
        return None
    return (
        "Marked run(s), not what their commit and device say: "
        + "; ".join(f"run {run}: {words}" for run, words in sorted(marks.items()))
        + ". Their timings are not one job per GPU on the commit's code."
    )
