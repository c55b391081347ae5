"""Alembic migrations and the schema check (orchestrator/store/migrate.py, migrations/)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from orchestrator.store import migrate, session
from orchestrator.store.models import Base
from orchestrator.store.query import run_queries
from orchestrator.store.writer import StoreWriter

REPO = Path(__file__).resolve().parents[2]
TABLES = {"runs", "devices", "jobs", "run_jobs", "job_attempts", "measurements", "artifacts", "nodes"}


def _tables(url: str) -> set[str]:
    engine = session.create_engine_for(url)
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_empty_database_to_head(empty_url):
    assert migrate.current(empty_url) is None
    assert migrate.upgrade(empty_url) == migrate.head()
    assert migrate.current(empty_url) == migrate.head()
    assert TABLES | {"alembic_version"} == _tables(empty_url)
    assert migrate.upgrade(empty_url) == migrate.head(), "upgrading an up-to-date store is a no-op"


def test_upgrade_creates_sqlite_file_and_folder(tmp_path):
    path = tmp_path / "deep" / "er" / "k.db"
    migrate.upgrade(str(path))
    assert path.is_file()
    assert migrate.current(str(path)) == migrate.head()


def test_current_of_missing_sqlite_file_creates_nothing(tmp_path):
    assert migrate.current(str(tmp_path / "nope.db")) is None
    assert not (tmp_path / "nope.db").exists()


def test_models_match_migrations(store_url):
    """The models and the migrations describe the same schema (else a revision is missing)."""
    engine = session.create_engine_for(store_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def test_downgrade_to_base_and_back(store_url):
    assert migrate.downgrade(store_url, "base") is None
    assert _tables(store_url) <= {"alembic_version"}
    assert migrate.upgrade(store_url) == migrate.head()


def test_unmigrated_store_is_refused_with_the_command(empty_url):
    with pytest.raises(migrate.SchemaOutOfDate) as err:
        StoreWriter(empty_url)
    message = str(err.value)
    assert "python -m orchestrator db upgrade" in message
    assert session.display_url(empty_url) in message
    assert err.value.current is None and err.value.head == migrate.head()
    with pytest.raises(migrate.SchemaOutOfDate, match="python -m orchestrator db upgrade"):
        run_queries.list_runs(empty_url)


def test_missing_sqlite_file_is_refused_and_not_created(tmp_path):
    path = tmp_path / "missing.db"
    with pytest.raises(
        migrate.SchemaOutOfDate, match=r"does not exist yet: a sweep creates.*\+sweep=smoke.*orchestrator db upgrade"
    ):
        StoreWriter(str(path))
    with pytest.raises(migrate.SchemaOutOfDate, match="does not exist yet"):
        run_queries.list_runs(str(path))
    assert not path.exists()


def test_older_revision_is_refused(store_url, monkeypatch):
    """A store at a known revision below head (simulated: the code's head moves on) must be upgraded."""
    monkeypatch.setattr(migrate, "head", lambda: "0004")
    with pytest.raises(migrate.SchemaOutOfDate, match=r"revision 0003; this code needs 0004.*db upgrade"):
        StoreWriter(store_url)


def _written_by_a_newer_kernelfleet(url: str) -> None:
    """The store at ``url`` marked with a revision this code does not know."""
    engine = session.create_engine_for(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = 'f00d'"))
    finally:
        engine.dispose()


def test_newer_unknown_revision_is_refused(store_url):
    _written_by_a_newer_kernelfleet(store_url)
    with pytest.raises(migrate.SchemaOutOfDate, match="newer kernelfleet"):
        StoreWriter(store_url)


def test_db_upgrade_of_a_newer_store_is_one_line_and_changes_nothing(store_url):
    from tests.store.test_secrets import run_cli

    _written_by_a_newer_kernelfleet(store_url)
    for action in ("upgrade", "current"):
        rc, out = run_cli("db", action, "--url", store_url)
        assert rc == (2 if action == "upgrade" else 0), out
        assert "Traceback" not in out and "f00d" in out
    assert "newer kernelfleet" in run_cli("db", "upgrade", "--url", store_url)[1]
    assert migrate.current(store_url) == "f00d"


def _foreign(url: str) -> None:
    """Another application's table in the database at ``url``."""
    engine = session.create_engine_for(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)"))
            conn.execute(text("INSERT INTO customers (id, name) VALUES (1, 'kept')"))
    finally:
        engine.dispose()


def test_a_foreign_database_is_refused_by_every_command_and_left_as_it_was(empty_url, tmp_path):
    """A store URL naming another application's database: the sweep, the import and db upgrade refuse to add the
    store's tables beside its own (as the readers refuse to read it), in one line that says so."""
    import io

    from rich.console import Console

    from orchestrator.config import compose as config
    from orchestrator.run import sweep as sweep_mod
    from orchestrator.store.errors import StoreError
    from tests.store import results_files as rf
    from tests.store.test_secrets import SMALL, run_cli

    _foreign(empty_url)
    for args in (["db", "upgrade"], ["runs"], ["report"], ["export", "--format", "csv"]):
        rc, out = run_cli(*args, "--url", empty_url)
        assert rc == 2, (args, out)
        assert "another application's tables (customers)" in out and "Traceback" not in out, (args, out)
    path = rf.write(tmp_path / "r.jsonl", rf.lines("c" * 40))
    rc, out, err = rf.run_import(str(path), "--url", empty_url)
    assert rc == 2 and "another application's tables (customers)" in err, out + err
    cfg = config.to_plain(config.compose(["+sweep=smoke", f"store.url={empty_url}", *SMALL]))
    console = Console(file=io.StringIO(), width=200)
    with pytest.raises(StoreError, match=r"another application's tables \(customers\)"):
        sweep_mod.run_sweep(cfg, console, [])
    assert _tables(empty_url) == {"customers"}
    assert migrate.current(empty_url) is None


def _copy_installed_layout(site: Path) -> None:
    """What an installed wheel holds for the store: the packages and migrations/, without the repository around them."""
    for package in ("orchestrator", "workers", "migrations"):
        shutil.copytree(REPO / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))


def test_upgrade_works_from_an_installed_copy_and_any_directory(tmp_path):
    site, elsewhere = tmp_path / "site-packages", tmp_path / "elsewhere"
    _copy_installed_layout(site)
    elsewhere.mkdir()
    db = tmp_path / "installed.db"
    code = (
        "import sys; from orchestrator.store import migrate, StoreWriter;"
        # every module of the project from the installed copy (an editable install's finder must not lend the
        # repository's: the copy would then not be tested)
        "ours = [m.__file__ for n, m in list(sys.modules.items()) if n.split('.')[0] in ('orchestrator', 'workers')];"
        f"assert all(f.startswith({str(site)!r}) for f in ours), ours;"
        f"print(migrate.upgrade({str(db)!r})); StoreWriter({str(db)!r}).close()"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == migrate.head()


def test_alembic_command_line_with_the_shipped_ini(tmp_path):
    db = tmp_path / "cli.db"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "alembic",
            "-c",
            str(REPO / "migrations" / "alembic.ini"),
            "-x",
            f"url=sqlite:///{db}",
            "upgrade",
            "head",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert migrate.current(str(db)) == migrate.head()
