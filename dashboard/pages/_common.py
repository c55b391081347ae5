"""Small helpers the page modules share: reading a URL parameter against its allowed values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
