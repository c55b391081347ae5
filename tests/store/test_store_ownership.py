"""A run has one owner (issue 21, point 3): a running run is resumed only when its owner is gone (no heartbeat for
a while, or a dead process on this host); otherwise RunHeld names the process that holds it."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from orchestrator.store import ownership, session
from orchestrator.store.models import utcnow
from orchestrator.store.ownership import RunHeld

REPO = Path(__file__).resolve().parents[2]


def _claim(writer, plan_key: str = "plan-p", **kw) -> int:
    run_id, _ = writer.claim_run("smoke", {}, plan_key, "c", "h", **kw)
    return run_id


def _set_owner(url: str, run_id: int, **values) -> None:
    engine = session.create_engine_for(url)
    try:
        with engine.begin() as conn:
            sets = ", ".join(f"{k} = :{k}" for k in values)
            conn.execute(text(f"UPDATE runs SET {sets} WHERE id = :id"), {**values, "id": run_id})
    finally:
        engine.dispose()


def _row(url: str, run_id: int) -> dict:
    engine = session.create_engine_for(url)
    try:
        with engine.connect() as conn:
            return dict(
                conn.execute(
                    text("SELECT status, owner_host, owner_pid, heartbeat_at FROM runs WHERE id = :i"), {"i": run_id}
                )
                .mappings()
                .one()
            )
    finally:
        engine.dispose()


def _at(url: str, moment: dt.datetime):
    """A timestamp as each backend's column takes it (SQLite: naive UTC text)."""
    return moment.replace(tzinfo=None).isoformat(sep=" ") if url.startswith("sqlite") else moment


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_live_process_on_this_host_holds_its_run_until_it_dies(writer, store_url, sleeper):
    run_id = _claim(writer)
    _set_owner(
        store_url,
        run_id,
        owner_pid=sleeper.pid,  # the run now belongs to another live process
        owner_since=_at(store_url, utcnow()),
    )
    for attempt in (
        lambda: writer.find_resumable_run("plan-p"),
        lambda: _claim(writer),
        lambda: writer.reopen_run(run_id),
        lambda: writer.start_run("smoke", {}, "plan-p", "c", "h"),
    ):
        with pytest.raises(RunHeld, match=rf"run {run_id} of this plan is being run by pid {sleeper.pid} on "):
            attempt()
    sleeper.kill()
    sleeper.wait()
    assert writer.find_resumable_run("plan-p") == run_id  # its owner died: the run may be resumed
    assert writer.claim_run("smoke", {}, "plan-p", "c", "h") == (run_id, True)
    assert _row(store_url, run_id)["owner_pid"] == os.getpid()


def test_an_owner_on_another_host_holds_the_run_until_its_heartbeat_is_stale(writer, store_url):
    run_id = _claim(writer)
    writer.finish_run(run_id, "interrupted", {})
    writer.claim_run("smoke", {}, "plan-p", "c", "h")  # resumed: running again, owned here
    _set_owner(store_url, run_id, owner_host="another-host", owner_pid=4242, heartbeat_at=_at(store_url, utcnow()))
    with pytest.raises(RunHeld, match="pid 4242 on another-host"):
        writer.find_resumable_run("plan-p")
    stale = utcnow() - dt.timedelta(seconds=ownership.STALE_AFTER_S + 5)
    _set_owner(store_url, run_id, heartbeat_at=_at(store_url, stale))
    assert writer.find_resumable_run("plan-p") == run_id


def test_interrupted_runs_and_runs_without_an_owner_are_resumed(writer, store_url):
    interrupted = _claim(writer, "plan-i")
    writer.finish_run(interrupted, "interrupted", {})
    assert writer.claim_run("smoke", {}, "plan-i", "c", "h") == (interrupted, True)
    ownerless = _claim(writer, "plan-o")  # as a run written before owners were recorded
    _set_owner(store_url, ownerless, owner_host=None, owner_pid=None, owner_since=None, heartbeat_at=None)
    assert writer.find_resumable_run("plan-o") == ownerless


def test_the_heartbeat_is_written_while_the_run_is_held(writer, store_url, monkeypatch):
    monkeypatch.setattr(ownership, "HEARTBEAT_S", 0.2)
    run_id = _claim(writer)
    first = _row(store_url, run_id)["heartbeat_at"]
    time.sleep(1.5)
    second = _row(store_url, run_id)["heartbeat_at"]
    assert second > first
    writer.finish_run(run_id, "complete", {})
    stopped = _row(store_url, run_id)["heartbeat_at"]
    time.sleep(0.8)
    assert _row(store_url, run_id)["heartbeat_at"] == stopped


def test_waiting_for_a_held_run_ends_when_its_owner_does(writer, store_url):
    run_id = _claim(writer)
    short = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    # reaped as soon as it exits, as a sweep's own parent (a shell) would: an unreaped child stays a zombie whose
    # pid still answers, and the wait would then end only when the heartbeat goes stale (STALE_AFTER_S)
    threading.Thread(target=short.wait, daemon=True).start()
    try:
        _set_owner(store_url, run_id, owner_pid=short.pid, owner_since=_at(store_url, utcnow()))
        said: list[str] = []
        assert writer.find_resumable_run("plan-p", wait=True, on_wait=said.append, poll_s=0.3) == run_id
        assert short.poll() is not None  # the wait ended because the owner exited (it was alive when it began)
        assert len(said) == 1 and f"pid {short.pid}" in said[0] and said[0].startswith("waiting")
    finally:
        short.kill()
        short.wait()


CLAIM = """
import os, sys, time
from orchestrator.store.ownership import RunHeld
from orchestrator.store.writer import StoreWriter
url, ready, go = sys.argv[1:4]
w = StoreWriter(url)
open(ready, "w").close()  # imported and connected: waits for the others, then all claim at once
while not os.path.exists(go):
    time.sleep(0.005)
try:
    run_id, resumed = w.claim_run("smoke", {}, "plan-race", "c", "h")
except RunHeld as exc:
    print(exc)
    sys.exit(3)
time.sleep(3)  # holds the run a while, as a sweep would
w.finish_run(run_id, "complete", {})
w.close()
"""


def test_of_sweeps_claiming_one_plan_at_once_exactly_one_gets_it(store_url, tmp_path):
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(3)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CLAIM), store_url, str(r), str(go)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in ready
    ]
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.05)
    go.touch()
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    codes = sorted(rc for rc, _, _ in results)
    assert codes == [0, 3, 3], results
    assert all("is being run by pid" in out for rc, out, _ in results if rc == 3)
    engine = session.create_engine_for(store_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM runs")).scalar_one() == 1
    finally:
        engine.dispose()
