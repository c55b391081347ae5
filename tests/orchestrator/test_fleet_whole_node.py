"""End-to-end and profile jobs take a whole node: the kernelfleet_node resource, on a simulated two-GPU node."""

from __future__ import annotations

import threading
import time

import pytest

from orchestrator.fleet import nodes as fleet
from orchestrator.fleet.labels import NODE_RESOURCE
from orchestrator.run import schedule
from workers.spec import JobSpec

GPU = "kernelfleet.io/gpu"


def _job(i: int, rep_ms: float, **params) -> JobSpec:
    return JobSpec(
        kind="micro",
        kernel="noop",
        shape=[1 << 18],
        dtype="fp32",
        impls=["boom", "eager"],
        target="mi355x",
        key=f"job-{i}",
        params={"timeout_s": 120, "seed": 1, "warmup_ms": 1, "rep_ms": rep_ms, "rounds": 1, "graph": False, **params},
    )


@pytest.fixture()
def quiet_sandbox(monkeypatch):
    monkeypatch.setenv("KERNELFLEET_MEASURE_CEILING", "0")


def test_task_options_ask_for_the_whole_node_for_e2e_and_profile():
    for kind in ("e2e", "profile"):
        assert schedule.takes_whole_node(JobSpec(kind=kind))
    assert not schedule.takes_whole_node(JobSpec(kind="micro"))
    assert schedule.takes_whole_node(JobSpec(kind="micro", params={"whole_node": True}))
    whole = schedule.task_options({GPU: "h200"}, True, True, True, 3)
    assert (
        whole["resources"] == {NODE_RESOURCE: 1} and whole["num_gpus"] == 1 and whole["label_selector"] == {GPU: "h200"}
    )
    shared = schedule.task_options({GPU: "h200"}, False, True, True, 3)
    assert shared["resources"] == {NODE_RESOURCE: schedule.NODE_SHARE}
    assert "resources" not in schedule.task_options({}, False, True, False, 3)


@pytest.mark.slow
def test_a_whole_node_job_never_shares_its_node(quiet_sandbox):
    """A node with two GPUs: two ordinary jobs may run side by side, the whole-node job runs alone."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        node = cluster.add_node(num_cpus=2, num_gpus=2, labels={GPU: "mi355x"}, resources={NODE_RESOURCE: 1})
        ray.init(address=cluster.address, log_to_driver=False)
        specs = [_job(0, 1000, whole_node=True), _job(1, 1000), _job(2, 1000)]
        results, lost, seen = [], [], {"max_in_use": 0, "whole_busy": False}
        stop = threading.Event()

        def watch():  # node list's view while the sweep runs (no dashboard: GPUs in use from resources)
            while not stop.is_set():
                for row in fleet.list_nodes(use_state_api=False):
                    if row.node_id == node.node_id:
                        seen["max_in_use"] = max(seen["max_in_use"], row.gpus_in_use or 0)
                        seen["whole_busy"] |= row.whole_node_free is False
                time.sleep(0.3)

        w = threading.Thread(target=watch)
        w.start()
        try:
            schedule.execute(
                schedule.RayCluster(cluster.address),
                specs,
                lambda s: {GPU: "mi355x"},
                results.append,
                lambda s, why: lost.append((s.key, why)),
                batch_size=1,
            )
        finally:
            stop.set()
            w.join()
        assert not lost and sorted(r.status for r in results) == ["ok"] * 3, [(r.key, r.error) for r in results]
        span = {r.key: (r.started_at, r.started_at + r.duration_s) for r in results}
        whole = span[specs[0].key]
        for other in (specs[1].key, specs[2].key):
            s, e = span[other]
            assert e <= whole[0] or s >= whole[1], (span, "a job ran beside the whole-node job")
        assert seen["max_in_use"] >= 1 and seen["whole_busy"], seen
    finally:
        ray.shutdown()
        cluster.shutdown()
