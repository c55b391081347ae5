"""Token authentication with real Ray processes: a head from `cluster up --block` (RAY_AUTH_MODE=token, a fresh
token), nodes and drivers without the token refused with the fix, and a node with it joining, listed and drained.

Every process here runs with HOME set to an empty directory, so no ~/.ray/auth_token of this machine leaks in.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "fixtures" / "nodes" / "h200"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.home.mkdir()
        self.token = root / "cluster.token"
        self.temp = root / "rt"
        self.port = _free_port()
        self.address = ""
        self.procs: list[subprocess.Popen] = []

    def env(self, **extra) -> dict[str, str]:
        e = {
            k: v
            for k, v in os.environ.items()
            if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")
        }
        e.update(HOME=str(self.home), COLUMNS="250", **extra)
        return e

    def cli(self, *args: str, timeout: float = 120, **env) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            cwd=REPO,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def spawn(self, *args: str, log: str) -> subprocess.Popen:
        p = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *args],
            cwd=REPO,
            env=self.env(),
            stdout=open(self.root / log, "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(p)
        return p

    def log(self, name: str) -> str:
        return (self.root / name).read_text(errors="replace")

    def stop(self, p: subprocess.Popen, timeout: float = 45) -> None:
        """SIGTERM the `ray start --block` we exec'd into (Ray drains and stops its own processes); SIGKILL its
        process group only if it does not end."""
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(p.pid, signal.SIGKILL)  # whatever is left of this process group (ours: start_new_session)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait(timeout=30)


@pytest.fixture(scope="module")
def lab():
    root = Path(tempfile.mkdtemp(prefix="kfa", dir="/tmp"))  # short: Ray's socket paths live under it
    lab = Lab(root)
    head = lab.spawn(
        "cluster",
        "up",
        "--block",
        "--port",
        str(lab.port),
        "--token-file",
        str(lab.token),
        f"--ray-start-arg=--temp-dir={lab.temp}",
        "--ray-start-arg=--num-cpus=0",
        "--ray-start-arg=--include-dashboard=false",
        "--ray-start-arg=--node-ip-address=127.0.0.1",
        log="head.log",
    )
    try:
        deadline = time.monotonic() + 90
        while "Ray runtime started" not in lab.log("head.log"):
            assert head.poll() is None and time.monotonic() < deadline, lab.log("head.log")
            time.sleep(0.5)
        lab.address = f"127.0.0.1:{lab.port}"
        yield lab
    finally:
        for p in reversed(lab.procs):
            lab.stop(p)
        shutil.rmtree(root, ignore_errors=True)


def test_cluster_up_wrote_a_private_token_and_printed_the_join_command(lab):
    text = lab.log("head.log")
    assert f"token: wrote a new random token to {lab.token} (mode 600)" in text
    assert (lab.token.stat().st_mode & 0o777) == 0o600 and len(lab.token.read_text().strip()) == 64
    assert "node join --address " in text and f":{lab.port} --token-file" in text
    assert "RAY_AUTH_MODE=token" in text and lab.token.read_text().strip() not in text


def test_a_node_without_the_token_is_refused_with_the_fix(lab):
    for extra in ([], ["--dry-run"]):
        r = lab.cli("node", "join", "--address", lab.address, "--from-fixtures", str(H200), *extra)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "FAIL token auth: the head uses token authentication and this node has no token" in r.stdout
        assert "ray get-auth-token" in r.stdout and "--token-file FILE" in r.stdout
        assert "RAY_AUTH_TOKEN_PATH=FILE" in r.stdout
        assert "running:" not in r.stdout


def test_a_wrong_token_is_refused(lab, tmp_path):
    wrong = tmp_path / "wrong.token"
    wrong.write_text("f" * 64)
    r = lab.cli(
        "node", "join", "--dry-run", "--address", lab.address, "--from-fixtures", str(H200), "--token-file", str(wrong)
    )
    assert r.returncode == 2
    assert f"FAIL token auth: the head rejected the token from --token-file ({wrong})" in r.stdout


def test_a_driver_without_the_token_is_refused(lab):
    r = lab.cli("node", "list", "--address", lab.address)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "uses token authentication and this process has no token" in r.stdout
    assert "ray get-auth-token" in r.stdout and "--token-file FILE" in r.stdout
    # Ray's own refusal, without our checks in front: a client of the head's GCS with a wrong token.  (A full
    # ray.init driver is refused the same way, but only after ~20 s of retries.)
    code = (
        "import ray; from ray._common.usage import usage_lib; "
        f"usage_lib.get_cluster_metadata(ray._raylet.GcsClient(address='{lab.address}'))"
    )
    raw = subprocess.run(
        [sys.executable, "-c", code],
        env=lab.env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert raw.returncode != 0
    assert "AuthenticationError" in raw.stderr and "InvalidAuthToken" in raw.stderr, raw.stderr[-2000:]


def test_a_sweep_without_the_token_is_one_line_naming_the_setting(lab, tmp_path):
    r = lab.cli("+sweep=smoke", f"cluster.address={lab.address}", f"store.url=sqlite:///{tmp_path}/s.db")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert "uses token authentication and this process has no token" in r.stderr
    assert "RAY_AUTH_TOKEN_PATH=FILE" in r.stderr and "ray get-auth-token" in r.stderr
    if (tmp_path / "s.db").exists():  # refused before the run was written
        import sqlite3

        assert sqlite3.connect(tmp_path / "s.db").execute("select count(*) from runs").fetchone()[0] == 0


@pytest.mark.slow
def test_with_the_token_a_node_joins_is_listed_and_leaves(lab):
    ok = lab.cli(
        "node",
        "join",
        "--dry-run",
        "--address",
        lab.address,
        "--from-fixtures",
        str(H200),
        "--token-file",
        str(lab.token),
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    import ray

    assert f"ok   Ray version: {ray.__version__}, as on the head" in ok.stdout
    assert "ok   token auth: the head accepted the token" in ok.stdout

    node = lab.spawn(
        "node",
        "join",
        "--block",
        "--address",
        lab.address,
        "--from-fixtures",
        str(H200),
        "--token-file",
        str(lab.token),
        f"--ray-start-arg=--temp-dir={lab.temp}",
        "--ray-start-arg=--num-cpus=1",
        "--ray-start-arg=--node-ip-address=127.0.0.1",
        log="node.log",
    )
    deadline = time.monotonic() + 90
    rows: list = []
    while time.monotonic() < deadline:
        assert node.poll() is None, lab.log("node.log")
        r = lab.cli("node", "list", "--json", "--address", lab.address, "--token-file", str(lab.token))
        assert r.returncode == 0, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        assert (doc["schema"], doc["schema_version"], doc["address"]) == ("kernelfleet.nodes", 1, lab.address)
        rows = [row for row in doc["nodes"] if row["labels"].get("kernelfleet.io/gpu") == "h200"]
        # alive, and its resources reported too: Ray's per-node resource view can lag the node table for a moment
        # after a join on a loaded machine, and node list says "unknown" (None) for it until then
        if rows and rows[0]["alive"] and rows[0]["whole_node_free"] is not None:
            break
        time.sleep(1)
    assert rows and rows[0]["alive"], lab.log("node.log")
    row = rows[0]
    assert row["labels"]["kernelfleet.io/arch"] == "sm_90" and row["labels"]["kernelfleet.io/vendor"] == "nvidia"
    assert row["gpus"] == 1 and row["whole_node_free"] is True and row["jobs_running"] == 0
    assert "RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=" in lab.log("node.log")

    left = lab.cli(
        "node",
        "leave",
        "--address",
        lab.address,
        "--token-file",
        str(lab.token),
        "--node-id",
        row["node_id"][:12],
        "--wait",
        "60",
    )
    assert left.returncode == 0, left.stdout + left.stderr
    assert "drained and left the cluster" in left.stdout
    after = lab.cli("node", "list", "--json", "--address", lab.address, "--token-file", str(lab.token))
    assert not next(r for r in json.loads(after.stdout)["nodes"] if r["node_id"] == row["node_id"])["alive"]
