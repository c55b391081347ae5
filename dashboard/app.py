"""The Dash app: a page per URL path, its filters in the URL's query string, tables sortable, each table's CSV
at /csv/PAGE/TABLE?<the page's query string>, stored artifacts at /artifact/ID.  Every request reads the store
again, so new runs appear without a restart."""

from __future__ import annotations

import sys
from urllib.parse import parse_qsl, urlencode

import dash_ag_grid as dag  # imported with the app: Dash refuses a component library imported inside a callback
from dash import ALL, Dash, Input, Output, State, dash_table, dcc, html
from dash.dash_table.Format import Format, Scheme
from dash.exceptions import PreventUpdate
from flask import Response, abort, request

from dashboard import pages
from dashboard.view import (
    UNREADABLE_STORE,
    PageView,
    Table,
    link_target,
    markdown_link,
    page_cell,
    to_csv,
    unreadable_store_line,
)
from orchestrator.store.query import access, result_queries

NAV_STYLE = {
    "display": "flex",
    "gap": "18px",
    "padding": "10px 16px",
    "background": "#20262e",
    "fontFamily": "sans-serif",
}
LINK_STYLE = {"color": "#e8eef5", "textDecoration": "none"}
PAGE_STYLE = {"padding": "8px 16px", "fontFamily": "sans-serif", "fontSize": "14px"}
# Pages whose tables are AG Grid (dash-ag-grid); the others still use dash_table.DataTable (dash is pinned below 5,
# which deprecates it: pyproject.toml).
AG_GRID_PAGES = ("compare",)


def params_of(search: str | None) -> dict[str, str]:
    return dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=True))


def search_of(params: dict[str, str]) -> str:
    return "?" + urlencode(params) if params else ""


def create_app(src, url: str) -> Dash:
    """The app reading ``src`` (a read-only engine from access.open_read_only); ``url`` names the store."""
    app = Dash(__name__, title="kernelfleet", suppress_callback_exceptions=True, update_title=None)
    nav = html.Nav(
        [html.B("kernelfleet", style={"color": "#fff"})]
        + [
            dcc.Link(label, href=path, style=LINK_STYLE, id=f"nav-{name}")
            for path, (name, label, _) in pages.PAGES.items()
        ]
        + [html.Span(access.display_store_url(url), style={"color": "#9aa", "marginLeft": "auto"})],
        style=NAV_STYLE,
    )
    app.layout = html.Div([dcc.Location(id="url", refresh="callback-nav"), nav, html.Div(id="page", style=PAGE_STYLE)])

    @app.callback(Output("page", "children"), Input("url", "pathname"), Input("url", "search"))
    def render(pathname, search):
        return page_children(src, url, pathname or "/", search)

    @app.callback(
        Output("url", "search"),
        Input({"type": "filter", "name": ALL}, "value"),
        State({"type": "filter", "name": ALL}, "id"),
        State("url", "search"),
        prevent_initial_call=True,
    )
    def on_filter(values, ids, search):
        wanted = search_of({i["name"]: v or "" for i, v in zip(ids, values)})
        if not ids or wanted == (search or ""):
            raise PreventUpdate
        return wanted

    @app.callback(
        Output("url", "href"),
        Input("overview-heatmap", "clickData"),
        State({"type": "filter", "name": ALL}, "value"),
        State({"type": "filter", "name": ALL}, "id"),
        prevent_initial_call=True,
    )
    def on_cell(click, values, ids):
        if not click or not click.get("points"):
            raise PreventUpdate
        point = click["points"][0]
        f = {i["name"]: v for i, v in zip(ids, values)}
        from dashboard.pages.overview import trend_link

        # the fastest view's cell names its implementation (customdata); the speed-up view's is the filter's
        impl = point.get("customdata") or f.get("impl") or ""
        return trend_link(point["y"], point["x"], impl, f.get("reading") or "")

    @app.server.route("/csv/<page>/<table>")
    def csv_download(page: str, table: str):
        path = pages.PATH_OF.get(page)
        if path is None:
            abort(404)
        view = pages.build(src, path, dict(request.args), url)
        try:
            t = view.table(table)
        except KeyError:
            abort(404)
        return Response(
            to_csv(t), mimetype="text/csv", headers={"Content-Disposition": f"attachment; filename={page}-{table}.csv"}
        )

    @app.server.route("/artifact/<int:artifact_id>")
    def artifact(artifact_id: int):
        try:
            data = result_queries.artifact_data(src, artifact_id)
        except KeyError:
            abort(404)
        if data is None:
            abort(404)
        return Response(
            data,
            mimetype="application/octet-stream",
            headers={"Content-Disposition": f"attachment; filename=artifact-{artifact_id}"},
        )

    return app


