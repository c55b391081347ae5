"""`python -m dashboard` as a user starts it: bad stores, schema revisions, binding, the static build."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from orchestrator.store import session

from .conftest import REPO, child_env, free_port, h200_files, import_files


def _dashboard(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dashboard", *args],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("db", ["nosuchdriver://x/y", "postgresql+psycopg://nobody@127.0.0.1:1/none"])
def test_bad_db_exits_2_with_one_line(db):
    proc = _dashboard("--db", db, "--port", str(free_port()))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot open the store"), proc.stderr


def test_missing_sqlite_file_is_not_created(tmp_path):
    path = tmp_path / "nothing.db"
    proc = _dashboard("--db", str(path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "python -m orchestrator db upgrade" in proc.stderr
    assert not path.exists()


def test_store_without_schema_names_db_upgrade(tmp_path):
    path = tmp_path / "plain.db"
    engine = create_engine(session.sqlite_url_for(path))
    with engine.begin() as c:  # an empty database: the store's schema is what it lacks
        c.execute(text("CREATE TABLE other (x INTEGER)"))
        c.execute(text("DROP TABLE other"))
    engine.dispose()
    proc = _dashboard("--db", str(path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "python -m orchestrator db upgrade" in proc.stderr, proc.stderr


def test_another_applications_database_is_refused_without_suggesting_db_upgrade(tmp_path):
    path = tmp_path / "plain.db"
    engine = create_engine(session.sqlite_url_for(path))
    with engine.begin() as c:
        c.execute(text("CREATE TABLE other (x INTEGER)"))
    engine.dispose()
    proc = _dashboard("--db", str(path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "another application's tables (other)" in proc.stderr and "db upgrade" not in proc.stderr


def test_store_on_another_revision_is_refused_in_one_line(upgraded_store):
    engine = create_engine(upgraded_store)
    with engine.begin() as c:
        c.execute(text("UPDATE alembic_version SET version_num = 'ffffffffffff'"))
    engine.dispose()
    proc = _dashboard("--db", upgraded_store)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "schema revision ffffffffffff" in proc.stderr, proc.stderr


def test_binding_beyond_loopback_warns_loudly(upgraded_store):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard", "--db", upgraded_store, "--host", "0.0.0.0", "--port", str(port)],
        cwd=REPO,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        lines: list[str] = []
        while time.monotonic() < deadline and not any("WARNING" in line for line in lines):
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            lines.append(line)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    warning = next(line for line in lines if "WARNING" in line)
    assert "0.0.0.0" in warning and "127.0.0.1" in warning


def test_default_binding_is_loopback(upgraded_store):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard", "--db", upgraded_store, "--port", str(port)],
        cwd=REPO,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first, second = proc.stdout.readline(), proc.stdout.readline()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/" in first and "(read-only)" in first
    assert second.startswith("served by waitress"), "a production WSGI server, not Werkzeug's development one"
    assert "development server" not in err
    assert "WARNING: the dashboard binds" not in err


@pytest.mark.slow
def test_static_build_writes_every_page_self_contained(tmp_path, upgraded_store):
    import_files(
        upgraded_store,
        [f for f in h200_files() if "e2e" not in f.name][:1] + [f for f in h200_files() if "e2e" in f.name][:2],
    )
    session.dispose_engines()
    out = tmp_path / "site"
    proc = _dashboard("build", "--out", str(out), "--db", upgraded_store, timeout=300)
    assert proc.returncode == 0, proc.stderr
    from dashboard.pages import PAGES
    from dashboard.static import file_of

    for name, _, _ in PAGES.values():
        page = (out / file_of(name)).read_text()
        assert "<script src=" not in page  # every script inline: nothing fetched from elsewhere
        assert "<table class='sortable'" in page and "data:text/csv;base64," in page
    assert "Plotly.newPlot" in (out / "index.html").read_text()
    assert Path(out / "e2e.html").stat().st_size > 1_000_000  # Plotly's JavaScript is inside
