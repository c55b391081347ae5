"""The Compare page's view (dashboard/pages/compare.py) without a browser: selectors for runs and commits, the
defaults, filters, the Runs page's link, and the empty case."""

from __future__ import annotations

import io

from rich.console import Console

from dashboard import pages
from orchestrator.interchange.importer import import_results
from orchestrator.store import session
from orchestrator.store.query import access
from tests.orchestrator.test_compare_cli import _copy


def test_compare_view_by_commit_with_filters_and_the_runs_link(tmp_path):
    url = session.sqlite_url_for(tmp_path / "kf.db")
    files = [
        _copy(tmp_path / "b1.jsonl", "a" * 40, 1, jitter=0.002),
        _copy(tmp_path / "b2.jsonl", "a" * 40, 2, jitter=0.004),
        _copy(tmp_path / "c1.jsonl", "c" * 40, 1, triton=1.25, jitter=0.003),
        _copy(tmp_path / "c2.jsonl", "c" * 40, 2, triton=1.25, jitter=0.005),
    ]
    for f in files:
        assert import_results([str(f)], url, Console(file=io.StringIO())) == 0
    src = access.open_read_only(url)
    try:
        default = pages.build(src, "/compare", {}, url)
        assert default.params["current"] == "run:4" and default.params["baseline"] == "run:3"
        view = pages.build(
            src, "/compare", {"baseline": f"commit:{'a' * 40}", "current": f"commit:{'c' * 40}", "show": "changes"}, url
        )
        assert view.notes[0].startswith("9 confirmed regression(s), 0 correctness loss(es)")
        series = view.table("series").rows
        assert len(series) == 9 and {r["impl"] for r in series} == {"triton"}
        assert all(r["verdict"] == "confirmed regression" and 1.2 < r["ratio"] < 1.3 for r in series)
        summary = {r["impl"]: r for r in view.table("summary").rows}
        assert summary["triton"]["confirmed_regressions"] == 9 and summary["eager"]["confirmed_regressions"] == 0
        assert len(view.figures) == 1
        one = pages.build(
            src, "/compare", {"baseline": "run:1", "current": "run:3", "kernel": "nope", "show": "all"}, url
        )
        assert one.params["kernel"] == "" and len(one.table("series").rows) == 45, "an unknown kernel: all"
        runs = pages.build(src, "/runs", {}, url).table("runs").rows
        assert [r["compare"] for r in runs] == [4, 3, 2, None]
        linked = pages.build(src, "/compare", {"run": "2"}, url)
        assert linked.params["current"] == "run:2" and linked.params["baseline"] == "run:1"
    finally:
        src.dispose()
        session.dispose_engines()
