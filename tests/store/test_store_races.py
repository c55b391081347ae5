"""Processes writing one store at once (issue 21, point 5): opening a fresh store, inserting overlapping jobs and
the same device, on SQLite and PostgreSQL.  Each worker is a separate Python process started together."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from sqlalchemy import text

from orchestrator.store import migrate, session

REPO = Path(__file__).resolve().parents[2]

OPEN_FRESH = """
import sys, time
from rich.console import Console
from orchestrator.store.open import open_writer
url, start = sys.argv[1], float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
writer, _ = open_writer(url, Console(quiet=True))
writer.close()
"""

ADD_JOBS = """
import sys, time
from orchestrator.store.writer import StoreWriter
from tests.store.conftest import Factories
url, start, first = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
ROUNDS = 12
f = Factories()
w = StoreWriter(url)
for round_ in range(ROUNDS):  # overlapping key sets, every process at the same moments
    specs = [f.spec(shape=(1, 8, 64 * (i + 1)), round=round_) for i in range(first, first + 12)]
    time.sleep(max(0.0, start + 0.4 * round_ - time.time()))
    run_id = w.start_run("race", {}, f"race-{first}-{round_}", "c", "h", source="import")
    w.add_jobs(run_id, specs)
    w.record_device(f.device())
w.close()
"""


def _together(script: str, url: str, args_per_process: list[list[str]]) -> list[subprocess.CompletedProcess]:
    start = time.time() + 10.0  # every process is started and has imported what it needs by then
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), url, str(start), *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in args_per_process
    ]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def test_processes_opening_a_fresh_store_at_once_all_succeed(empty_url):
    results = _together(OPEN_FRESH, empty_url, [[] for _ in range(4)])
    for p in results:
        assert p.returncode == 0, p.stderr[-2000:]
    assert migrate.current(empty_url) == migrate.head()


def test_processes_inserting_overlapping_jobs_at_once_all_succeed(store_url):
    results = _together(ADD_JOBS, store_url, [["0"], ["6"], ["3"]])
    for p in results:
        assert p.returncode == 0, p.stderr[-2000:]
    engine = session.create_engine_for(store_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 12 * 18  # 0..17 per round
            assert conn.execute(text("SELECT count(*) FROM devices")).scalar_one() == 1
            assert conn.execute(text("SELECT count(*) FROM run_jobs")).scalar_one() == 3 * 12 * 12
    finally:
        engine.dispose()
