"""Measure the fleet's scheduling figures on a simulated cluster: `python -m benchmarks.fleet_bench [--help]`.
It backs docs/perf/fleet.md.

The cluster is ray.cluster_utils.Cluster on this machine: a head without CPUs and worker nodes with one logical GPU
each, labelled like fleet nodes.  Jobs run the real path (orchestrator.run.schedule.execute -> Ray task -> sandbox child
-> job) with the plugin kernel `noop` (benchmarks/fault_kernels.py), so what is measured is the fleet's
overhead, not a kernel.  Three figures:

1. join -> first job: a sweep keeps one node busy with work queued behind it; a new node is added; the time from
   `add_node` to (a) the node being registered, (b) its first job starting in its sandbox, (c) that job's result
   arriving at the driver.  Repeated by adding nodes one after another in the same sweep.
2. overhead per job with 1, 2 and 4 nodes: N noop jobs; wall time of execute(); in-sandbox time of every job (the
   job's own duration_s); overhead per job = (wall x nodes - sum of in-sandbox times) / N, i.e. the node time a job
   costs beyond its own run (sandbox start, Ray task start, result streaming, driver bookkeeping).
3. a 200-job sweep on 3 nodes undisturbed, and with one node killed (remove_node, not graceful) when half the
   results are in: wall time, jobs stored (each once: execute drops re-delivered results), jobs lost.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GPU = "kernelfleet.io/gpu"
TYPE = "mi355x"


def _env_setup() -> None:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from benchmarks import fault_kernels

    fault_kernels.enable()
    os.environ["KERNELFLEET_MEASURE_CEILING"] = "0"  # no 1 GiB copy per sandbox on a CPU


def _job(i: int, kind: str = "correctness", rep_ms: float = 0.0, tag: str = "j"):
    from workers.spec import JobSpec

    params = {"timeout_s": 300, "seed": 1}
    if kind == "micro":
        params.update(warmup_ms=1, rep_ms=rep_ms, rounds=1, graph=False)
    return JobSpec(
        kind=kind,
        kernel="noop",
        shape=[4096],
        dtype="fp32",
        impls=["boom", "eager"],
        target=TYPE,
        key=f"{tag}-{i}",
        params=params,
    )


def _add(cluster):
    from orchestrator.fleet.labels import NODE_RESOURCE

    return cluster.add_node(
        num_cpus=1, num_gpus=1, labels={GPU: TYPE, "kernelfleet.io/vendor": "amd"}, resources={NODE_RESOURCE: 1}
    )


class _Fleet:
    def __init__(self, nodes: int):
        import ray
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        self.nodes = [_add(self.cluster) for _ in range(nodes)]
        ray.init(address=self.cluster.address, log_to_driver=False)

    def close(self) -> None:
        import ray

        ray.shutdown()
        self.cluster.shutdown()


def _execute(specs, on_result=None, on_tick=None, batch_size: int = 32):
    from orchestrator.run import schedule

    results, lost = [], []

    def got(r):
        results.append(r)
        if on_result:
            on_result(r)

    t0 = time.monotonic()
    schedule.execute(
        schedule.RayCluster(),
        specs,
        lambda s: {GPU: TYPE},
        got,
        lambda s, why: lost.append((s.key, why)),
        batch_size=batch_size,
        on_tick=on_tick,
    )
    return time.monotonic() - t0, results, lost


def bench_join(joins: int) -> dict:
    """A busy one-node fleet with work queued; nodes join one after another."""
    fleet = _Fleet(1)
    samples = []
    try:
        state = {"added": None, "registered": None, "node": None, "first": False}
        pending_adds = [joins]

        def on_tick():
            if state["node"] is None and pending_adds[0] > 0 and len(results_seen) >= 1:
                pending_adds[0] -= 1
                t_add_wall, t_add = time.time(), time.monotonic()
                node = _add(fleet.cluster)
                state.update(added=(t_add_wall, t_add), registered=time.monotonic() - t_add, node=node.node_id)

        results_seen: list = []

        def on_result(r):
            results_seen.append(r)
            if state["node"] is not None and r.node_id == state["node"]:
                (t_wall, t_mono) = state["added"]
                samples.append(
                    {
                        "registered_s": state["registered"],
                        "first_job_start_s": r.started_at - t_wall,
                        "first_result_s": time.monotonic() - t_mono,
                    }
                )
                state.update(node=None)

        # Enough 1-job batches, each a short micro job, that work stays queued until the last node has joined.
        specs = [_job(i, "micro", rep_ms=400, tag="join") for i in range(6 * (joins + 1))]
        wall, results, lost = _execute(specs, on_result=on_result, on_tick=on_tick, batch_size=1)
    finally:
        fleet.close()
    return {"joins": samples, "jobs": len(specs), "results": len(results), "lost": len(lost), "wall_s": wall}


def bench_overhead(nodes: int, jobs: int) -> dict:
    fleet = _Fleet(nodes)
    try:
        wall, results, lost = _execute([_job(i, tag=f"ovh{nodes}") for i in range(jobs)])
    finally:
        fleet.close()
    inside = [r.duration_s for r in results if r.duration_s is not None]
    return {
        "nodes": nodes,
        "jobs": jobs,
        "results": len(results),
        "lost": len(lost),
        "ok": sum(r.status == "ok" for r in results),
        "wall_s": wall,
        "wall_per_job_s": wall / jobs,
        "in_sandbox_mean_s": statistics.fmean(inside),
        "in_sandbox_median_s": statistics.median(inside),
        "in_sandbox_sum_s": sum(inside),
        "overhead_per_job_s": (wall * nodes - sum(inside)) / jobs,
    }


def bench_kill(jobs: int, kill: bool) -> dict:
    fleet = _Fleet(3)
    killed = {"at_s": None, "node": None}
    try:
        keys: list[str] = []
        t0 = time.monotonic()
        todo: list = []

        def on_result(r):
            keys.append(r.key)
            if kill and killed["node"] is None and len(keys) >= jobs // 2:
                killed["node"] = "pending"
                todo.append(True)

        def on_tick():
            if todo:
                todo.clear()
                victim = fleet.nodes[0]
                fleet.cluster.remove_node(victim, allow_graceful=False)
                killed.update(at_s=time.monotonic() - t0, node=victim.node_id)

        wall, results, lost = _execute(
            [_job(i, tag=f"kill{int(kill)}") for i in range(jobs)], on_result=on_result, on_tick=on_tick
        )
    finally:
        fleet.close()
    return {
        "killed": kill,
        "jobs": jobs,
        "wall_s": wall,
        "results": len(results),
        "unique_results": len({r.key for r in results}),
        "lost": len(lost),
        "ok": sum(r.status == "ok" for r in results),
        "killed_at_s": killed["at_s"],
    }


def _commit() -> str:
    def git(*a):
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain")
    if not head or head == "HEAD":
        return "uncommitted (no commit yet in this repository)"
    return f"uncommitted, based on {head}" if dirty else head


def _machine() -> str:
    mem = ""
    try:
        kb = int(next(ln for ln in open("/proc/meminfo") if ln.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import ray

    return (
        f"{platform.node()}: {os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, Ray {ray.__version__}, no GPU (logical GPUs)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fleet_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--joins", type=int, default=3, help="nodes joining one after another (figure 1)")
    ap.add_argument("--overhead-jobs", type=int, default=96, help="noop jobs per node count (figure 2)")
    ap.add_argument("--nodes", default="1,2,4", help="node counts for figure 2")
    ap.add_argument("--kill-jobs", type=int, default=200, help="jobs of the kill sweep (figure 3)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each kill/undisturbed sweep (figure 3)")
    ap.add_argument("--json", help="also write every number to this file")
    args = ap.parse_args(argv)
    _env_setup()
    out = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": _machine(),
        "command": "python -m benchmarks.fleet_bench " + " ".join(argv if argv is not None else sys.argv[1:]),
        "commit": _commit(),
        "loadavg_start": os.getloadavg(),
    }
    print(f"# fleet bench  {out['date']}\n# {out['machine']}\n# commit: {out['commit']}", flush=True)

    out["join"] = bench_join(args.joins)
    for s in out["join"]["joins"]:
        print(
            f"join: registered {s['registered_s']:.2f} s, first job started {s['first_job_start_s']:.2f} s, "
            f"first result {s['first_result_s']:.2f} s after add_node",
            flush=True,
        )

    out["overhead"] = []
    for n in [int(x) for x in args.nodes.split(",")]:
        o = bench_overhead(n, args.overhead_jobs)
        out["overhead"].append(o)
        print(
            f"overhead: {n} node(s), {o['jobs']} jobs: wall {o['wall_s']:.1f} s ({o['wall_per_job_s'] * 1e3:.0f} "
            f"ms/job), in sandbox {o['in_sandbox_mean_s'] * 1e3:.1f} ms/job "
            f"(median {o['in_sandbox_median_s'] * 1e3:.1f}), overhead "
            f"{o['overhead_per_job_s'] * 1e3:.0f} node-ms/job; ok {o['ok']}/{o['jobs']}",
            flush=True,
        )

    out["kill"] = []
    for rep in range(args.repeats):
        for kill in (False, True):
            k = bench_kill(args.kill_jobs, kill)
            k["repeat"] = rep
            out["kill"].append(k)
            print(
                f"kill sweep ({'node killed at %.1f s' % k['killed_at_s'] if kill else 'undisturbed'}): "
                f"wall {k['wall_s']:.1f} s, {k['unique_results']}/{k['jobs']} stored once "
                f"({k['results']} results), lost {k['lost']}",
                flush=True,
            )
    out["loadavg_end"] = os.getloadavg()
    print(f"# load average (1, 5, 15 min) at start {out['loadavg_start']}, at end {out['loadavg_end']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
