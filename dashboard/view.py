"""What a page shows, independent of how it is shown: filters, figures, tables and notes.

A page module builds a :class:`PageView` from the store and the page's URL parameters; the Dash app
(:mod:`dashboard.app`) and the static build (:mod:`dashboard.static`) render the same view, and the CSV download of a
table is that table's rows, so it holds exactly what the page shows.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from string import Formatter
from typing import Any
from urllib.parse import quote

import plotly.graph_objects as go
from sqlalchemy.exc import SQLAlchemyError

from orchestrator.store.query.csv_cells import csv_cell


@dataclass
class Filter:
    name: str
    label: str
    options: list[tuple[str, str]]  # (value, label); value "" means "all"
    value: str


@dataclass
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    # column -> URL template: {value} is the column's cell, {name} the row's cell of the column name (link_target)
    links: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # column -> the header the page shows (the CSV: column)
    rounded: dict[str, int] = field(default_factory=dict)  # column -> decimals the page shows (the CSV: all)

    def header(self, column: str) -> str:
        return self.headers.get(column, column)


@dataclass
class Figure:
    name: str
    figure: go.Figure


@dataclass
class PageView:
    page: str
    title: str
    params: dict[str, str] = field(default_factory=dict)  # the view's filters, as the URL carries them
    filters: list[Filter] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    empty: str | None = None  # set when the store holds nothing: the command that fills it

    def add_table(
        self,
        name: str,
        title: str,
        columns: list[str],
        records: list[dict[str, Any]],
        links: dict[str, str] | None = None,
    ) -> Table:
        """Show ``records`` as a table of ``columns`` (cells as :func:`cell` writes them); returns it."""
        table = Table(name, title, columns, rows_of(records, columns), links or {})
        self.tables.append(table)
        return table

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"page {self.page} has no table {name!r}; it has {[t.name for t in self.tables]}")


def cell(value: Any) -> Any:
    """A value as a table cell and a CSV field: floats to 5 significant digits, times as ISO text, lists and
    dicts as compact JSON."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.5g}")
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def rows_of(records: list[dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    return [{c: cell(r.get(c)) for c in columns} for r in records]


# What reading a damaged store raises (a dropped table, text that is not JSON, a date that does not parse): the
# dashboard shows it as one line instead of failing the page.
UNREADABLE_STORE = (SQLAlchemyError, ValueError, TypeError, KeyError, OverflowError)


def unreadable_store_line(exc: BaseException) -> str:
    """One line for a store that cannot be read."""
    orig = getattr(exc, "orig", None)
    first = (str(orig if orig is not None else exc).strip().splitlines() or [""])[0][:300]
    return f"the store cannot be read: {type(orig or exc).__name__}: {first}"


# A page shows at most this many characters of one cell (a crash's error output can be megabytes); the CSV download
# keeps the whole text.
MAX_CELL_CHARS = 2000
_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]<>()!|])")


def page_cell(value: Any) -> Any:
    """A cell as a page shows it: text longer than MAX_CELL_CHARS is cut, saying how much was left out."""
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        return f"{value[:MAX_CELL_CHARS]}… ({len(value) - MAX_CELL_CHARS} more characters; the CSV has them all)"
    return value


def markdown_link(text: Any, href: str) -> str:
    """A Markdown link whose text is shown literally and whose target stays one path of this site: Markdown in the
    text is escaped and the target percent-encoded (``:`` too, so no ``javascript:`` or other scheme)."""
    label = _MARKDOWN_SPECIAL.sub(r"\\\1", str(page_cell(text)))
    return f"[{label}]({quote(href, safe='/?=&#%')})"


def link_target(template: str, row: Mapping[str, Any], column: str) -> str:
    """The target of the link of ``row``'s cell in ``column``: ``template`` with ``{value}`` (that cell) and
    ``{name}`` (the row's cell in the column ``name``) filled in.  In the query string the values are
    percent-encoded and a parameter whose value is empty (None, "") is left out:
    ``/compare?run={value}&kernel={kernel}`` gives ``/compare?run=7`` for a row without a kernel."""
    path, sep, query = template.partition("?")
    fields = {**row, "value": row.get(column)}
    path = path.format_map({k: "" if v is None else v for k, v in fields.items()})
    parts = []
    for part in query.split("&") if sep else []:
        names = [f for _, f, _, _ in Formatter().parse(part) if f is not None]
        if any(fields.get(n) in (None, "") for n in names):
            continue
        parts.append(part.format_map({n: quote(str(fields[n]), safe="") for n in names}))
    return path + ("?" + "&".join(parts) if parts else "")


def to_csv(table: Table) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=table.columns, lineterminator="\n")
    w.writeheader()
    for r in table.rows:
        w.writerow({c: "" if r.get(c) is None else csv_cell(r.get(c)) for c in table.columns})
    return out.getvalue()


def short(commit: str | None) -> str:
    return (commit or "?")[:10]
