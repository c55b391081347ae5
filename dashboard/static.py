"""``python -m dashboard build --out DIR``: every page, with its default filters, as one self-contained HTML file
(Plotly's JavaScript embedded, tables sortable by a click on a header, each table's CSV as a data: link)."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from dashboard import pages
from dashboard.view import PageView, Table, page_cell, to_csv

_SORT_JS = """<script>
document.querySelectorAll('table.sortable th').forEach(function (th, i) {
  th.style.cursor = 'pointer';
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0], rows = Array.from(body.rows), asc = th.dataset.asc !== '1';
    th.dataset.asc = asc ? '1' : '0';
    rows.sort(function (a, b) {
      var x = a.cells[i].textContent, y = b.cells[i].textContent, nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
</script>"""
_STYLE = """<style>body{font-family:sans-serif;font-size:14px;margin:0}nav{background:#20262e;padding:10px 16px}
nav a{color:#e8eef5;margin-right:18px;text-decoration:none}main{padding:8px 16px}table{border-collapse:collapse;
font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;max-width:420px;overflow:hidden}
pre{background:#f3f3f3;padding:8px}</style>"""


def file_of(name: str) -> str:
    return "index.html" if name == "overview" else f"{name}.html"


def render(view: PageView, url: str) -> str:
    nav = "".join(f'<a href="{file_of(name)}">{html.escape(label)}</a>' for _, (name, label, _) in pages.PAGES.items())
    body = [f"<h2>{html.escape(view.title)}</h2>"]
    if view.empty:
        body.append(f"<p>The store holds no results yet. Fill it with:</p><pre>{html.escape(view.empty)}</pre>")
    else:
        if view.params:
            body.append(
                "<p>filters: " + html.escape(", ".join(f"{k}={v or 'all'}" for k, v in view.params.items())) + "</p>"
            )
        body += [f"<p>{html.escape(n)}</p>" for n in view.notes]
        first = True
        for fig in view.figures:
            body.append(fig.figure.to_html(full_html=False, include_plotlyjs=True if first else False, div_id=fig.name))
            first = False
        body += [_table(view.page, t) for t in view.tables]
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>kernelfleet · {html.escape(view.title)}"
        f"</title>{_STYLE}</head><body><nav>{nav}</nav><main>{''.join(body)}</main>{_SORT_JS}</body></html>"
    )


def _table(page: str, t: Table) -> str:
    data = base64.b64encode(to_csv(t).encode()).decode()
    head = "".join(f"<th>{html.escape(t.header(c))}</th>" for c in t.columns)
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{'' if r.get(c) is None else html.escape(str(page_cell(r.get(c))))}</td>" for c in t.columns)
        + "</tr>"
        for r in t.rows
    )
    return (
        f"<h4>{html.escape(t.title)} <a download='{page}-{t.name}.csv' href='data:text/csv;base64,{data}'>CSV"
        f"</a></h4><table class='sortable' id='table-{t.name}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def build_site(src, url: str, out: str | Path) -> list[Path]:
    """Write every page to ``out``; returns the files written."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for path, (name, _, _) in pages.PAGES.items():
        target = folder / file_of(name)
        target.write_text(render(pages.build(src, path, {}, url), url), encoding="utf-8")
        written.append(target)
    return written
