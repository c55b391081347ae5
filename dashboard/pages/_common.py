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
