"""The ISA page on the shipped compile-only results (results/isa, issue 46 point 6): the old experiments on
uncommitted trees (commit "unknown") are marked on import and are not the newest point; the x axis is the commits in
the order measured; a run with no earlier run of its sweep has an empty compare cell, not "null"."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from dashboard import app, pages
from orchestrator.interchange.importer import import_results
from orchestrator.store import session
from orchestrator.store.query import access, run_queries

REPO = Path(__file__).resolve().parents[2]


def test_the_isa_page_reads_commits_and_leaves_the_experiments_out(tmp_path):
    url = session.sqlite_url_for(tmp_path / "kf.db")
    assert import_results([str(REPO / "results" / "isa")], url, Console(file=io.StringIO())) == 0
    marked = {r["id"]: r for r in run_queries.list_runs(url) if r["marked"]}
    assert len(marked) == 2 and all(r["commit"] == "unknown" for r in marked.values())
    src = access.open_read_only(url)
    try:
        for kernel in ("rmsnorm", "adaln", "geglu"):
            view = pages.build(src, "/isa", {"kernel": kernel, "arch": "gfx950"}, url)
            rows = view.table("isa").rows
            assert rows and not {r["run_id"] for r in rows} & set(marked), "the experiments are left out"
            fig = view.figures[0].figure
            assert fig.layout.xaxis.type == "category"
            for trace in fig.data:
                assert all(" " in x and not x.endswith("unknown") for x in trace.x), "commit labels, not times"
            narrowest = [t for t in fig.data if t.yaxis == "y4"]
            assert narrowest and narrowest[0].y[-1] == 128, f"{kernel}: gfx950 loads 128 bits at the newest commit"
        shown = pages.build(src, "/isa", {"kernel": "rmsnorm", "arch": "gfx950", "marked": "show"}, url)
        assert {r["run_id"] for r in shown.table("isa").rows} & set(marked)
        for r in shown.table("isa").rows:  # a marked run's row says so, in the words of the Runs page
            assert r["marked"] == (marked[r["run_id"]]["marked"] if r["run_id"] in marked else "")
        assert any(f"run {run}: {marked[run]['marked']}" in n for n in shown.notes for run in marked)
        hover = [h for t in shown.figures[0].figure.data for h in t.hovertext]
        assert any(f"marked: {r['marked']}" in h for h in hover for r in marked.values())
        # a run without an earlier run of its sweep: its compare cell is empty, the grid shows no "null"
        view = pages.build(src, "/isa", {"kernel": "rmsnorm"}, url)
        table = view.table("isa")
        linked = app._linked(table.rows, table.links)
        assert all(r["compare"] == "" or r["compare"].startswith("[") for r in linked)
        assert "" in {r["compare"] for r in linked}
    finally:
        session.dispose_engines()
