"""Careless or hostile input at the command line is one line and an exit code, never a traceback: store URLs that
cannot be parsed or name another database, huge integers, over-long sweep names, negative seeds, Ctrl-C outside a
sweep, an unreachable cluster.address, a dashboard port in use or a bad --host.  Each case runs the command's main
function in this process (no Ray, no subprocess)."""

from __future__ import annotations

import contextlib
import io
import socket

import pytest
from rich.console import Console

from orchestrator import __main__ as orchestrator_main
from orchestrator.cli import commands as cli
from orchestrator.config import compose as config
from orchestrator.config.compose import ConfigError
from orchestrator.config.validate import validate
from orchestrator.run import schedule
from tests.store import results_files as rf

SMALL = ["sweep.kernels=[rmsnorm]", "sweep.shapes=[[1,8,64]]", "sweep.dtypes=[fp32]", "sweep.kinds=[correctness]"]
BAD_URLS = {
    "mysql://u:pw-Secret@h/db": "the store is SQLite or PostgreSQL, not 'mysql'",
    "postgresql://u:pw-Secret@h:notaport/db": "cannot be parsed",
    "://nothing": "cannot be parsed",
}
COMMANDS = [
    ["db", "current"],
    ["db", "upgrade"],
    ["runs"],
    ["report"],
    ["export", "--format", "csv"],
    ["regressions"],
    ["import", "results.jsonl"],
]


def one_line(capsys, rc: int, *needles: str, code: int = 2) -> str:
    out, err = capsys.readouterr()
    assert rc == code, out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in out + err, err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("url", sorted(BAD_URLS))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0] + (c[1] if c[0] == "db" else ""))
def test_a_bad_store_url_is_one_line_on_every_store_command(url, command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rf.write(tmp_path / "results.jsonl", rf.lines("e" * 40, n=1))  # a good file: the store URL is what fails
    rc = orchestrator_main.main([*command, "--url", url])
    line = one_line(capsys, rc, BAD_URLS[url])
    assert "pw-Secret" not in line


@pytest.mark.parametrize("url", sorted(BAD_URLS))
def test_a_bad_store_url_is_one_line_for_a_sweep_and_the_dashboard(url, capsys, monkeypatch):
    from orchestrator.run import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "_local_gpu", lambda: True)  # no CPU price calibration: straight to the store
    rc = orchestrator_main.main(["+sweep=smoke", f"store.url={url}", *SMALL])
    assert "pw-Secret" not in one_line(capsys, rc, BAD_URLS[url])
    from dashboard import __main__ as dashboard_main

    with pytest.raises(SystemExit) as stop:
        dashboard_main.main(["--db", url, "--port", str(_free_port())])
    assert "pw-Secret" not in one_line(capsys, stop.value.code, "cannot open the store")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "99999999999999999999999999"],
        ["report", "0"],
        ["export", "--run", "-5"],
        ["regressions", "1", "--baseline", "100000000000000000000"],
        ["runs", "--limit", "0"],
    ],
)
def test_out_of_range_integers_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv, Console(file=io.StringIO()))
    assert stop.value.code == 2
    _, err = capsys.readouterr()
    assert "Traceback" not in err and "is not a" in err.splitlines()[-1]


def test_a_huge_limit_lists_every_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    out = io.StringIO()
    assert cli.main(["db", "upgrade", "--url", url], Console(file=out)) == 0
    assert cli.main(["runs", "--limit", "9" * 40, "--url", url], Console(file=out)) == 0
    assert "holds no run yet" in out.getvalue()


@pytest.mark.parametrize(
    "override, needle",
    [
        ("sweep.name=" + "n" * 300, "sweep.name: expected 1 to 200 characters"),
        ("sweep.seed=-1", "sweep.seed: must be an integer >= 0"),
    ],
)
def test_sweep_values_the_store_or_workers_run_would_refuse_are_refused_first(override, needle):
    cfg = config.to_plain(config.compose(["+sweep=smoke", override, *SMALL]))
    with pytest.raises(ConfigError, match=needle):
        validate(cfg)


def test_a_zero_seed_stays_valid_for_the_sweep_and_the_plan():
    from orchestrator.plan.jobs import plan
    from workers.runtime import runner

    cfg = config.to_plain(config.compose(["+sweep=smoke", "sweep.seed=0", *SMALL]))
    validate(cfg)
    for spec in plan(cfg):
        runner.check_params(spec.params)


def test_ctrl_c_outside_a_sweep_is_one_line(monkeypatch, capsys, tmp_path):
    from orchestrator.interchange import importer

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(importer, "import_results", interrupted)
    rc = orchestrator_main.main(["import", str(tmp_path / "r.jsonl")])
    one_line(capsys, rc, "interrupted (Ctrl-C)", code=130)
    monkeypatch.setattr(config, "compose", interrupted)  # start-up: composing the config
    rc = orchestrator_main.main(["+sweep=smoke"])
    one_line(capsys, rc, "interrupted (Ctrl-C)", code=130)


def test_ctrl_c_during_workers_run_is_one_line_naming_resume(monkeypatch, capsys, tmp_path):
    from workers import __main__ as workers_main
    from workers.runtime import runner

    plan = tmp_path / "plan.jsonl"
    runner.write_plan(plan, {"sweep": "s", "plan_key": "p", "commit": "c"}, [])

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "read_plan", interrupted)
    rc = workers_main.main(["run", str(plan), "--out", str(tmp_path / "r.jsonl")])
    one_line(capsys, rc, "interrupted (Ctrl-C)", "--resume", code=130)


def test_an_unreachable_cluster_address_fails_at_once_in_one_line():
    port = _free_port()  # nothing listens there
    with pytest.raises(ConfigError, match=rf"cluster.address=127.0.0.1:{port}: cannot reach the Ray head"):
        schedule.check_reachable(f"127.0.0.1:{port}", timeout_s=2)
    with pytest.raises(ConfigError, match="expected HOST:PORT"):
        schedule.check_reachable("not-an-address")
    with pytest.raises(ConfigError, match="cannot reach the Ray head"):
        schedule.RayCluster(f"127.0.0.1:{port}").start()  # before Ray's own connect, which retries for minutes


def test_the_dashboard_refuses_a_port_in_use_and_a_bad_host_in_one_line(capsys):
    from dashboard import __main__ as dashboard_main

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(SystemExit) as stop:
            dashboard_main.main(["--port", str(port)])
        one_line(capsys, stop.value.code, f"cannot listen on 127.0.0.1:{port}")
    with pytest.raises(SystemExit) as stop:
        dashboard_main.main(["--host", "no such host!", "--port", str(_free_port())])
    one_line(capsys, stop.value.code, "--host no such host!")


def test_read_only_commands_create_no_folder(tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "folder" / "kf.db"
    with contextlib.redirect_stdout(io.StringIO()):
        for argv in (["runs"], ["export", "--format", "csv"], ["report"], ["regressions"]):
            rc = cli.main([*argv, "--url", str(missing)], Console(file=io.StringIO()))
            assert rc == 2, argv
            assert not (tmp_path / "no").exists(), argv
    capsys.readouterr()
    from dashboard import __main__ as dashboard_main

    with pytest.raises(SystemExit):
        dashboard_main.open_store(str(missing))
    assert not (tmp_path / "no").exists()