def page_children(src, url: str, pathname: str, search: str | None) -> list:
    """The page at ``pathname``, or, when the store cannot be read as this code expects (a dropped table, a value
    that is not JSON or not a date: a damaged store at the right revision), a page that says so in one line."""
    try:
        view = pages.build(src, pathname, params_of(search), url)
    except UNREADABLE_STORE as exc:
        line = unreadable_store_line(exc)
        print(f"dashboard: {pathname}: {line}", file=sys.stderr)
        return [
            html.H2("The store could not be read"),
            html.P(line, id="store-error", style={"color": "#b00"}),
            html.P("Other pages may still work; restore the store from a copy or rebuild it from its results files."),
        ]
    return render_view(view, url, pathname)


def render_view(view: PageView, url: str, pathname: str) -> list:
    children: list = [html.H2(view.title)]
    if view.empty:
        children.append(
            html.Div(
                [
                    html.P("The store holds no results yet. Fill it with:"),
                    html.Pre(view.empty, id="fill-command", style={"background": "#f3f3f3", "padding": "8px"}),
                ],
                id="empty-store",
            )
        )
        return children
    if view.filters:
        children.append(
            html.Div(
                [
                    html.Label(
                        [
                            html.Span(f.label, style={"display": "block", "fontSize": "12px", "color": "#555"}),
                            dcc.Dropdown(
                                id={"type": "filter", "name": f.name},
                                value=f.value,
                                clearable=False,
                                options=[{"value": v, "label": lab} for v, lab in f.options],
                                style={"minWidth": "180px"},
                            ),
                        ],
                        id=f"filter-{f.name}",
                    )
                    for f in view.filters
                ],
                style={"display": "flex", "flexWrap": "wrap", "gap": "12px"},
            )
        )
    for note in view.notes:
        children.append(html.P(note, className="note", style={"color": "#444"}))
    for fig in view.figures:
        children.append(dcc.Graph(id=fig.name, figure=fig.figure, config={"displaylogo": False}))
    query = search_of(view.params)
    for t in view.tables:
        children.append(_table(view.page, t, query))
    return children


def _table(page: str, t: Table, query: str):
    if page in AG_GRID_PAGES:
        return _grid(page, t, query)
    columns = [{"name": t.header(c), "id": c, **_presentation(t, c)} for c in t.columns]
    data = [{c: page_cell(v) for c, v in r.items()} for r in t.rows]
    data = _linked(data, t.links)
    return html.Div(
        [
            _heading(page, t, query),
            dash_table.DataTable(
                id=f"table-{t.name}",
                columns=columns,
                data=data,
                sort_action="native",
                page_size=25,
                style_table={"overflowX": "auto"},
                style_cell={
                    "fontSize": "12px",
                    "maxWidth": "420px",
                    "overflow": "hidden",
                    "textOverflow": "ellipsis",
                    "textAlign": "left",
                },
            ),
        ]
    )


def _presentation(t: Table, column: str) -> dict:
    """A DataTable column's presentation: a link as Markdown, a rounded number to its decimals."""
    if column in t.links:
        return {"presentation": "markdown"}
    if column in t.rounded:
        return {"type": "numeric", "format": Format(precision=t.rounded[column], scheme=Scheme.fixed)}
    return {}


def _heading(page: str, t: Table, query: str):
    """A table's title with the link to its CSV."""
    return html.H4(
        [
            t.title,
            " ",
            html.A("CSV", href=f"/csv/{page}/{t.name}{query}", id=f"csv-{t.name}", style={"fontSize": "12px"}),
        ]
    )


def _linked(rows: list[dict], links: dict[str, str]) -> list[dict]:
    """``rows`` with each linked column as a Markdown link (text escaped, target encoded: markdown_link); an empty
    linked cell stays empty (the Markdown renderer would print None as "null")."""
    if not links:
        return rows
    return [
        {
            **r,
            **{
                c: "" if r.get(c) is None else markdown_link(r[c], link_target(tpl, r, c))
                for c, tpl in links.items()
                if c in r
            },
        }
        for r in rows
    ]


def _grid(page: str, t: Table, query: str):
    """A table as AG Grid: sortable and filterable columns, numbers right-aligned, links as Markdown cells."""

    def column(c: str) -> dict:
        numeric = any(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in t.rows)
        col = {"field": c, "headerName": t.header(c), "sortable": True, "filter": True, "resizable": True}
        if numeric:
            col.update(type="numericColumn", filter="agNumberColumnFilter")
        if c in t.links:
            col["cellRenderer"] = "markdown"
        return col

    data = _linked([{c: page_cell(v) for c, v in r.items()} for r in t.rows], t.links)
    return html.Div(
        [
            _heading(page, t, query),
            dag.AgGrid(
                id=f"table-{t.name}",
                columnDefs=[column(c) for c in t.columns],
                rowData=data,
                defaultColDef={"minWidth": 80},
                dashGridOptions={
                    "pagination": True,
                    "paginationPageSize": 25,
                    "paginationPageSizeSelector": [25, 50, 100],
                    "domLayout": "autoHeight",
                },
                columnSize="autoSize",
                style={"width": "100%"},
                className="ag-theme-alpine",
            ),
        ]
    )
