"""The store's password stays on the driver: a sweep on a token-authenticated cluster, its store a PostgreSQL URL
with a password in $KERNELFLEET_DB, leaves the password in no file of the Ray session (logs, runtime_env records).

The cluster (ray.cluster_utils.Cluster: a head and one labelled node) runs in a process of its own with
RAY_AUTH_MODE=token and a fresh token, so this test process's Ray settings stay as they were.  The PostgreSQL role
with the password is created here (the test server trusts local connections, so the password is carried but not
checked: enough to see where it goes).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.orchestrator.test_fleet_targets import TINY as TINY_SWEEP

REPO = Path(__file__).resolve().parents[2]
PG_ADMIN_URL = os.environ.get("KERNELFLEET_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
SECRET = "Pw-" + secrets.token_hex(8)
TINY = [*TINY_SWEEP, "target=r9700"]  # one rmsnorm correctness job on a tiny shape, on the cluster's node
CLUSTER = """
import sys
from ray.cluster_utils import Cluster
from orchestrator.fleet.labels import NODE_RESOURCE
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                        "temp_dir": sys.argv[1]})
cluster.add_node(num_cpus=1, num_gpus=1, labels={"kernelfleet.io/gpu": "r9700", "kernelfleet.io/vendor": "amd"},
                 resources={NODE_RESOURCE: 1})
print("ADDRESS", cluster.address, flush=True)
sys.stdin.read()  # until the test closes our stdin
cluster.shutdown()
"""


@pytest.fixture(scope="module")
def token_cluster():
    root = Path(tempfile.mkdtemp(prefix="kfs", dir="/tmp"))  # short: Ray's socket paths live under it
    token = secrets.token_hex(32)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token, HOME=str(root))
    proc = subprocess.Popen(
        [sys.executable, "-c", CLUSTER, str(root / "rt")],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(root / "cluster.log", "w"),
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("ADDRESS "), (root / "cluster.log").read_text()[-3000:]
        yield line.split()[1], env, root / "rt"
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def secret_store(request):
    """A PostgreSQL database of its own, owned by a role with a password; its URL carries the password."""
    if os.environ.get("CI", "").lower() not in ("true", "1", "yes"):
        try:
            create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3}).connect().close()
        except Exception as exc:
            pytest.skip(f"PostgreSQL is unreachable: {exc}")
    name = "kf_leak_" + secrets.token_hex(6)
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE ROLE {name} LOGIN PASSWORD '{SECRET}'"))
        conn.execute(text(f"CREATE DATABASE {name} OWNER {name}"))
    try:
        yield f"postgresql://{name}:{SECRET}@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            conn.execute(text(f"DROP ROLE IF EXISTS {name}"))
        admin.dispose()


def _files_holding(root: Path, needle: bytes) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle in path.read_bytes():
                    found.append(str(path.relative_to(root)))
            except OSError:  # a socket or a file removed meanwhile
                continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("given", ["KERNELFLEET_DB", "store.url"])
def test_a_cluster_sweep_leaves_the_store_password_in_no_ray_file(token_cluster, secret_store, given):
    address, env, ray_temp = token_cluster
    store = [f"store.url={secret_store}"] if given == "store.url" else []
    run_env = {
        **env,
        **({"KERNELFLEET_DB": secret_store} if given == "KERNELFLEET_DB" else {}),
        "KERNELFLEET_PLUGINS": "",  # the nodes get the checkout without tests/
        "KERNELFLEET_MEASURE_CEILING": "0",  # no 1 GiB copy on a CPU
        "COLUMNS": "200",
    }
    r = subprocess.run(
        [sys.executable, "-m", "orchestrator", *TINY, *store, f"cluster.address={address}"],
        cwd=REPO,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=420,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert SECRET not in out and "***@127.0.0.1" in out
    time.sleep(2)  # the runtime-env agent writes its log lines as the job's workers start and go
    session = ray_temp / "session_latest"
    agent_logs = list(session.resolve().glob("logs/runtime_env_agent*.log"))
    assert agent_logs, sorted(p.name for p in (session / "logs").iterdir())
    # the variables a node does need still travel (so the log records them and would show the password)
    assert any(b"KERNELFLEET_MEASURE_CEILING" in p.read_bytes() for p in agent_logs)
    assert _files_holding(ray_temp, SECRET.encode()) == []
    assert _files_holding(session.resolve() / "logs", b"KERNELFLEET_DB") == []
