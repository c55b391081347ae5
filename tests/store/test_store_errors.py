"""A store that cannot be used fails in one line (StoreError), never a traceback or a hang (issue 21): a
directory, a text file, a read-only SQLite file, a PostgreSQL server that accepts connections and never answers."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from orchestrator.store import migrate, session
from orchestrator.store.errors import StoreError
from orchestrator.store.writer import StoreWriter
from tests.store import results_files as rf

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def results(tmp_path) -> Path:
    return rf.write(tmp_path / "results.jsonl", rf.lines("9" * 40))


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text
    return text


def test_a_directory_is_not_a_store(tmp_path, results):
    folder = tmp_path / "store"
    folder.mkdir()
    for call in (migrate.current, migrate.upgrade, StoreWriter):
        with pytest.raises(StoreError) as err:
            call(str(folder))
        assert "is a directory" in _one_line(err.value) and str(folder) in str(err.value)
    rc, out, err = rf.run_import(str(results), "--url", str(folder))
    assert rc == 2 and err.count("\n") == 1 and "is a directory" in err, out + err


def test_a_text_file_is_not_a_store(tmp_path, results):
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list\n" * 200)
    for call in (migrate.current, migrate.upgrade, StoreWriter):
        with pytest.raises(StoreError) as err:
            call(str(notes))
        assert "is not a SQLite database" in _one_line(err.value)
    rc, out, err = rf.run_import(str(results), "--url", str(notes))
    assert rc == 2 and err.count("\n") == 1 and "not a SQLite database" in err, out + err
    assert notes.read_text() == "shopping list\n" * 200


def test_a_read_only_store_is_refused_before_anything_is_written(tmp_path, results):
    path = tmp_path / "kf.db"
    migrate.upgrade(str(path))
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    before = rf.counts(session.sqlite_url_for(path))
    with pytest.raises(StoreError) as err:
        StoreWriter(read_only)
    assert "is read-only" in _one_line(err.value)
    rc, out, err = rf.run_import(str(results), "--url", read_only)
    assert rc == 2 and err.count("\n") == 1 and "read-only" in err, out + err
    assert rf.counts(session.sqlite_url_for(path)) == before


@pytest.fixture
def silent_server():
    """A TCP listener on a loopback port that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=2)
    for conn in held:
        conn.close()
    server.close()


def test_import_into_a_server_that_never_answers_fails_in_seconds(silent_server, results):
    url = f"postgresql://kf@127.0.0.1:{silent_server}/kf"
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "import", str(results), "--url", url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert "did not answer in time" in p.stderr and str(silent_server) in p.stderr


def test_the_url_sets_its_own_connect_timeout(silent_server, monkeypatch):
    monkeypatch.setattr(session, "PG_CONNECT_TIMEOUT_S", 60)  # the URL's own value must win over the default
    url = f"postgresql://kf@127.0.0.1:{silent_server}/kf?connect_timeout=2"
    with pytest.raises(StoreError, match="did not answer in time") as err:
        migrate.current(url)
    assert "2 s" in str(err.value) or "connect_timeout=2" in str(err.value), err.value  # the URL's value was used


def test_every_command_fails_in_one_line_on_a_server_that_never_answers(silent_server, results, tmp_path):
    """The README's promise (a PostgreSQL server that does not answer fails after 5 s) for every command that opens
    the store, the read-only ones (export, the dashboard and its static build) included: each ends with one line,
    exit 2, the password masked; a command that hung would run past the subprocess timeout and fail the test."""
    secret = "Never-Shown-7"
    url = f"postgresql://kf:{secret}@127.0.0.1:{silent_server}/kf"
    orchestrator = [sys.executable, "-m", "orchestrator"]
    commands = {
        "db current": [*orchestrator, "db", "current", "--url", url],
        "db upgrade": [*orchestrator, "db", "upgrade", "--url", url],
        "import": [*orchestrator, "import", str(results), "--url", url],
        "export": [*orchestrator, "export", "--format", "csv", "--url", url],
        "export --out": [*orchestrator, "export", "--format", "jsonl", "--out", str(tmp_path / "x"), "--url", url],
        "runs": [*orchestrator, "runs", "--url", url],
        "report": [*orchestrator, "report", "--url", url],
        "report --json": [*orchestrator, "report", "1", "--json", "--url", url],
        "regressions": [*orchestrator, "regressions", "--url", url],
        "compare": [*orchestrator, "compare", "--baseline", "1", "--current", "2", "--url", url],
        "tune table": [*orchestrator, "tune", "table", "--gpu-type", "h200", "--url", url],
        "dashboard": [sys.executable, "-m", "dashboard", "--db", url, "--port", str(_free_port())],
        "dashboard build": [sys.executable, "-m", "dashboard", "build", "--out", str(tmp_path / "site"), "--db", url],
    }
    procs = {
        name: subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, argv in commands.items()
    }
    try:
        for name, p in procs.items():
            out, err = p.communicate(timeout=120)
            assert p.returncode == 2, f"{name}: {out}{err}"
            assert "Traceback" not in out + err and err.count("\n") == 1, f"{name}: {err}"
            assert "did not answer in time" in err and secret not in out + err, f"{name}: {err}"
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    assert not (tmp_path / "x").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
