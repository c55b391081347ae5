"""A store URL's password is never printed, stored or written to a plan or results file.

The PostgreSQL test server trusts local connections, so a URL that carries a password connects as well as one
without: every command is run with one and its output, the rows it stores and the files it writes are searched
for the password.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter

import pytest
from rich.console import Console
from sqlalchemy import text
from sqlalchemy.engine import make_url

from orchestrator.cli import commands as cli
from orchestrator.config import compose as config
from orchestrator.plan.jobs import plan as expand
from orchestrator.run import sweep as sweep_mod
from orchestrator.store import session
from orchestrator.store.writer import StoreWriter
from tests.store import results_files as rf

SECRET = "hunter2-Secret"
SMALL = ["sweep.kernels=[rmsnorm]", "sweep.shapes=[[1,8,64]]", "sweep.dtypes=[fp32]", "sweep.kinds=[correctness]"]


@pytest.fixture
def secret_url(pg_url: str) -> str:
    """The test schema's URL with a password (the server trusts local connections and ignores it)."""
    return make_url(pg_url).set(password=SECRET).render_as_string(hide_password=False)


def run_cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=out, width=200, soft_wrap=True)
    with contextlib.redirect_stderr(err):
        rc = cli.main(list(args), console)
    return rc, out.getvalue() + err.getvalue()


def stored_text(url: str) -> str:
    engine = session.create_engine_for(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT sweep, config, plan_key FROM runs")).all()
    finally:
        engine.dispose()
    return json.dumps([list(map(str, r)) for r in rows])


def test_display_url_masks_passwords_of_any_url():
    assert SECRET not in session.display_url(f"postgresql://u:{SECRET}@h:5432/db")
    assert SECRET not in session.display_url(f"postgresql://u:{SECRET}@h:notaport/db")  # unparsable
    assert session.display_url("relative/path.db") == "relative/path.db"


def test_db_upgrade_and_current_print_no_password(secret_url):
    rc, out = run_cli("db", "upgrade", "--url", secret_url)
    assert rc == 0, out
    assert "schema" in out and SECRET not in out and "***" in out
    rc, out = run_cli("db", "current", "--url", secret_url)
    assert rc == 0, out
    assert SECRET not in out and "***" in out


def test_import_prints_and_stores_no_password(secret_url, tmp_path):
    path = rf.write(tmp_path / "r.jsonl", rf.lines("a" * 40))
    rc, out, err = rf.run_import(str(path), "--url", secret_url)
    assert rc == 0, out + err
    assert "imported" in out and SECRET not in out + err
    rc, out, err = rf.run_import(str(path), "--url", secret_url)  # imported before
    assert rc == 0 and "before" in out and SECRET not in out + err
    assert SECRET not in stored_text(secret_url)


def test_a_dry_run_plan_and_its_results_header_hold_no_password(tmp_path, monkeypatch):
    url = f"postgresql://kf:{SECRET}@127.0.0.1:5432/test"
    cfg = config.to_plain(config.compose(["+sweep=smoke", f"store.url={url}", *SMALL]))
    out = tmp_path / "plan.jsonl"
    cfg["plan_out"] = str(out)
    console = Console(file=io.StringIO(), width=200)
    assert sweep_mod.write_dry_run(cfg, expand(cfg), console) == 0
    written = out.read_text()
    assert SECRET not in written and "kf:***@127.0.0.1" in written
    from workers.runtime import runner

    header, _ = runner.read_plan(out)
    assert SECRET not in runner.results_header(header)
    assert cfg["store"]["url"] == url  # the sweep itself still connects with the password


def test_a_sweep_stores_its_config_without_the_password(secret_url):
    cfg = config.to_plain(config.compose(["+sweep=smoke", f"store.url={secret_url}", *SMALL]))
    session_out = io.StringIO()
    console = Console(file=session_out, width=200)
    sw = sweep_mod._Sweep(cfg, console)
    from orchestrator.store.open import open_writer

    sw.writer, sw.url = open_writer(secret_url, console)
    try:
        sw.specs = expand(cfg)
        sw.header = sweep_mod.plan_header(cfg, sw.specs)
        sw.keys = [s.key for s in sw.specs]
        sw.find_resumable()
        sw.take_stock()
        sw.execute = Counter  # no Ray: the run is claimed, recorded and finished with nothing executed
        rc = sw.run(sweep_mod._Signals(console))
    finally:
        sw.writer.close()
    assert rc == sweep_mod.EXIT_FAILED  # its jobs stay pending: nothing was executed
    printed = session_out.getvalue()
    assert "store" in printed and SECRET not in printed
    stored = stored_text(secret_url)
    assert "smoke" in stored and SECRET not in stored


def test_the_writer_keeps_the_password_to_connect(secret_url):
    from orchestrator.store import migrate

    migrate.upgrade(secret_url)
    with StoreWriter(secret_url) as w:  # the real URL still connects
        assert w.url == secret_url


def test_an_old_plans_password_is_not_stored_by_an_import(store_url, tmp_path):
    lines = rf.lines("7" * 40)
    lines[0]["plan"]["config"]["store"] = {"url": f"postgresql://kf:{SECRET}@db:5432/kf"}
    path = rf.write(tmp_path / "r.jsonl", lines)
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 0, out + err
    stored = stored_text(store_url)
    assert SECRET not in stored and "kf:***@db" in stored


def test_report_json_of_a_run_that_does_not_exist_names_the_store_masked(secret_url):
    rc, out = run_cli("db", "upgrade", "--url", secret_url)
    assert rc == 0, out
    for args in (["report", "999", "--json"], ["report", "999"], ["report", "--json"]):
        rc, out = run_cli(*args, "--url", secret_url)
        assert rc == 2, out
        assert SECRET not in out and "***@" in out, out


def _sweep_cli(*args: str) -> tuple[int, str, str]:
    import subprocess
    import sys
    from pathlib import Path

    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return p.returncode, p.stdout, p.stderr


def test_a_syntax_error_in_another_override_names_that_override_and_no_password():
    url = f"store.url=postgresql://kf:{SECRET}@127.0.0.1:5432/test?connect_timeout=3"
    rc, out, err = _sweep_cli("+sweep=smoke", url, "sweep.shapes=[[1,2")
    assert rc == 2 and out == "" and err.count("\n") == 1, out + err
    assert SECRET not in err and "store.url" not in err
    assert "bad override sweep.shapes=[[1,2:" in err
    # the quoting hint still comes for the override that needs it, its password masked
    rc, out, err = _sweep_cli("+sweep=smoke", "sweep.impls=a=b?")
    assert rc == 2 and "bad override sweep.impls=a=b?" in err and "must be quoted" in err, err
    with pytest.raises(config.ConfigError) as exc:
        config.compose(["+sweep=smoke", f"store.url=postgresql://kf:{SECRET}@db:5432/kf", "sweep.rep_ms=[["])
    assert SECRET not in str(exc.value) and "sweep.rep_ms=[[" in str(exc.value)


def test_cfg_job_prints_the_store_url_masked():
    rc, out, err = _sweep_cli("+sweep=smoke", f"store.url=postgresql://kf:{SECRET}@127.0.0.1:5432/test", "--cfg", "job")
    assert rc == 0, err
    assert SECRET not in out + err and "url: postgresql://kf:***@127.0.0.1:5432/test" in out
