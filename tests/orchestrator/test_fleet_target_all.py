"""target=all: one copy of every job for each GPU type the fleet has, each run on a node of its type."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.schedule import NODE_RESOURCE

REPO = Path(__file__).resolve().parents[2]
GPU = "kernelfleet.io/gpu"
TINY = ["+sweep=smoke", "sweep.kernels=[rmsnorm]", "sweep.kinds=[correctness]", "sweep.shapes=[[1,8,64]]",
        "sweep.dtypes=[fp32,bf16]"]


def _env() -> dict[str, str]:
    return {**os.environ, "KERNELFLEET_PLUGINS": "", "KERNELFLEET_MEASURE_CEILING": "0", "COLUMNS": "200"}


@pytest.fixture(scope="module")
def mixed_fleet():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        nodes = {t: cluster.add_node(num_cpus=1, num_gpus=1, labels={GPU: t}, resources={NODE_RESOURCE: 1})
                 for t in ("h200", "mi355x")}
        yield cluster, {t: n.node_id for t, n in nodes.items()}
    finally:
        cluster.shutdown()


def test_target_all_runs_each_job_once_per_gpu_type_on_its_own_nodes(mixed_fleet, tmp_path):
    cluster, node_of = mixed_fleet
    db = tmp_path / "s.db"
    r = subprocess.run([sys.executable, "-m", "orchestrator", *TINY, "target=all", f"cluster.address={cluster.address}",
                        f"store.url=sqlite:///{db}"], cwd=REPO, env=_env(), capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "4 jobs, 0 done earlier, 4 to run" in out  # 2 dtypes x 2 GPU types
    rows = sqlite3.connect(db).execute("select target, node_id, status from jobs").fetchall()
    assert sorted(t for t, _, _ in rows) == ["h200", "h200", "mi355x", "mi355x"]
    for target, node, status in rows:
        assert status == "ok" and node == node_of[target], (target, node)


def test_target_all_cannot_be_planned_without_a_fleet(tmp_path):
    r = subprocess.run([sys.executable, "-m", "orchestrator", *TINY, "target=all", "dry_run=true",
                        f"plan_out={tmp_path}/p.jsonl"], cwd=REPO, env=_env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2
    assert "target=all: a dry run cannot know which GPU types the fleet has" in r.stderr
