"""The faults the real-host fleet run (benchmarks/fleet_real.py, docs/perf/fleet.md) went through, kept fixed on a
simulated fleet (ray.cluster_utils.Cluster) and the embedded local Ray:

- `node leave` (a drain through the GCS) mid-sweep: the drained node finishes what it runs, takes nothing new, and
  every job is stored once;
- a Triton kernel that never returns (benchmarks/spin_kernel.py) is timed out, its sandbox killed, and the same node
  runs the next job of the batch;
- a rehearsal node (a GPU-type tag from `node join --label`) stores its results under the tag, marked;
- the driver killed with SIGKILL mid-sweep: the same command again resumes the run, with each job once, and its
  `results_out` file holds every result once.
(A node killed mid-batch and a node joining mid-sweep: tests/orchestrator/test_fleet_sweep.py.)
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.fleet import nodes as fleet
from orchestrator.fleet.labels import NODE_RESOURCE
from orchestrator.run import schedule
from tests.orchestrator.test_sweep_signals import _ok_jobs
from workers.spec import JobSpec

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GPU = "kernelfleet.io/gpu"


def _job(kernel: str, i: int, target: str, impls=("boom", "eager"), **params) -> JobSpec:
    return JobSpec(
        kind="micro" if kernel == "noop" else "correctness",
        kernel=kernel,
        shape=[1 << 16] if kernel == "noop" else [16],
        dtype="fp32",
        impls=list(impls),
        target=target,
        key=f"{kernel}-{target}-{i}",
        params={"timeout_s": 120, "seed": 1, "warmup_ms": 1, "rep_ms": 150, "rounds": 1, "graph": False, **params},
    )


@pytest.fixture(scope="module")
def fleet_of_three():
    """Two mi355x nodes and a rehearsal node (really mi355x), the test kernels loaded on every node."""
    import ray
    from ray.cluster_utils import Cluster

    saved = {k: os.environ.get(k) for k in ("KERNELFLEET_PLUGINS", "KERNELFLEET_MEASURE_CEILING")}
    os.environ["KERNELFLEET_PLUGINS"] = "benchmarks.fault_kernels,benchmarks.spin_kernel"
    os.environ["KERNELFLEET_MEASURE_CEILING"] = "0"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        labels = {"a1": {GPU: "mi355x"}, "a2": {GPU: "mi355x"}}
        labels["r1"] = fleet.override_labels({GPU: "mi355x"}, ["gpu=rehearsal"])
        nodes = {
            name: cluster.add_node(num_cpus=1, num_gpus=1, labels=lab, resources={NODE_RESOURCE: 1})
            for name, lab in labels.items()
        }
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster, nodes
    finally:
        ray.shutdown()
        cluster.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _execute(cluster, specs, on_result=None, on_tick=None, batch_size=2):
    results, lost = [], []

    def got(res):
        results.append(res)
        if on_result:
            on_result(res)

    schedule.execute(
        schedule.RayCluster(cluster.address),
        specs,
        lambda s: {GPU: s.target},
        got,
        lambda spec, why: lost.append((spec.key, why)),
        batch_size=batch_size,
        max_retries=3,
        no_node_grace_s=5.0,
        on_tick=on_tick,
    )
    return results, lost


def test_a_node_drained_mid_sweep_finishes_its_work_and_no_job_is_lost(fleet_of_three):
    cluster, nodes = fleet_of_three
    drained, pending = [], []
    a2 = nodes["a2"].node_id

    def on_result(res):
        if res.node_id == a2 and not drained:
            drained.append(time.time())
            pending.append(lambda: fleet.drain_node(cluster.address, a2, "test: node leave", 120))

    def on_tick():
        while pending:
            pending.pop(0)()

    specs = [_job("noop", i, "mi355x") for i in range(12)]
    results, lost = _execute(cluster, specs, on_result, on_tick, batch_size=4)
    assert drained, "a2 never delivered a result"
    assert sorted(r.key for r in results) == sorted(s.key for s in specs) and not lost  # each once, none lost
    assert all(r.status == "ok" for r in results)
    from_a2 = [r for r in results if r.node_id == a2]
    assert from_a2 and len(from_a2) < len(specs)  # it worked, then the rest went to a1
    import ray

    deadline = time.time() + 60
    while time.time() < deadline and any(n["NodeID"] == a2 and n["Alive"] for n in ray.nodes()):
        time.sleep(1)
    assert not any(n["NodeID"] == a2 and n["Alive"] for n in ray.nodes()), "the drained node did not leave"


def test_a_kernel_that_never_returns_is_timed_out_and_the_node_runs_the_next_job(fleet_of_three):
    cluster, nodes = fleet_of_three
    spin = _job("fault_spin", 0, "mi355x", impls=("spin",), timeout_s=5)
    after = [_job("noop", 100 + i, "mi355x") for i in range(2)]
    results, lost = _execute(cluster, [spin, *after], batch_size=3)
    by_key = {r.key: r for r in results}
    assert not lost and set(by_key) == {spin.key, *(s.key for s in after)}
    assert by_key[spin.key].status == "timed_out" and "timed out after 5 s" in by_key[spin.key].error
    node = by_key[spin.key].node_id
    assert all(by_key[s.key].status == "ok" and by_key[s.key].node_id == node for s in after)


def test_a_rehearsal_nodes_results_are_stored_under_its_tag_and_marked(fleet_of_three):
    cluster, nodes = fleet_of_three
    results, lost = _execute(cluster, [_job("noop", 200, "rehearsal")])
    assert not lost and len(results) == 1
    res = results[0]
    assert res.node_id == nodes["r1"].node_id
    assert res.device.gpu_type == "rehearsal" and res.device.extra["rehearsal_of"]  # the detected type, kept
    assert "rehearsal" in res.device.hardware_key


def test_a_driver_killed_mid_sweep_is_resumed_by_the_same_command(tmp_path):
    db, out = tmp_path / "kf.db", tmp_path / "results.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    env.update(HOME=str(tmp_path), KERNELFLEET_MEASURE_CEILING="0")
    args = [sys.executable, "-m", "orchestrator", "+sweep=smoke", f"store.url={db}", "sweep.batch_size=2"]
    args += ["sweep.kernels=[rmsnorm]", "sweep.rep_ms=5", f"results_out={out}"]  # 8 jobs, two a Ray task
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and _ok_jobs(db) < 2:
        time.sleep(0.5)
    assert _ok_jobs(db) >= 2, "the sweep never got going"
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its embedded Ray, as a lost machine would
    proc.wait()
    con = sqlite3.connect(db)
    assert con.execute("select status from runs").fetchall() == [("running",)]  # nobody could mark it
    before = _ok_jobs(db)

    again = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    text = again.stdout + again.stderr
    assert again.returncode == 0, text
    assert "resuming interrupted run 1" in text and f"8 jobs, {before} done earlier" in text
    assert con.execute("select id, status from runs").fetchall() == [(1, "complete")]
    assert con.execute("select count(*) from job_attempts").fetchone()[0] == 8
    lines = out.read_text().splitlines()
    header, rows = json.loads(lines[0]), [json.loads(ln) for ln in lines[1:]]
    assert header["kernelfleet"] == "results"
    keys = [r["spec"]["key"] for r in rows]
    assert len(keys) == len(set(keys)) and len(keys) >= 8 - before  # appended by the second driver, none twice
    imported = subprocess.run(
        [sys.executable, "-m", "orchestrator", "import", str(out), "--url", f"sqlite:///{tmp_path / 'again.db'}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr


def test_results_out_refuses_another_plans_file(tmp_path):
    from orchestrator.config.compose import ConfigError
    from orchestrator.run.sweep import open_results_out

    path = tmp_path / "r.jsonl"
    f = open_results_out(str(path), {"plan_key": "a", "sweep": "s"})
    f.write('{"spec": {"cut')  # a line an interrupted writer cut off
    f.close()
    open_results_out(str(path), {"plan_key": "a", "sweep": "s"}).close()  # same plan: continued
    assert path.read_text().count("\n") == 1 and "cut" not in path.read_text()
    with pytest.raises(ConfigError, match="another plan"):
        open_results_out(str(path), {"plan_key": "b", "sweep": "s"})
    with pytest.raises(ConfigError, match="does not exist"):
        open_results_out(str(tmp_path / "no" / "r.jsonl"), {"plan_key": "a"})
