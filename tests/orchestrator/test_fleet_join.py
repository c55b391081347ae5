"""`node join` before anything starts: detection on recorded nodes, the labels, the checks, the exact command.

Recorded nodes live in tests/fixtures/nodes/<gpu>/node.json (recorded rocminfo / nvidia-smi outputs plus the torch
properties of that GPU).  No head is reachable here (port 1 refuses), so the head checks are skipped with a note.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.fleet import nodes as fleet
from orchestrator.fleet.labels import NODE_RESOURCE
from tests.support.devices import ON_GPU

REPO = Path(__file__).resolve().parents[2]
NODES = REPO / "tests" / "fixtures" / "nodes"
TOOLS = REPO / "tests" / "fixtures" / "tool-output"
NO_HEAD = "127.0.0.1:1"


def _cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], cwd=REPO, env=e, capture_output=True, text=True, timeout=timeout
    )


def _variant(tmp_path: Path, base: str, name: str = "variant", **changes) -> Path:
    """A copy of a recorded node with some fields changed (tool paths made absolute)."""
    spec = json.loads((NODES / base / "node.json").read_text())
    spec["tools"] = {k: str((NODES / base / v).resolve()) for k, v in spec["tools"].items()}
    spec.update(changes)
    d = tmp_path / f"{base}-{name}"
    d.mkdir()
    (d / "node.json").write_text(json.dumps(spec))
    return d


@pytest.mark.parametrize(
    "node, expect",
    [
        ("mi355x", {"gpu": "mi355x", "arch": "gfx950", "vendor": "amd", "warp-size": "64"}),
        ("mi300x", {"gpu": "mi300x", "arch": "gfx942", "vendor": "amd", "warp-size": "64"}),
        ("rx7900xtx", {"gpu": "rx7900xtx", "arch": "gfx1100", "vendor": "amd", "warp-size": "32"}),
        ("h200", {"gpu": "h200", "arch": "sm_90", "vendor": "nvidia", "warp-size": "32"}),
    ],
)
def test_recorded_nodes_get_the_right_labels(node, expect):
    facts = fleet.load_fixture_node(NODES / node)
    labels = fleet.derive_labels(facts)
    for k, v in expect.items():
        assert labels[f"kernelfleet.io/{k}"] == v, (k, labels)
    assert {"kernelfleet.io/torch", "kernelfleet.io/triton", "kernelfleet.io/runtime", "kernelfleet.io/host"} <= set(
        labels
    )
    checks = fleet.join_checks(facts, None, None, None, labels)
    assert not fleet.failed(checks), checks


def test_dry_run_prints_the_exact_command_and_starts_nothing(tmp_path):
    token = tmp_path / "token"
    token.write_text("0123abcd" * 8)
    r = _cli(
        "node",
        "join",
        "--dry-run",
        "--address",
        NO_HEAD,
        "--from-fixtures",
        str(NODES / "mi355x"),
        "--token-file",
        str(token),
    )
    assert r.returncode == 2, r.stdout + r.stderr  # the head is unreachable: a real join would be refused
    out = r.stdout
    assert "a real join would be refused: cannot reach the head at " + NO_HEAD in " ".join(out.split())
    for label in (
        "kernelfleet.io/gpu=mi355x",
        "kernelfleet.io/arch=gfx950",
        "kernelfleet.io/vendor=amd",
        "kernelfleet.io/warp-size=64",
    ):
        assert f"  {label}\n" in out
    assert "head not reachable" in out and "versions and token not checked" in out
    cmd_line = next(ln for ln in out.splitlines() if " start --address=" in ln)
    words = shlex.split(cmd_line)
    assert words[:2] == ["RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN_PATH={token}"]
    assert Path(words[2]).name == "ray" and words[3] == "start"
    assert f"--address={NO_HEAD}" in words and "--num-gpus=1" in words
    assert f"--resources={json.dumps({NODE_RESOURCE: 1})}" in words
    labels = dict(
        kv.split("=", 1) for kv in next(w for w in words if w.startswith("--labels=")).split("=", 1)[1].split(",")
    )
    assert labels["kernelfleet.io/gpu"] == "mi355x" and labels["kernelfleet.io/arch"] == "gfx950"
    assert "--block" not in words
    assert "0123abcd" not in out  # the token itself is never printed


def test_rocr_visible_devices_alone_is_refused_with_the_fix(tmp_path):
    node = _variant(tmp_path, "mi355x", env={"ROCR_VISIBLE_DEVICES": "0,1"})
    r = _cli("node", "join", "--dry-run", "--address", NO_HEAD, "--from-fixtures", str(node))
    assert r.returncode == 2
    assert "FAIL visible devices: ROCR_VISIBLE_DEVICES=0,1 is set without HIP_VISIBLE_DEVICES" in r.stdout
    assert "set HIP_VISIBLE_DEVICES=0,1 instead" in r.stdout
    # With HIP_VISIBLE_DEVICES beside it (consistent masks) Ray does not raise: accepted.
    facts = fleet.load_fixture_node(
        _variant(tmp_path, "mi355x", "both", env={"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0"})
    )
    assert not fleet.failed(fleet.join_checks(facts, None, None, None, fleet.derive_labels(facts)))


def test_missing_amdsmi_is_refused_on_rocm_only(tmp_path):
    node = _variant(tmp_path, "mi300x", amdsmi_importable=False)
    r = _cli("node", "join", "--address", NO_HEAD, "--dry-run", "--from-fixtures", str(node))
    assert r.returncode == 2
    assert "FAIL amdsmi" in r.stdout and "/opt/rocm/share/amd_smi" in r.stdout
    h200 = fleet.load_fixture_node(NODES / "h200")
    names = [c.name for c in fleet.join_checks(h200, None, None, None, fleet.derive_labels(h200))]
    assert "amdsmi" not in names and "visible devices" not in names


def test_a_real_join_with_an_unreachable_head_starts_nothing():
    r = _cli("node", "join", "--address", NO_HEAD, "--from-fixtures", str(NODES / "h200"))
    assert r.returncode == 2
    assert "cannot reach the head at 127.0.0.1:1" in r.stdout and "cluster up" in r.stdout
    assert "running:" not in r.stdout


def test_mixed_gpu_types_no_gpu_and_too_many_gpus_are_refused(tmp_path):
    mi300 = json.loads((NODES / "mi300x" / "node.json").read_text())["torch_props"][0]
    mi355 = json.loads((NODES / "mi355x" / "node.json").read_text())["torch_props"][0]
    mixed = _variant(tmp_path, "mi300x", torch_props=[mi300, {**mi355, "index": 1}])
    facts = fleet.load_fixture_node(mixed)
    checks = fleet.join_checks(facts, None, None, 4, fleet.derive_labels(facts))
    by_name = {c.name: c for c in checks}
    assert by_name["one GPU type"].status == "fail" and "mi300x, mi355x" in by_name["one GPU type"].detail
    assert by_name["--num-gpus"].status == "fail" and "2 GPU(s) detected" in by_name["--num-gpus"].detail
    cpu = fleet.NodeFacts(
        devices=[fleet.DeviceInfo(vendor="cpu", name="x86", arch="x86_64", gpu_type="cpu")],
        env={},
        amdsmi_importable=None,
        source="test",
    )
    assert fleet.derive_labels(cpu) == {}
    assert [c.status for c in fleet.join_checks(cpu, None, None, None, {}) if c.name == "GPUs"] == ["fail"]


def test_version_and_token_checks_against_a_probed_head():
    facts = fleet.load_fixture_node(NODES / "h200")
    labels = fleet.derive_labels(facts)
    ray_v, py_v = fleet.local_versions()
    tok = fleet.Token("--token-file", Path("/etc/kernelfleet/ray_token"))

    def check(probe, token=tok):
        return {c.name: c for c in fleet.join_checks(facts, probe, token, None, labels)}

    same = check(
        fleet.HeadProbe("h:6379", True, auth="token", token_accepted=True, ray_version=ray_v, python_version=py_v)
    )
    assert not fleet.failed(list(same.values()))
    other = check(
        fleet.HeadProbe(
            "h:6379", True, auth="token", token_accepted=True, ray_version="2.59.0", python_version="3.10.14"
        )
    )
    assert other["Ray version"].status == "fail" and "ray[default]==2.59.0" in other["Ray version"].fix
    assert other["Python version"].status == "fail" and "3.10.14" in other["Python version"].detail
    no_token = check(fleet.HeadProbe("h:6379", True, auth="token", token_accepted=None), token=None)
    assert no_token["token auth"].status == "fail"
    assert "ray get-auth-token" in no_token["token auth"].fix and "--token-file" in no_token["token auth"].fix
    assert "RAY_AUTH_TOKEN_PATH" in no_token["token auth"].fix
    wrong = check(fleet.HeadProbe("h:6379", True, auth="token", token_accepted=False))
    assert wrong["token auth"].status == "fail" and "rejected the token" in wrong["token auth"].detail
    open_probe = fleet.HeadProbe("h:6379", True, auth="disabled", ray_version=ray_v, python_version=py_v)
    open_head = check(open_probe, token=None)
    assert open_head["token auth"].status == "fail" and "--insecure" in open_head["token auth"].fix
    insecure = {c.name: c for c in fleet.join_checks(facts, open_probe, None, None, labels, insecure=True)}
    assert insecure["token auth"].status == "ok" and "--insecure" in insecure["token auth"].detail


def test_token_discovery_order_and_unreadable_files(tmp_path):
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    assert fleet.find_token(None, {"HOME": str(home)}) is None
    (home / ".ray" / "auth_token").write_text("t" * 64)
    assert fleet.find_token(None, {"HOME": str(home)}).origin == "~/.ray/auth_token"
    path_tok = tmp_path / "tok"
    path_tok.write_text("u" * 64)
    assert fleet.find_token(None, {"HOME": str(home), "RAY_AUTH_TOKEN_PATH": str(path_tok)}).path == path_tok
    assert fleet.find_token(None, {"HOME": str(home), "RAY_AUTH_TOKEN": "v" * 64}).origin == "RAY_AUTH_TOKEN"
    assert fleet.find_token(str(path_tok), {"RAY_AUTH_TOKEN": "v"}).origin == "--token-file"
    with pytest.raises(fleet.FleetError, match="cannot read the token.*ray get-auth-token"):
        fleet.find_token(str(tmp_path / "missing"))
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(fleet.FleetError, match="empty"):
        fleet.find_token(str(tmp_path / "empty"))


def test_block_and_auth_environment_of_the_command():
    labels = {"kernelfleet.io/gpu": "r9700"}
    open_cmd = fleet.ray_start_command("10.0.0.1:6379", labels, 4, block=True, probe_auth="disabled", token=None)
    assert open_cmd.env == {"RAY_AUTH_MODE": "disabled"} and open_cmd.argv[-1] == "--block"
    assert "--num-gpus=4" in open_cmd.argv
    env_tok = fleet.Token("RAY_AUTH_TOKEN", None)
    hidden = fleet.ray_start_command("10.0.0.1:6379", labels, 1, block=False, probe_auth="token", token=env_tok)
    assert hidden.shown_env["RAY_AUTH_TOKEN"] == "<hidden>" and "<hidden>" in hidden.render()


def test_cluster_up_dry_run_prints_the_head_command_and_the_join_command(tmp_path):
    token = tmp_path / "cluster.token"
    port = _free_port()
    r = _cli("cluster", "up", "--dry-run", "--port", str(port), "--token-file", str(token))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not token.exists()  # a dry run writes nothing
    line = next(ln for ln in r.stdout.splitlines() if " start --head" in ln)
    words = shlex.split(line)
    assert words[:2] == ["RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN_PATH={token}"]
    assert f"--port={port}" in words and "--num-gpus=0" in words and "--dashboard-host=127.0.0.1" in words
    assert "python -m orchestrator node join --address " in r.stdout and f":{port} --token-file" in r.stdout
    assert "ray get-auth-token" in r.stdout


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def test_cluster_up_with_gpus_labels_the_head(tmp_path):
    r = _cli(
        "cluster",
        "up",
        "--dry-run",
        "--port",
        str(_free_port()),  # the default 6379 may be another head's on this machine (a dry run now says so)
        "--with-gpus",
        "--from-fixtures",
        str(NODES / "mi355x"),
        "--token-file",
        str(tmp_path / "t"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if " start --head" in ln)
    assert "kernelfleet.io/gpu=mi355x" in line and "--num-gpus=1" in line and NODE_RESOURCE in line


def test_token_file_is_created_private(tmp_path):
    p = tmp_path / "sub" / "token"
    assert fleet.ensure_token_file(p, create=False) is False
    assert fleet.ensure_token_file(p, create=True) is True
    assert len(p.read_text()) == 64 and (p.stat().st_mode & 0o777) == 0o600


def test_dry_run_against_an_address_where_nothing_listens_answers_in_seconds_without_empty_labels():
    r = _cli("node", "join", "--dry-run", "--address", NO_HEAD)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "head not reachable" in r.stdout and "Connection refused" in r.stdout
    if ON_GPU:  # the GPU's labels and its count
        assert "--labels=kernelfleet.io/gpu=" in r.stdout and "--num-gpus=0" not in r.stdout
    else:  # no GPU: no labels at all, never an empty --labels=
        assert "--labels=" not in r.stdout and "ray start --address=127.0.0.1:1 --num-gpus=0" in r.stdout


def test_the_closing_hints_name_the_token_file_and_never_a_plain_ray_stop(tmp_path, monkeypatch):
    """After a join (Ray's start stubbed, the head's probe answered) the commands it suggests work as printed: with
    the --token-file the join used; `node leave` on this machine never suggests `ray stop` (every Ray process of
    the user); `--from-fixtures` is in --help."""
    import contextlib
    import io
    import platform

    import ray
    from rich.console import Console

    from orchestrator.cli import commands as cli
    from orchestrator.cli import fleet as fleet_cli

    token = tmp_path / "ray_token"
    token.write_text("0123abcd" * 4)
    token.chmod(0o600)
    probe = fleet.HeadProbe("127.0.0.1:6379", True, "token", True, ray.__version__, platform.python_version(), None)
    monkeypatch.setattr(fleet, "probe_head", lambda address, tok: probe)
    monkeypatch.setattr(fleet_cli, "_exec_or_run", lambda cmd, block: 0)
    out = io.StringIO()
    args = ["node", "join", "--address", "127.0.0.1:6379", "--token-file", str(token)]
    with contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main([*args, "--from-fixtures", str(NODES / "h200")], Console(file=out, width=400))
    text = out.getvalue()
    assert rc == 0, text
    hint = text.split("joined.", 1)[1]
    assert f"node list --address 127.0.0.1:6379 --token-file {token}" in hint
    assert f"node leave --address 127.0.0.1:6379 --token-file {token}" in hint
    assert "not with a plain `ray stop`" in fleet_cli.LEFT_RAY_START and "end that process by its id" in (
        fleet_cli.LEFT_RAY_START
    )
    help_text = _cli("node", "join", "--help").stdout
    assert "--from-fixtures" in help_text and "tests/fixtures/nodes/" in help_text


def test_cluster_up_dry_run_notices_a_taken_port(tmp_path):
    import socket

    with socket.socket() as listening:
        listening.bind(("", 0))
        listening.listen()
        port = listening.getsockname()[1]
        r = _cli("cluster", "up", "--dry-run", "--port", str(port), "--token-file", str(tmp_path / "t"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"port {port} is taken on this machine" in r.stdout + r.stderr and "--port" in r.stdout + r.stderr


def test_a_server_that_is_not_a_ray_head_is_told_apart_at_once(tmp_path):
    """A cluster.address (or --address) where a web server listens: refused with what answered there, from the
    HTTP/2 check, not after Ray's client has retried for most of a minute."""
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        other = fleet.speaks_grpc("127.0.0.1", port)
        assert other is not None and "not as a gRPC server" in other
        probe = fleet.probe_head(f"127.0.0.1:{port}", None)
        assert not probe.reachable and "is not a Ray head" in probe.error
        r = _cli("+sweep=smoke", f"cluster.address=127.0.0.1:{port}", f"store.url=sqlite:///{tmp_path}/kf.db")
        assert r.returncode == 2 and "is not a Ray head" in r.stderr, r.stdout + r.stderr
    finally:
        server.shutdown()
