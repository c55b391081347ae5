"""python -m orchestrator bisect on a cluster: the counterpart of test_bisect.py's embedded-Ray bisect.

A real Ray cluster of simulated nodes (ray.cluster_utils.Cluster: a head without CPUs, two h200-labelled nodes with a
logical GPU each) runs every commit's sweep: ``cluster.address=...`` reaches each commit's own orchestrator, which
sends that commit's worktree to the nodes (Ray's working_dir).  The probe kernel lives only in the throwaway
repository (tests/support/bisect_history.py), so a job that ran at all ran a commit's worktree; the step found (the
probe's delay changes at one commit) shows that each commit's jobs ran its own code.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.__main__ import main
from orchestrator.fleet.labels import NODE_RESOURCE
from tests.support import bisect_history as hist

REPO = Path(__file__).resolve().parents[2]
GPU = "kernelfleet.io/gpu"
LABELS = {GPU: "h200", "kernelfleet.io/vendor": "nvidia"}


def _wait_for_nodes(address: str, node_ids: set[str], timeout_s: float = 180) -> None:
    """Until every node is alive with its resources reported: Ray's per-node resource view can lag the node table
    on a loaded machine, and a sweep started before it finds no node for its jobs."""
    deadline = time.monotonic() + timeout_s
    rows: dict = {}
    while time.monotonic() < deadline:
        r = subprocess.run(
            [sys.executable, "-m", "orchestrator", "node", "list", "--json", "--address", address],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        rows = {row["node_id"]: row for row in json.loads(r.stdout)["nodes"]}
        if all(n in rows and rows[n]["alive"] and rows[n]["whole_node_free"] is not None for n in node_ids):
            return
        time.sleep(1)
    raise AssertionError(f"the nodes did not come up within {timeout_s:g} s: {rows}")


@pytest.fixture
def h200_fleet(monkeypatch):
    """Two h200 nodes; they inherit this process's environment (the probe plugin, no copy-bandwidth measurement),
    as each commit's orchestrator also forwards it to them (runtime_env env_vars)."""
    from ray.cluster_utils import Cluster

    hist.host_only(monkeypatch)  # the nodes share one host (and on a GPU host its GPU): they time on the CPU
    monkeypatch.setenv("KERNELFLEET_PLUGINS", hist.PLUGIN)
    monkeypatch.setenv("KERNELFLEET_MEASURE_CEILING", "0")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        nodes = [
            cluster.add_node(num_cpus=1, num_gpus=1, labels=LABELS, resources={NODE_RESOURCE: 1}) for _ in range(2)
        ]
        cluster.wait_for_nodes()
        ids = {n.node_id for n in nodes}
        _wait_for_nodes(cluster.address, ids)
        yield cluster.address, ids
    finally:
        cluster.shutdown()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 6 plans, 4 sweeps on a cluster: 3+ min on an idle 2-core machine
def test_bisect_on_a_cluster_runs_each_commit_on_its_nodes_with_its_own_code(h200_fleet, tmp_path, capsys):
    """Commit 1 cannot be imported (skipped), commit 2 slows the probe from 1 to 3 ms a call: one step, whose
    candidates are the skipped commit and commit 2.  Every job ran on the cluster's nodes, in runs of the commit
    that measured it, each run driven through the cluster's address.  The runs are marked (two GPU nodes on one
    host), so the first bisect leaves them out and says so; the second, with --include-marked, judges them."""
    address, node_ids = h200_fleet
    repo = tmp_path / "repo"
    shas = hist.make_repo(
        repo,
        [
            ("probe broken", {"kernels/bisect_probe.py": "this is not python\n"}),
            ("probe sleeps 3 ms", {"kernels/bisect_probe.py": hist.probe(0.003)}),
        ],
    )
    url = f"sqlite:///{tmp_path}/store.db"
    # two shapes: with two series the between-run spread is known after two runs a side (one shape needs three)
    sweep = ["+sweep=kernels", "sweep.kinds=[micro]", "sweep.kernel_time=false", "sweep.graph=false"]
    args = ["bisect", "--good", shas[0], "--bad", shas[2], "--kernel", "probe", "--impl", "slow", "--shape", "64"]
    args += ["--dtype", "fp32", "--repo", str(repo), "--url", url, "--json", *sweep, "sweep.rep_ms=100"]
    args += ["target=h200", f"cluster.address={address}"]

    # the simulated nodes share one host, so their runs are marked (GPU shared with other nodes) and left out, as
    # regressions and compare leave them out: both ends are skipped, saying why and what judges them
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 1, err
    doc = json.loads(out)
    assert doc["changed"] is None and doc["runs"] == 4
    ends = [s for s in doc["skipped"] if s["commit"] in (shas[0], shas[2])]
    assert len(ends) == 2, doc["skipped"]
    for s in ends:
        assert "its runs are marked (GPU shared with other nodes; 2 GPU nodes on one host" in s["why"], s
        assert s["why"].endswith("--include-marked judges them")

    # with --include-marked the same bisect judges the runs it made: no run of its own this time
    code = main(["bisect", "--include-marked", *args[1:]])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)

    # the same answer as on the embedded Ray: one confirmed regression at commit 2, commit 1 skipped between
    assert [s["commit"] for s in doc["steps"]] == [shas[2]], json.dumps(doc, indent=1)[:6000]
    step = doc["steps"][0]
    assert step["status"] == "confirmed" and step["direction"] == "regression"
    assert step["candidates"] == [shas[1], shas[2]] and step["good_side"] == shas[0]
    assert 2.0 < step["change"] + 1 < 4.0
    assert [s["commit"] for s in doc["skipped"]] == [shas[1]] and "planned" in doc["skipped"][0]["why"]
    assert doc["runs"] == 0 and doc["planned_commits"] == 3

    # every run was driven through the cluster, by the commit that measured it (its own orchestrator's record)
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from orchestrator.store import models

    with Session(create_engine(url)) as s:
        runs = s.execute(select(models.Run)).scalars().all()
        attempts = s.execute(select(models.JobAttempt)).scalars().all()
        nodes = {n.node_id: n for n in s.execute(select(models.Node)).scalars().all()}
    by_commit: dict[str, int] = {}
    for run in runs:
        assert run.config["cluster"]["address"] == address, run.config["cluster"]
        assert run.status == "complete", (run.id, run.status)
        assert run.conditions and run.conditions.get("shared_gpu"), run.conditions  # the fleet's two GPU nodes
        by_commit[run.commit] = by_commit.get(run.commit, 0) + 1
    assert by_commit == {shas[0]: 2, shas[2]: 2}
    assert {*step["baseline_runs"], *step["current_runs"]} == {r.id for r in runs}
    # every job ran on one of the cluster's h200 nodes, and the store knows them by their labels
    assert attempts and all(a.status == "ok" for a in attempts), [(a.status, a.error) for a in attempts]
    assert {a.node_id for a in attempts} <= node_ids
    assert node_ids <= set(nodes) and all(nodes[n].labels.get(GPU) == "h200" for n in node_ids)
