"""Targets through the CLI against a simulated fleet: a target no live node matches is reported before anything is
submitted (exit 2); with target.wait_for_nodes=true the sweep waits until such a node joins, then runs on it;
target=all runs one copy of every job per GPU type present, each on a node of its type."""

from __future__ import annotations

import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator.fleet.labels import NODE_RESOURCE

REPO = Path(__file__).resolve().parents[2]
GPU = "kernelfleet.io/gpu"
# One small Triton-interpreter job: rmsnorm correctness on a tiny shape.
TINY = [
    "+sweep=smoke",
    "sweep.kernels=[rmsnorm]",
    "sweep.kinds=[correctness]",
    "sweep.shapes=[[1,8,64]]",
    "sweep.dtypes=[fp32]",
]


def _env() -> dict[str, str]:
    # The driver ships the checkout (without tests/) to the nodes, so no test plugins there; no 1 GiB copy on a CPU.
    return {**os.environ, "KERNELFLEET_PLUGINS": "", "KERNELFLEET_MEASURE_CEILING": "0", "COLUMNS": "200"}


@pytest.fixture(scope="module")
def r9700_fleet():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        cluster.add_node(
            num_cpus=1, num_gpus=1, labels={GPU: "r9700", "kernelfleet.io/vendor": "amd"}, resources={NODE_RESOURCE: 1}
        )
        yield cluster
    finally:
        cluster.shutdown()


def test_a_target_no_live_node_matches_fails_fast_with_exit_2(r9700_fleet, tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            *TINY,
            "target=mi355x",
            f"cluster.address={r9700_fleet.address}",
            f"store.url=sqlite:///{tmp_path}/s.db",
        ],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "target=mi355x: no live node matches kernelfleet.io/gpu=mi355x" in out
    fleet_line = out[out.index("fleet:") :].splitlines()[0]
    assert "r9700" in fleet_line and "mi355x" not in fleet_line and "wait_for_nodes=true" in out
    # nothing was written: no run, no job rows
    con = sqlite3.connect(tmp_path / "s.db")
    assert con.execute("select count(*) from runs").fetchone()[0] == 0
    assert con.execute("select count(*) from jobs").fetchone()[0] == 0


def test_wait_for_nodes_waits_until_a_matching_node_joins(r9700_fleet, tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator",
            *TINY,
            "target=mi355x",
            "target.wait_for_nodes=true",
            f"cluster.address={r9700_fleet.address}",
            f"store.url=sqlite:///{tmp_path}/s.db",
        ],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True)
    reader.start()
    out: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not any("waiting for a node matching kernelfleet.io/gpu=mi355x" in ln for ln in out):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(out)
            try:
                out.append(lines.get(timeout=1))
            except queue.Empty:
                pass
        time.sleep(2)
        assert proc.poll() is None, "the sweep must still be waiting"
        node = r9700_fleet.add_node(
            num_cpus=1, num_gpus=1, labels={GPU: "mi355x", "kernelfleet.io/vendor": "amd"}, resources={NODE_RESOURCE: 1}
        )
        proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    while not lines.empty():
        out.append(lines.get())
    text = "".join(out)
    assert proc.returncode == 0, text
    fleet_line = text[text.index("fleet:") :].splitlines()[0]
    assert "mi355x" in fleet_line and "r9700" in fleet_line and "complete" in text

    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from orchestrator.store import models

    with Session(create_engine(f"sqlite:///{tmp_path}/s.db")) as s:
        rows = s.execute(select(models.Job)).scalars().all()
    assert [j.status for j in rows] == ["ok"]
    assert rows[0].node_id == node.node_id


@pytest.fixture(scope="module")
def mixed_fleet():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        nodes = {
            t: cluster.add_node(num_cpus=1, num_gpus=1, labels={GPU: t}, resources={NODE_RESOURCE: 1})
            for t in ("h200", "mi355x")
        }
        yield cluster, {t: n.node_id for t, n in nodes.items()}
    finally:
        cluster.shutdown()


def test_target_all_runs_each_job_once_per_gpu_type_on_its_own_nodes(mixed_fleet, tmp_path):
    cluster, node_of = mixed_fleet
    db = tmp_path / "s.db"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            *TINY,
            "sweep.dtypes=[fp32,bf16]",
            "target=all",
            f"cluster.address={cluster.address}",
            f"store.url=sqlite:///{db}",
        ],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "4 jobs, 0 done earlier, 4 to run" in out  # 2 dtypes x 2 GPU types
    rows = sqlite3.connect(db).execute("select target, node_id, status from jobs").fetchall()
    assert sorted(t for t, _, _ in rows) == ["h200", "h200", "mi355x", "mi355x"]
    for target, node, status in rows:
        assert status == "ok" and node == node_of[target], (target, node)


def test_target_all_cannot_be_planned_without_a_fleet(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            *TINY,
            "sweep.dtypes=[fp32,bf16]",
            "target=all",
            "dry_run=true",
            f"plan_out={tmp_path}/p.jsonl",
        ],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert "target=all: a dry run cannot know which GPU types the fleet has" in r.stderr
