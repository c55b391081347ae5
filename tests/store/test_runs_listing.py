"""`python -m orchestrator runs` lists many runs in a bounded number of queries (issue 47: --limit 1000 took 0.13 s a
run, a run summary's worth of queries per run), with the same devices per run as a run's own report."""

from __future__ import annotations

import contextlib
import io
import json

from rich.console import Console
from sqlalchemy import Engine, event

from orchestrator.cli import commands as cli
from orchestrator.store.query import run_queries


def _fill(writer, factories, n_runs: int, first: int = 0) -> list[int]:
    """``n_runs`` runs: each measures two jobs of its own, on an h200 or an mi355x by turns, and reuses the first
    run's first job (done earlier: shown with that run's attempt and device)."""
    shared = factories.spec(shape=[1, 8, 64])
    runs = []
    for i in range(first, first + n_runs):
        run_id = writer.start_run("rmsnorm", {}, f"plan-{i}", "c1", "h1")
        own = [factories.spec(shape=[2, 8, 64 * (i + 1)]), factories.spec(shape=[3, 8, 64 * (i + 1)])]
        writer.add_jobs(run_id, [*own, shared])
        device = factories.device("h200" if i % 2 else "mi355x")
        if i == 0:
            writer.record_result(run_id, factories.result(shared, factories.timing("eager", [1.0]), device=device))
        for spec in own:
            writer.record_result(run_id, factories.result(spec, factories.timing("eager", [2.0]), device=device))
        writer.finish_run(run_id, "complete", {"ok": 2})
        runs.append(run_id)
    return runs


@contextlib.contextmanager
def _statements():
    seen: list[str] = []

    def count(conn, cursor, statement, *args) -> None:
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", count)


def _runs_cli(url: str, *args: str) -> tuple[int, str, int]:
    out = io.StringIO()
    with _statements() as seen, contextlib.redirect_stdout(out):  # --json prints, the table goes to the console
        rc = cli.main(["runs", "--limit", "1000", "--url", url, *args], Console(file=out, width=250))
    return rc, out.getvalue(), len(seen)


def test_runs_devices_match_each_runs_own_and_take_a_bounded_number_of_queries(store_url, writer, factories):
    runs = _fill(writer, factories, 3)
    assert run_queries.run_devices(store_url, runs) == {
        r: run_queries.run_measured(store_url, r)["devices"] for r in runs
    }
    assert run_queries.run_devices(store_url, []) == {}
    rc, table, few = _runs_cli(store_url)
    assert rc == 0 and all(f" {r} " in table for r in runs), table
    rc, doc, few_json = _runs_cli(store_url, "--json")
    assert rc == 0
    listed = {r["id"]: r["devices"] for r in json.loads(doc)["runs"]}
    assert listed == {r: run_queries.run_measured(store_url, r)["devices"] for r in runs}
    assert all(listed.values()) and len({tuple(v) for v in listed.values()}) > 1  # devices differ between runs

    runs += _fill(writer, factories, 12, first=3)
    rc, table, many = _runs_cli(store_url)
    assert rc == 0 and all(f" {r} " in table for r in runs), table
    rc, doc, many_json = _runs_cli(store_url, "--json")
    assert len(json.loads(doc)["runs"]) == 15
    # 5 times the runs, the same number of statements
    assert (many, many_json) == (few, few_json)
    assert json.loads(doc)["runs"][0]["devices"] == run_queries.run_measured(store_url, runs[-1])["devices"]
