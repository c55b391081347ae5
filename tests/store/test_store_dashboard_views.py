"""The dashboard's page queries give the same pages on SQLite and PostgreSQL, read-only, over real H200 results."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from sqlalchemy import text

from dashboard import pages
from orchestrator.interchange.importer import import_results
from orchestrator.store import migrate, session
from orchestrator.store.query import access
from tests.dashboard.conftest import h200_files

VIEWS = {"/": {}, "/trends": {"kernel": "rmsnorm"}, "/bandwidth": {}, "/e2e": {}, "/profiles": {}, "/runs": {}}
IMPORT_TIMES = {"started_at", "finished_at", "first_seen", "last_seen"}  # when the import ran, per backend


def _fill(url: str) -> None:
    files = h200_files()
    chosen = [f for f in files if "e2e" not in f.name][:2] + [f for f in files if "e2e" in f.name][-2:]
    for f in chosen:
        assert import_results([str(f)], url, Console(file=io.StringIO())) == 0
    session.dispose_engines()


def _pages(url: str) -> dict:
    engine = access.open_read_only(url)
    out = {}
    for path, params in VIEWS.items():
        view = pages.build(engine, path, params, url)
        out[path] = (
            view.params,
            {t.name: [{k: v for k, v in r.items() if k not in IMPORT_TIMES} for r in t.rows] for t in view.tables},
            view.notes,
        )
    engine.dispose()
    return out


@pytest.mark.slow
def test_pages_agree_on_sqlite_and_postgresql(sqlite_url, pg_url):
    for url in (sqlite_url, pg_url):
        migrate.upgrade(url)
        _fill(url)
    lite, pg = _pages(sqlite_url), _pages(pg_url)
    assert lite["/"][1]["cells"] and lite["/trends"][1]["points"] and lite["/e2e"][1]["modes"]
    for path in VIEWS:
        assert lite[path] == pg[path], path


def test_read_only_engine_refuses_writes(store_url):
    engine = access.open_read_only(store_url)
    with pytest.raises(Exception, match="(?i)read.?only"):
        with engine.begin() as c:
            c.execute(text("DELETE FROM runs"))
    engine.dispose()
