"""A sweep that lost its run (stopped past the heartbeat timeout while a second sweep resumed the run) stops: it
records no more results and never writes the run's status or counts over the second sweep's, on SQLite and
PostgreSQL.  The takeover is made as the second sweep makes it (ownership.take under another pid), without
waiting out the real timeout."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from rich.console import Console
from sqlalchemy import text

from orchestrator.config import compose as config
from orchestrator.plan.jobs import plan as expand
from orchestrator.run import sweep as sweep_mod
from orchestrator.store import session
from orchestrator.store.models import utcnow
from orchestrator.store.ownership import RunTakenOver
from orchestrator.store.writer import StoreWriter
from tests.store import results_files as rf

SMALL = ["sweep.kernels=[rmsnorm]", "sweep.shapes=[[1,8,64]]", "sweep.dtypes=[fp32]", "sweep.kinds=[correctness]"]
OTHER_PID = 4_000_000  # no process has it: the "second sweep"


def take_over(url: str, run_id: int, status: str = "running", counts: str | None = None) -> None:
    """What a second sweep's claim_run (and, with a status, its finish_run) writes."""
    engine = session.create_engine_for(url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "UPDATE runs SET owner_pid = :pid, owner_host = 'other-host', heartbeat_at = :now, "
                    "owner_since = :now, status = :status, counts = :counts WHERE id = :id"
                ),
                {
                    "pid": OTHER_PID,
                    "now": utcnow().replace(tzinfo=None),
                    "status": status,
                    "counts": counts,
                    "id": run_id,
                },
            )
    finally:
        engine.dispose()


def run_row(url: str, run_id: int) -> dict:
    engine = session.create_engine_for(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(text("SELECT status, counts, owner_pid FROM runs WHERE id = :id"), {"id": run_id}).one()
            attempts = conn.execute(text("SELECT count(*) FROM job_attempts")).scalar_one()
    finally:
        engine.dispose()
    return {"status": row[0], "counts": row[1], "owner_pid": row[2], "attempts": attempts}


def test_the_displaced_writer_records_nothing_and_never_finishes_the_run(store_url):
    with StoreWriter(store_url) as w:
        specs = rf.specs("d" * 40, 2)
        run_id, _ = w.claim_run("smoke", {}, "plan-x", "c", "h")
        w.add_jobs(run_id, [s.to_dict() for s in specs])
        assert w.record_result(run_id, rf.result(specs[0]).to_dict())
        take_over(store_url, run_id, status="complete", counts='{"planned": 2, "status_ok": 2}')
        before = run_row(store_url, run_id)
        with pytest.raises(RunTakenOver, match=rf"run {run_id} was taken over by pid {OTHER_PID} on other-host"):
            w.record_result(run_id, rf.result(specs[1]).to_dict())
        with pytest.raises(RunTakenOver):
            w.finish_run(run_id, "failed", {"planned": 2, "ran": 16})
        assert run_row(store_url, run_id) == before  # the second sweep's record stands
        assert not w.heartbeat(run_id)


def test_a_displaced_sweep_stops_scheduling_and_leaves_the_run(store_url):
    cfg = config.to_plain(config.compose(["+sweep=smoke", f"store.url={store_url}", *SMALL]))
    out = io.StringIO()
    console = Console(file=out, width=300)
    sw = sweep_mod._Sweep(cfg, console)
    from orchestrator.store.open import open_writer

    sw.writer, sw.url = open_writer(store_url, console)
    seen: list[str] = []

    def execute() -> Counter:
        """The paused sweep comes back: the run was taken over meanwhile, and its next result is refused."""
        take_over(store_url, sw.run_id)
        spec = sw.todo[0]
        from workers.spec import JobResult

        seen.append(spec.key)
        sw.writer.record_result(sw.run_id, JobResult(key=spec.key, status="ok").to_dict())
        raise AssertionError("the displaced sweep went on scheduling")

    try:
        sw.specs = expand(cfg)
        sw.header = sweep_mod.plan_header(cfg, sw.specs)
        sw.keys = [s.key for s in sw.specs]
        sw.find_resumable()
        sw.take_stock()
        sw.execute = execute
        rc = sw.run(sweep_mod._Signals(console))
    finally:
        sw.writer.close()
    assert rc == sweep_mod.EXIT_FAILED and seen
    said = " ".join(out.getvalue().split())
    assert f"run {sw.run_id} was taken over by pid {OTHER_PID}" in said and "stopped" in said
    row = run_row(store_url, sw.run_id)
    assert row == {"status": "running", "counts": None, "owner_pid": OTHER_PID, "attempts": 0}
