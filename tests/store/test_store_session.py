"""URL selection and connection settings (orchestrator/store/session.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from orchestrator.store import session


def test_explicit_url_wins_over_env(monkeypatch, tmp_path):
    monkeypatch.setenv(session.ENV_VAR, str(tmp_path / "from-env.db"))
    explicit = "postgresql+psycopg://bench@db.lab:5432/kernelfleet"
    assert session.resolve_url(explicit) == explicit


def test_env_used_when_no_explicit_url(monkeypatch, tmp_path):
    monkeypatch.setenv(session.ENV_VAR, "sqlite:///" + str(tmp_path / "env.db"))
    assert session.resolve_url(None) == "sqlite:///" + str(tmp_path / "env.db")
    assert session.resolve_url("   ") == "sqlite:///" + str(tmp_path / "env.db"), "a blank config value is unset"


def test_default_file_honours_xdg_data_home(monkeypatch, tmp_path):
    data = tmp_path / "data-home"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    url = session.resolve_url(None)
    assert url == "sqlite:///" + str((data / "kernelfleet" / "kernelfleet.db").resolve())
    assert not (data / "kernelfleet").exists(), "choosing a URL creates nothing: the first writer makes the folder"
    session.create_engine_for(url).dispose()
    assert (data / "kernelfleet").is_dir(), "a writer's engine creates the folder"
    assert not (data / "kernelfleet" / "kernelfleet.db").exists(), "choosing a URL creates no database"


def test_default_file_under_home_without_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    url = session.resolve_url("")
    expected = (tmp_path / "home" / ".local" / "share" / "kernelfleet" / "kernelfleet.db").resolve()
    assert url == "sqlite:///" + str(expected)
    assert not expected.parent.exists(), "resolving the URL creates no folder (readers must not)"


def test_bare_path_means_sqlite_file(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert session.resolve_url("results/k.db") == "sqlite:///" + str((tmp_path / "results" / "k.db").resolve())
    monkeypatch.setenv(session.ENV_VAR, "~/bench.db")
    assert session.resolve_url(None) == "sqlite:///" + str(Path("~/bench.db").expanduser().resolve())


@pytest.mark.parametrize("given", ["postgresql://u:pw@h:5432/d", "postgres://u:pw@h:5432/d"])
def test_postgres_url_without_driver_gets_psycopg(given):
    assert session.normalize_url(given) == "postgresql+psycopg://u:pw@h:5432/d"


def test_display_url_hides_password():
    assert "pw" not in session.display_url("postgresql+psycopg://u:pw@h/d")


def test_sqlite_engine_uses_wal_and_foreign_keys(tmp_path):
    engine = session.create_engine_for(str(tmp_path / "new" / "x.db"))
    try:
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    finally:
        engine.dispose()
    assert (tmp_path / "new" / "x.db").exists()


def test_shared_engines_are_cached_per_url(tmp_path):
    a = session.get_engine(str(tmp_path / "a.db"))
    assert session.get_engine("sqlite:///" + str((tmp_path / "a.db").resolve())) is a
    session.dispose_engines()
    assert session.get_engine(str(tmp_path / "a.db")) is not a
