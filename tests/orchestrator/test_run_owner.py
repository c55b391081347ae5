"""Two sweeps of one plan (issue 21, point 3): the second never joins a run the first still runs.  Real sweeps
(`python -m orchestrator +sweep=smoke` with a tiny grid) into a temporary SQLite file or PostgreSQL schema."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

from orchestrator.config import compose as config
from orchestrator.plan import jobs as planner
from orchestrator.store import session
from orchestrator.store.writer import StoreWriter
from tests.store.conftest import _isolated_env, empty_url, pg_unreachable, pg_url, sqlite_url, store_url  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
# 8 jobs with a short timing budget: the first sweep still holds its run for seconds after a second one checks
TINY = [
    "+sweep=smoke",
    "sweep.kernels=[rmsnorm]",
    "sweep.shapes=[[1,8,64],[2,4,32]]",
    "sweep.dtypes=[bf16,fp32]",
    "sweep.rep_ms=5",
]


def _sweep(url: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *TINY, f"store.url='{url}'", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 400) -> tuple[int, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


def _plan_key() -> tuple[str, int]:
    specs = planner.plan(config.to_plain(config.compose(TINY)))
    return planner.plan_key(specs), len(specs)


def _attempts(url: str) -> list[tuple[int, int, int]]:
    """(run, job, attempts of that job in that run) for every job attempted."""
    engine = session.create_engine_for(url)
    try:
        with engine.connect() as conn:
            return [
                tuple(r)
                for r in conn.execute(text("SELECT run_id, job_id, count(*) FROM job_attempts GROUP BY run_id, job_id"))
            ]
    finally:
        engine.dispose()


def test_a_sweep_of_a_plan_another_process_runs_exits_2_naming_it(store_url):
    key, _ = _plan_key()
    holder = StoreWriter(store_url)  # this test process runs the plan (owner, heartbeat)
    try:
        run_id, _ = holder.claim_run("smoke", {}, key, "c", "h")
        rc, out = _finish(_sweep(store_url), timeout=200)
        assert rc == 2, out
        assert f"run {run_id} of this plan is being run by pid {os.getpid()}" in " ".join(out.split())
        assert "Traceback" not in out
        assert _attempts(store_url) == []
    finally:
        holder.close()


def _wait_for_running_run(url: str, proc: subprocess.Popen, timeout: float = 300) -> int:
    """The id of the run the sweep ``proc`` holds, once it is written (the sweep has started its jobs)."""
    deadline = time.monotonic() + timeout
    engine = session.create_engine_for(url)
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with engine.connect() as conn:
                    run_id = conn.execute(text("SELECT id FROM runs WHERE status = 'running'")).scalar()
            except Exception:  # noqa: BLE001 - the store is being created
                run_id = None
            if run_id is not None:
                return run_id
            time.sleep(0.2)
    finally:
        engine.dispose()
    raise AssertionError(f"the first sweep never held a run: {_finish(proc)}")


def test_a_second_sweep_while_the_first_runs_exits_2_and_no_job_runs_twice_on_sqlite(sqlite_url):
    from orchestrator.store import migrate

    migrate.upgrade(sqlite_url)
    _, jobs = _plan_key()
    first = _sweep(sqlite_url)
    run_id = _wait_for_running_run(sqlite_url, first)
    rc2, out2 = _finish(_sweep(sqlite_url), timeout=200)
    rc1, out1 = _finish(first)
    assert rc1 == 0, out1
    if rc2 == 2:  # refused while the first ran, naming it
        assert f"run {run_id} of this plan is being run by pid {first.pid}" in " ".join(out2.split()), out2
    else:  # the first had finished all its jobs already: nothing left to run
        assert rc2 == 0 and f"all {jobs} jobs have good results" in " ".join(out2.split()), out2
    attempts = _attempts(sqlite_url)
    assert all(n == 1 for _, _, n in attempts), f"a job ran twice in one run: {attempts}"
    assert len(attempts) == jobs and {r for r, _, _ in attempts} == {run_id}


def test_a_second_sweep_told_to_wait_runs_after_the_first_on_postgresql(pg_url):
    from orchestrator.store import migrate

    migrate.upgrade(pg_url)
    _, jobs = _plan_key()
    first = _sweep(pg_url)
    run_id = _wait_for_running_run(pg_url, first)
    rc2, out2 = _finish(_sweep(pg_url, "wait_for_run=true"))
    rc1, out1 = _finish(first)
    assert rc1 == 0 and rc2 == 0, out1 + out2
    said = " ".join(out2.split())
    assert f"all {jobs} jobs have good results" in said, said
    assert f"waiting: run {run_id} of this plan is being run by pid {first.pid}" in said or "nothing to run" in said
    attempts = _attempts(pg_url)
    assert all(n == 1 for _, _, n in attempts) and len(attempts) == jobs, attempts
