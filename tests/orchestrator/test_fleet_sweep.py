"""Sweeps over a simulated fleet (ray.cluster_utils.Cluster: labelled nodes with logical GPUs on this machine).

One sweep runs through orchestrator.run.schedule.execute while the fleet changes under it: one of three mi355x nodes is
killed mid-batch, a fourth mi355x node joins, and the only r9700 node is killed.  The tests below each check one
consequence of that sweep.  Jobs are `noop` micro-benchmarks (test plugin kernel) long enough to overlap the changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.fleet.labels import NODE_RESOURCE
from orchestrator.run import schedule
from workers.spec import JobSpec

# one sweep over a changing fleet, checked by every test below
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GPU = "kernelfleet.io/gpu"


def _job(target: str, i: int, rep_ms: float, kind: str = "micro", **params) -> JobSpec:
    return JobSpec(
        kind=kind,
        kernel="noop",
        shape=[1 << 18],
        dtype="fp32",
        impls=["boom", "eager"],
        target=target,
        key=f"{target}-{kind}-{i}",
        params={"timeout_s": 120, "seed": 1, "warmup_ms": 1, "rep_ms": rep_ms, "rounds": 1, "graph": False, **params},
    )


def _labels(gpu: str) -> dict[str, str]:
    return {GPU: gpu, "kernelfleet.io/vendor": "amd"}


@pytest.fixture(scope="module")
def quiet_sandbox():
    """Nodes inherit this process's environment: skip the sandbox's copy-bandwidth measurement (1 GiB on a CPU)."""
    old = os.environ.get("KERNELFLEET_MEASURE_CEILING")
    os.environ["KERNELFLEET_MEASURE_CEILING"] = "0"
    yield
    if old is None:
        os.environ.pop("KERNELFLEET_MEASURE_CEILING", None)
    else:
        os.environ["KERNELFLEET_MEASURE_CEILING"] = old


class _Sweep:
    def __init__(self):
        self.results: list = []
        self.lost: list[tuple[str, str]] = []
        self.events: list[tuple[float, str]] = []
        self.t0 = time.monotonic()

    def event(self, what: str) -> None:
        self.events.append((time.monotonic() - self.t0, what))


@pytest.fixture(scope="module")
def changing_fleet(quiet_sandbox):
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = {}
    try:
        for name, gpu in (("a1", "mi355x"), ("a2", "mi355x"), ("a3", "mi355x"), ("b1", "r9700")):
            nodes[name] = cluster.add_node(num_cpus=1, num_gpus=1, labels=_labels(gpu), resources={NODE_RESOURCE: 1})
        ray.init(address=cluster.address, log_to_driver=False)
        sweep = _Sweep()
        a_jobs = [_job("mi355x", i, 250) for i in range(18)]
        b_jobs = [_job("r9700", i, 250) for i in range(6)]
        pending: list = []  # fleet changes, made on the driver's main thread (Ray starts nodes only there)
        triggered: set[str] = set()

        def kill_a1_and_join_a4():
            cluster.remove_node(nodes["a1"], allow_graceful=False)
            sweep.event("a1 removed")
            nodes["a4"] = cluster.add_node(
                num_cpus=1, num_gpus=1, labels=_labels("mi355x"), resources={NODE_RESOURCE: 1}
            )
            sweep.event("a4 joined")

        def kill_b1():
            cluster.remove_node(nodes["b1"], allow_graceful=False)
            sweep.event("b1 removed")

        def on_result(res):
            sweep.results.append(res)
            for name, action in (("a1", kill_a1_and_join_a4), ("b1", kill_b1)):
                if res.node_id == nodes[name].node_id and name not in triggered:
                    sweep.event(f"first result from {name}")
                    triggered.add(name)
                    pending.append(action)

        def on_tick():
            while pending:
                pending.pop(0)()

        cl = schedule.RayCluster(cluster.address)
        start = time.monotonic()
        schedule.execute(
            cl,
            a_jobs + b_jobs,
            lambda s: {GPU: s.target},
            on_result,
            lambda spec, why: sweep.lost.append((spec.key, why)),
            batch_size=3,
            max_retries=3,
            no_node_grace_s=3.0,
            on_tick=on_tick,
        )
        sweep.wall_s = time.monotonic() - start
        sweep.nodes = {k: n.node_id for k, n in nodes.items()}
        sweep.a_keys = {s.key for s in a_jobs}
        sweep.b_keys = {s.key for s in b_jobs}
        sweep.address = cluster.address
        yield sweep, cluster, nodes
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_every_job_is_stored_exactly_once_although_a_node_died_mid_batch(changing_fleet):
    sweep, _, _ = changing_fleet
    names = [e[1] for e in sweep.events]
    assert "a1 removed" in names and "a4 joined" in names, sweep.events
    a_results = [r for r in sweep.results if r.key in sweep.a_keys]
    assert sorted(r.key for r in a_results) == sorted(sweep.a_keys)  # each once: no duplicates, none missing
    assert all(r.status == "ok" for r in a_results), [(r.key, r.status, r.error) for r in a_results]
    assert not [k for k, _ in sweep.lost if k in sweep.a_keys]
    # The killed node delivered the first job of its batch; the rest of that batch came from another node.
    from_a1 = [r for r in a_results if r.node_id == sweep.nodes["a1"]]
    assert from_a1 and len(from_a1) < 18


def test_jobs_land_only_on_nodes_whose_labels_match(changing_fleet):
    sweep, _, _ = changing_fleet
    a_nodes = {sweep.nodes[n] for n in ("a1", "a2", "a3", "a4")}
    for r in sweep.results:
        assert r.node_id in (a_nodes if r.key in sweep.a_keys else {sweep.nodes["b1"]}), (r.key, r.node_id)


def test_a_node_that_joins_during_the_sweep_takes_work(changing_fleet):
    sweep, _, _ = changing_fleet
    assert any(r.node_id == sweep.nodes["a4"] for r in sweep.results), sweep.events


def test_when_the_last_node_of_a_type_goes_its_jobs_end_lost_and_the_sweep_ends(changing_fleet):
    sweep, _, _ = changing_fleet
    done = {r.key for r in sweep.results if r.key in sweep.b_keys}
    lost = {k for k, _ in sweep.lost}
    assert done, "b1 delivered at least the result that triggered its removal"
    assert lost and lost.isdisjoint(done) and lost | done == sweep.b_keys
    assert len(sweep.lost) == len(lost)  # lost once each
    for _, why in sweep.lost:
        assert "no live node matches kernelfleet.io/gpu=r9700" in why and "waited 3 s" in why


def test_node_list_shows_the_dead_and_the_live_with_labels(changing_fleet):
    sweep, _, _ = changing_fleet
    r = subprocess.run(
        [sys.executable, "-m", "orchestrator", "node", "list", "--address", sweep.address, "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert (doc["schema"], doc["schema_version"]) == ("kernelfleet.nodes", 1)
    rows = {row["node_id"]: row for row in doc["nodes"]}
    for name in ("a2", "a3", "a4"):
        row = rows[sweep.nodes[name]]
        assert row["alive"] and row["labels"][GPU] == "mi355x" and row["gpus"] == 1
        assert row["jobs_running"] == 0 and row["jobs_source"] == "resources" and row["whole_node_free"] is True
    for name in ("a1", "b1"):
        assert rows[sweep.nodes[name]]["alive"] is False
    assert sum(1 for row in rows.values() if row["head"]) == 1
    table = subprocess.run(
        [sys.executable, "-m", "orchestrator", "node", "list", "--address", sweep.address],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert table.returncode == 0 and "mi355x" in table.stdout and "dead" in table.stdout
    assert "4 alive, 2 dead" in table.stdout


def test_node_leave_drains_a_node_and_it_goes(changing_fleet):
    sweep, _, _ = changing_fleet
    a4 = sweep.nodes["a4"]
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "node",
            "leave",
            "--address",
            sweep.address,
            "--node-id",
            a4[:10],
            "--wait",
            "60",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "drained and left the cluster" in r.stdout
    import ray

    assert not {n["NodeID"]: n for n in ray.nodes()}[a4]["Alive"]
    again = subprocess.run(
        [sys.executable, "-m", "orchestrator", "node", "leave", "--address", sweep.address, "--node-id", "ffff"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 2 and "no node(s) match" in again.stdout
