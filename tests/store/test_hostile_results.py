"""Results and stores that are wrong in ways a user did not mean: an unknown metric or an infinite duration in a
results file (refused with FILE:LINE), a store damaged at the right revision (a page error, one line from
`dashboard build`), and the counts of a sweep interrupted after some results — on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
import signal

import pytest
from rich.console import Console
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from orchestrator.config import compose as config
from orchestrator.plan.jobs import plan as expand
from orchestrator.run import schedule
from orchestrator.run import sweep as sweep_mod
from orchestrator.store import session
from orchestrator.store.query import access, run_queries
from tests.store import results_files as rf
from workers.spec import JobResult

SMALL = [
    "sweep.kernels=[rmsnorm]",
    "sweep.shapes=[[1,8,64],[1,8,128]]",
    "sweep.dtypes=[fp32]",
    "sweep.kinds=[correctness]",
]


def test_an_unknown_metric_names_its_file_and_line(store_url, tmp_path):
    lines = rf.lines("f" * 40, n=2)
    lines[2]["result"]["measurements"][0]["metric"] = "no_such_metric"
    path = rf.write(tmp_path / "r.jsonl", lines)
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 2, out + err
    assert err.startswith(f"error: {path}:3: ") and "unknown metric 'no_such_metric'" in err
    assert rf.counts(store_url)["runs"] == 0


@pytest.mark.parametrize("duration", [float("-inf"), float("inf"), -1.0, 1e308])
def test_an_impossible_duration_is_refused(store_url, tmp_path, duration):
    lines = rf.lines("f" * 40, n=1)
    lines[1]["result"]["duration_s"] = duration
    path = rf.write(tmp_path / "r.jsonl", lines)
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 2, out + err
    assert f"{path}:2: result.duration_s" in err and "not a duration" in err
    assert rf.counts(store_url)["runs"] == 0


def test_a_duration_that_ends_past_the_year_9999_is_refused(store_url, tmp_path):
    lines = rf.lines("e" * 40, n=1)
    lines[1]["result"]["started_at"] = 253402300000.0  # in 9999
    lines[1]["result"]["duration_s"] = 10_000.0
    path = rf.write(tmp_path / "r.jsonl", lines)
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 2 and err.count("\n") == 1, out + err
    assert f"{path}:2: result.duration_s" in err and "past the year 9999" in err
    assert rf.counts(store_url)["runs"] == 0


def _damage(url: str, how: str) -> None:
    engine = session.create_engine_for(url)
    try:
        with engine.begin() as conn:
            if how == "dropped table":
                conn.execute(text("DROP TABLE measurements"))
            elif how == "bad json":
                conn.execute(text("UPDATE runs SET config = '{not json'"))
            else:
                conn.execute(text("UPDATE runs SET started_at = 'yesterday-ish'"))
    finally:
        engine.dispose()


@pytest.mark.parametrize("how", ["dropped table", "bad json", "bad date"])
def test_a_damaged_store_is_a_page_error_and_one_line_from_build(store_url, tmp_path, how, capsys):
    path = rf.write(tmp_path / "r.jsonl", rf.lines("a" * 40))
    assert rf.run_import(str(path), "--url", store_url)[0] == 0
    if how != "dropped table" and not session.is_sqlite(store_url):
        with pytest.raises(DBAPIError):  # PostgreSQL's json and timestamp columns refuse such a value outright
            _damage(store_url, how)
        return
    _damage(store_url, how)
    from dashboard import __main__ as dashboard_main
    from dashboard.app import page_children

    engine = access.open_read_only(store_url)
    try:
        broken = []
        for page in ("/", "/runs", "/trends", "/bandwidth"):
            children = page_children(engine, store_url, page, "")
            shown = str(children)
            if "store-error" in shown:
                broken.append(page)
                assert "The store could not be read" in shown and "the store cannot be read: " in shown
        assert broken, "no page read the damaged part"
    finally:
        engine.dispose()
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        dashboard_main.main(["build", "--out", str(tmp_path / "site"), "--db", store_url])
    assert stop.value.code == 2
    _, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: the store cannot be read: "), err


class _NoCluster:
    """Stands in for Ray: execute() is replaced below, so the cluster only answers nodes() and stop()."""

    def nodes(self):
        return []

    def stop(self):
        pass


def test_an_interrupted_sweep_counts_the_results_it_recorded(store_url, monkeypatch):
    cfg = config.to_plain(config.compose(["+sweep=smoke", f"store.url={store_url}", *SMALL]))
    out = io.StringIO()
    console = Console(file=out, width=300)

    def execute(cluster, todo, selector_of, on_result, on_lost, **_kw):
        on_result(JobResult(key=todo[0].key, status="ok"))  # one job ends, then Ctrl-C
        raise sweep_mod.Interrupted(signal.SIGINT)

    monkeypatch.setattr(schedule, "execute", execute)
    sw = sweep_mod._Sweep(cfg, console)
    from orchestrator.store.open import open_writer

    sw.writer, sw.url = open_writer(store_url, console)
    try:
        sw.specs = expand(cfg)
        sw.header = sweep_mod.plan_header(cfg, sw.specs)
        sw.keys = [s.key for s in sw.specs]
        sw.find_resumable()
        sw.take_stock()
        sw.cluster = _NoCluster()
        rc = sw.run(sweep_mod._Signals(console))
    finally:
        sw.writer.close()
    assert rc == 128 + signal.SIGINT
    run = run_queries.run_info(store_url, sw.run_id)
    assert run["status"] == "interrupted"
    assert run["counts"]["ran"] == 1 and run["counts"]["status_ok"] == 1 and run["counts"]["planned"] == 2


def test_deeply_nested_json_is_refused_with_its_line(store_url, tmp_path):
    lines = rf.lines("f" * 40, n=1)
    lines[1]["result"]["details"]["nested"] = "DEEP"
    text_lines = [json.dumps(o, sort_keys=True) for o in lines]
    text_lines[1] = text_lines[1].replace('"DEEP"', "[" * 950 + "]" * 950)
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(text_lines) + "\n")
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 2, out + err
    # refused by the depth limit, or by the parser itself when the stack is already deep: either way FILE:LINE
    assert err.startswith(f"error: {path}:2: ") and "nested" in err and "Traceback" not in err
    assert rf.counts(store_url)["runs"] == 0


def test_a_sweep_named_with_markup_runs_and_says_its_name(store_url, monkeypatch):
    name = "[/]x[bold red]"
    cfg = config.to_plain(config.compose(["+sweep=smoke", f"store.url={store_url}", f"sweep.name='{name}'", *SMALL]))
    assert cfg["sweep"]["name"] == name
    out = io.StringIO()
    console = Console(file=out, width=300)

    def execute(cluster, todo, selector_of, on_result, on_lost, **_kw):
        for spec in todo:
            on_result(JobResult(key=spec.key, status="error", error="[/]boom"))

    monkeypatch.setattr(schedule, "execute", execute)
    sw = sweep_mod._Sweep(cfg, console)
    from orchestrator.store.open import open_writer

    sw.writer, sw.url = open_writer(store_url, console)
    try:
        sw.specs = expand(cfg)
        sw.header = sweep_mod.plan_header(cfg, sw.specs)
        sw.keys = [s.key for s in sw.specs]
        sw.find_resumable()
        sw.take_stock()
        sw.cluster = _NoCluster()
        rc = sw.run(sweep_mod._Signals(console))
    finally:
        sw.writer.close()
    assert rc == sweep_mod.EXIT_FAILED  # the jobs failed; the sweep did not
    said = out.getvalue()
    assert f"sweep {name}: 2 jobs" in said and "[/]boom" in said
    run = run_queries.run_info(store_url, sw.run_id)
    assert run["status"] == "failed" and run["counts"]["ran"] == 2


def test_an_artifact_id_past_what_the_store_holds_is_404(store_url, writer, factories):
    from dashboard.app import create_app
    from orchestrator.store.query import access

    run_id = writer.start_run("rmsnorm", {}, "plan", "c1", "h1")
    spec = factories.spec()
    writer.add_jobs(run_id, [spec])
    artifact = {"kind": "trace", "name": "trace.json", "data_b64": "e30="}
    writer.record_result(run_id, factories.result(spec, details={"artifacts": [artifact]}))
    client = create_app(access.open_read_only(store_url), store_url).server.test_client()
    kept = client.get("/artifact/1")
    assert kept.status_code == 200 and kept.data == b"{}"
    for artifact_id in ("2", "2147483648", "9223372036854775808", "99999999999999999999999"):
        assert client.get(f"/artifact/{artifact_id}").status_code == 404, artifact_id
