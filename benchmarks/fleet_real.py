"""The fleet path on one real GPU host, through the commands docs/fleet.md gives an admin:
`python -m benchmarks.fleet_real PHASE [--help]`.  It backs the real-host figures of docs/perf/fleet.md.

One host plays a whole lab: `cluster up` starts a head with token authentication, `node join` joins GPU nodes that
share the host's GPU (each with its own Ray ports and temp dir), one of them tagged with another GPU type through
`node join --label gpu=rehearsal`.  Every node runs from a copy of the checkout (`--node-src`), so sweeps reach them
only through Ray's runtime_env.  Phases, run in this order (state lives in `--work`):

  up        cluster up; node join (the host's real GPU); node join --label gpu=rehearsal; node list
  compare   +sweep=rmsnorm on the cluster (target=h200) and `python -m workers run` of the same plan on the same GPU;
            +sweep=rmsnorm target=all (one copy per GPU type: the real one and the rehearsal tag)
  faults    a node joins mid-sweep (time from `node join` to its first job); one node's raylet killed mid-sweep;
            `node leave` drains a node mid-sweep; a kernel that never returns (benchmarks/spin_kernel.py) times out
            and the node takes the next job; the driver killed (SIGKILL) mid-sweep and started again
  scaling   wall time of one sweep on one node, on two nodes sharing the GPU, and on two with one killed halfway

Each phase writes its logs, `node list` outputs and the sweeps' results files (`results_out=`, import-ready) under
`--out`, and appends one JSON line per figure or check to OUT/fleet-real.jsonl; a check that fails exits 1.
On a machine without a GPU the same phases run against recorded nodes (`--join-arg=--from-fixtures=DIR`) and tiny
grids (`--sweep-arg`), as a rehearsal of the script itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GPU_LABEL = "kernelfleet.io/gpu"


class Lab:
    def __init__(self, args: argparse.Namespace):
        self.work = Path(args.work)
        self.out = Path(args.out)
        self.work.mkdir(parents=True, exist_ok=True)
        self.out.mkdir(parents=True, exist_ok=True)
        self.token = self.work / "token"
        self.db = self.work / "fleet.db"
        self.node_src = Path(args.node_src)
        self.join_args = list(args.join_arg)
        self.sweep_args = list(args.sweep_arg)
        self.gpu = args.gpu
        self.port = args.port
        state = self.work / "state.json"
        self.state = json.loads(state.read_text()) if state.is_file() else {}
        self.failed = False

    # -- bookkeeping -------------------------------------------------------------------------------------------
    def save(self) -> None:
        (self.work / "state.json").write_text(json.dumps(self.state, indent=1))

    def record(self, **row) -> None:
        row = {"at": time.time(), **row}
        print(json.dumps(row), flush=True)
        with open(self.out / "fleet-real.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        self.record(check=name, ok=bool(ok), detail=detail)
        self.failed |= not ok

    @property
    def head(self) -> str:
        return self.state["head"]

    def env(self) -> dict[str, str]:
        return {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token), "PYTHONUNBUFFERED": "1"}

    # -- commands ----------------------------------------------------------------------------------------------
    def cli(self, *args: str, log: str, cwd: Path | None = None, timeout: float = 900, env=None):
        t0 = time.time()
        with open(self.out / log, "a") as f:
            f.write(f"$ python -m orchestrator {' '.join(args)}\n")
            f.flush()
            p = subprocess.run(
                [sys.executable, "-m", "orchestrator", *args],
                cwd=cwd or REPO,
                env=env or self.env(),
                stdout=f,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            )
        return p.returncode, time.time() - t0

    def spawn_sweep(self, overrides: list[str], log: str, env=None) -> subprocess.Popen:
        f = open(self.out / log, "a")
        f.write(f"$ python -m orchestrator {' '.join(overrides)}\n")
        f.flush()
        return subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *overrides, *self.sweep_args],
            cwd=REPO,
            env=env or self.env(),
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def sweep(self, overrides: list[str], log: str, env=None, timeout: float = 900) -> tuple[int, float]:
        p = self.spawn_sweep(overrides, log, env)
        t0 = time.time()
        rc = p.wait(timeout=timeout)
        return rc, time.time() - t0

    def nodes(self) -> list[dict]:
        p = subprocess.run(
            [sys.executable, "-m", "orchestrator", "node", "list", "--json", "--address", self.head]
            + ["--token-file", str(self.token)],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if p.returncode:
            raise SystemExit(f"node list failed: {p.stdout[-2000:]} {p.stderr[-2000:]}")
        return json.loads(p.stdout)["nodes"]  # the kernelfleet.nodes document (docs/json.md)

    def list_to(self, log: str) -> None:
        self.cli("node", "list", "--address", self.head, "--token-file", str(self.token), log=log)

    def join(self, name: str, *extra: str) -> tuple[str, float]:
        """`node join` from the nodes' checkout; the new node's id and the command's time."""
        before = {n["node_id"] for n in self.nodes()}
        args = ["node", "join", "--address", self.head, "--token-file", str(self.token), *self.join_args, *extra]
        rc, took = self.cli(*args, log=f"join-{name}.log", cwd=self.node_src)
        new = [n for n in self.nodes() if n["node_id"] not in before and n["alive"]]
        self.check(f"node join {name}", rc == 0 and len(new) == 1, f"exit {rc}, {len(new)} new node(s)")
        node_id = new[0]["node_id"] if new else ""
        self.state.setdefault("nodes", {})[name] = node_id
        self.save()
        return node_id, took

    def leave(self, name: str, wait: float = 300) -> tuple[int, float]:
        args = ["node", "leave", "--address", self.head, "--token-file", str(self.token)]
        args += ["--node-id", self.state["nodes"][name][:12], "--wait", str(wait)]
        return self.cli(*args, log=f"leave-{name}.log")

    def kill_raylet(self, node_id: str) -> int:
        """SIGKILL the raylet of ``node_id`` (found by its command line), as a crashed host would lose it."""
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"/raylet") and any(node_id.encode() in a for a in argv):
                os.kill(int(pid), signal.SIGKILL)
                return int(pid)
        raise SystemExit(f"no raylet process names node {node_id}")

    # -- the store -------------------------------------------------------------------------------------------------
    def jobs(self, run_id: int) -> list[tuple]:
        con = sqlite3.connect(self.db)
        try:
            return con.execute(
                "select j.key, j.status, j.node_id, j.attempts from jobs j join run_jobs r on r.job_id = j.id "
                "where r.run_id = ?",
                (run_id,),
            ).fetchall()
        finally:
            con.close()

    def newest_run(self) -> int:
        con = sqlite3.connect(self.db)
        try:
            return con.execute("select max(id) from runs").fetchone()[0]
        finally:
            con.close()

    def store_check(self, name: str, run_id: int, planned: int) -> list[tuple]:
        rows = self.jobs(run_id)
        keys = [r[0] for r in rows]
        ok = [r for r in rows if r[1] == "ok"]
        once = all(r[3] == 1 for r in rows)
        self.check(
            f"{name}: every job stored once",
            len(keys) == len(set(keys)) == planned and len(ok) == planned and once,
            f"{len(ok)} ok of {planned} planned, {len(keys)} rows, {len(set(keys))} keys, one attempt each: {once}",
        )
        return rows

    def results_lines(self, path: Path) -> list[dict]:
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


# ------------------------------------------------------------------------------------------------------ phases


def phase_up(lab: Lab) -> None:
    if lab.node_src.resolve() != REPO.resolve():
        shutil.rmtree(lab.node_src, ignore_errors=True)
        shutil.copytree(REPO, lab.node_src, ignore=shutil.ignore_patterns(".git", ".kf", ".whl", "results", "docs"))
    from ray.util import get_node_ip_address

    lab.state["head"] = f"{get_node_ip_address()}:{lab.port}"
    lab.save()
    rc, took = lab.cli("cluster", "up", "--port", str(lab.port), "--token-file", str(lab.token), log="cluster-up.log")
    lab.check("cluster up", rc == 0, f"exit {rc}")
    lab.record(figure="cluster up", seconds=round(took, 2))
    node, took = lab.join("gpu")
    lab.record(figure="node join (real GPU)", seconds=round(took, 2), node=node)
    node, took = lab.join("rehearsal", "--label", f"{GPU_LABEL}=rehearsal")
    lab.record(figure="node join (rehearsal tag)", seconds=round(took, 2), node=node)
    lab.list_to("node-list.txt")
    rows = lab.nodes()
    (lab.out / "node-list.json").write_text(json.dumps(rows, indent=1))
    by_id = {r["node_id"]: r for r in rows}
    real, tagged = by_id.get(lab.state["nodes"]["gpu"], {}), by_id.get(lab.state["nodes"]["rehearsal"], {})
    lab.check("real node labelled from detection", real.get("labels", {}).get(GPU_LABEL) == lab.gpu, str(real))
    lab.check(
        "rehearsal node tagged and marked",
        tagged.get("labels", {}).get(GPU_LABEL) == "rehearsal"
        and tagged.get("labels", {}).get("kernelfleet.io/rehearsal-of") == lab.gpu,
        str(tagged.get("labels")),
    )


def phase_compare(lab: Lab) -> None:
    target = [f"target={lab.gpu}"]
    fleet_out = lab.out / "fleet-rmsnorm.jsonl"
    rc, took = lab.sweep(
        ["+sweep=rmsnorm", f"cluster.address={lab.head}", *target, f"store.url=sqlite:///{lab.db}"]
        + [f"results_out={fleet_out}"],
        log="sweep-rmsnorm-fleet.log",
    )
    run_fleet = lab.newest_run()
    lines = lab.results_lines(fleet_out)
    lab.check("rmsnorm on the fleet", rc == 0 and len(lines) > 0, f"exit {rc}, {len(lines)} results")
    lab.record(figure="+sweep=rmsnorm on the fleet (1 node)", seconds=round(took, 2), run=run_fleet, jobs=len(lines))
    gpu_node = lab.state["nodes"]["gpu"]
    lab.check(
        "every rmsnorm job ran on the real node, on a GPU",
        all(
            r["result"]["node_id"] == gpu_node and (r["result"]["device"] or {}).get("gpu_type") == lab.gpu
            for r in lines
        ),
        f"{len(lines)} jobs",
    )
    plan = lab.work / "rmsnorm-plan.jsonl"
    plan.unlink(missing_ok=True)
    lab.cli("+sweep=rmsnorm", *target, "dry_run=true", f"plan_out={plan}", *lab.sweep_args, log="plan-rmsnorm.log")
    local_out = lab.out / "workers-rmsnorm.jsonl"
    local_out.unlink(missing_ok=True)
    t0 = time.time()
    with open(lab.out / "workers-rmsnorm.log", "w") as f:
        rc = subprocess.run(
            [sys.executable, "-m", "workers", "run", str(plan), "--out", str(local_out)],
            cwd=REPO,
            env=lab.env(),
            stdout=f,
            stderr=subprocess.STDOUT,
        ).returncode
    took = time.time() - t0
    local = lab.results_lines(local_out)
    lab.record(figure="workers run of the same plan", seconds=round(took, 2), jobs=len(local))
    same_plan = (
        json.loads(fleet_out.read_text().splitlines()[0])["plan"]["plan_key"]
        == json.loads(local_out.read_text().splitlines()[0])["plan"]["plan_key"]
    )
    lab.check("the same plan both ways", rc == 0 and same_plan, f"exit {rc}, same plan key: {same_plan}")
    in_sandbox = {
        "fleet": round(sum(r["result"]["duration_s"] or 0 for r in lines), 2),
        "workers run": round(sum(r["result"]["duration_s"] or 0 for r in local), 2),
    }
    lab.record(figure="in-sandbox time, sum over jobs", **in_sandbox)
    all_out = lab.out / "fleet-rmsnorm-all.jsonl"
    rc, took = lab.sweep(
        ["+sweep=rmsnorm", f"cluster.address={lab.head}", "target=all", f"store.url=sqlite:///{lab.db}", "rerun=true"]
        + ["sweep.shapes=[[2,1024,2048]]", f"results_out={all_out}"],
        log="sweep-rmsnorm-all.log",
    )
    rows = lab.results_lines(all_out)
    by_type = {}
    for r in rows:
        dev = r["result"]["device"] or {}
        by_type.setdefault(r["spec"]["target"], set()).add(
            (r["result"]["node_id"], dev.get("gpu_type"), (dev.get("extra") or {}).get("rehearsal_of"))
        )
    lab.record(figure="+sweep=rmsnorm target=all", seconds=round(took, 2), jobs=len(rows))
    lab.check(
        "target=all: one copy per GPU type, each on its own node, the rehearsal marked",
        rc == 0
        and by_type.get(lab.gpu) == {(lab.state["nodes"]["gpu"], lab.gpu, None)}
        and by_type.get("rehearsal") == {(lab.state["nodes"]["rehearsal"], "rehearsal", lab.gpu)},
        json.dumps({k: sorted(map(list, v)) for k, v in by_type.items()}),
    )


def _first_job_on(lines: list[dict], node_id: str) -> float | None:
    starts = [r["result"]["started_at"] for r in lines if r["result"]["node_id"] == node_id]
    return min(starts) if starts else None


def phase_faults(lab: Lab, grid: list[str]) -> None:
    db = f"store.url=sqlite:///{lab.db}"
    base = ["+sweep=kernels", f"cluster.address={lab.head}", f"target={lab.gpu}", db, "sweep.batch_size=2", *grid]
    # the rehearsal node leaves first (idle): the faults below need two nodes of one GPU type
    rc, _ = lab.leave("rehearsal")
    lab.check("node leave (idle rehearsal node)", rc == 0, f"exit {rc}")

    # 1. a node joins mid-sweep and takes work; 2. the first node's raylet is killed mid-sweep
    out = lab.out / "fault-join-kill.jsonl"
    sweep = lab.spawn_sweep([*base, "sweep.dtypes=[bf16]", f"results_out={out}"], log="fault-join-kill.log")
    time.sleep(20)
    t_join = time.time()
    node2, took = lab.join("gpu2")
    lab.record(figure="node join mid-sweep (command)", seconds=round(took, 2), node=node2)
    for _ in range(180):
        first = _first_job_on(lab.results_lines(out), node2)
        if first or sweep.poll() is not None:
            break
        time.sleep(1)
    if first:
        lab.record(figure="node join -> its first job starts", seconds=round(first - t_join, 2))
    lab.check("a node that joins mid-sweep takes work", first is not None)
    pid = lab.kill_raylet(lab.state["nodes"]["gpu"])
    t_kill = time.time()
    lab.record(event="raylet of the first node killed", pid=pid)
    rc = sweep.wait(timeout=900)
    run_id = lab.newest_run()
    rows = lab.store_check("raylet killed mid-sweep", run_id, planned=len(lab.results_lines(out)))
    after = [r for r in lab.results_lines(out) if r["result"]["started_at"] > t_kill + 1]
    lab.check(
        "after the kill the sweep completes on the other node",
        rc == 0 and all(r["result"]["node_id"] == node2 for r in after),
        f"exit {rc}, {len(after)} jobs after the kill, {len(rows)} stored",
    )

    # 3. `node leave` drains a node mid-sweep: a third node joins, leaves mid-sweep; nothing is lost
    node3, _ = lab.join("gpu3")
    out = lab.out / "fault-leave.jsonl"
    sweep = lab.spawn_sweep([*base, "sweep.dtypes=[fp16]", f"results_out={out}"], log="fault-leave.log")
    time.sleep(25)
    rc_leave, took = lab.leave("gpu3", wait=600)
    lab.record(figure="node leave mid-sweep (drain, command)", seconds=round(took, 2), exit=rc_leave)
    rc = sweep.wait(timeout=900)
    lines = lab.results_lines(out)
    lab.store_check("node leave mid-sweep", lab.newest_run(), planned=len(lines))
    lab.check(
        "node leave: the drained node ran jobs, the sweep ended on the other",
        rc == 0 and rc_leave == 0 and any(r["result"]["node_id"] == node3 for r in lines),
        f"exit {rc}, leave exit {rc_leave}",
    )

    # 4. a kernel that never returns: timed out, its sandbox killed, the node takes the next job
    out = lab.out / "fault-spin.jsonl"
    env = {**lab.env(), "KERNELFLEET_PLUGINS": "benchmarks.spin_kernel"}
    spin = [
        "+sweep=rmsnorm",
        f"cluster.address={lab.head}",
        f"target={lab.gpu}",
        db,
        "sweep.kinds=[correctness]",
        "sweep.timeout_s=20",
        "kernels.rmsnorm.shapes=[[1,64,2048]]",
        "+kernel@kernels.spin=rmsnorm",
        "kernels.spin.name=fault_spin",
        "kernels.spin.shapes=[[16]]",
        "kernels.spin.dtypes=[fp32]",
        "kernels.spin.impls=[spin]",
        "+kernel@kernels.after=rmsnorm",  # planned after the spinning job: the next jobs of its batch
        "kernels.after.shapes=[[2,1024,2048]]",
        "kernels.after.dtypes=[fp32]",
        "kernels.after.impls=[triton,eager]",
        f"results_out={out}",
    ]
    rc, took = lab.sweep(spin, log="fault-spin.log", env=env)
    lines = lab.results_lines(out)
    spun = [r for r in lines if r["spec"]["kernel"] == "fault_spin"]
    after = [
        r
        for r in lines
        if spun and r["spec"]["kernel"] != "fault_spin" and r["result"]["started_at"] > spun[0]["result"]["started_at"]
    ]
    lab.check(
        "a spinning kernel is timed out and the node takes the next job",
        len(spun) == 1
        and spun[0]["result"]["status"] == "timed_out"
        and bool(after)
        and all(
            r["result"]["status"] == "ok" and r["result"]["node_id"] == spun[0]["result"]["node_id"] for r in after
        ),
        f"exit {rc}; spin: {[r['result']['status'] for r in spun]}; after it: "
        f"{[(r['result']['status'], r['result']['node_id'][:8]) for r in after]}",
    )

    # 5. the driver killed mid-sweep and started again: it resumes the run
    out = lab.out / "fault-driver.jsonl"
    args = [*base, "sweep.dtypes=[fp32]", f"results_out={out}"]
    sweep = lab.spawn_sweep(args, log="fault-driver.log")
    time.sleep(30)
    os.killpg(sweep.pid, signal.SIGKILL)
    sweep.wait()
    had = len(lab.results_lines(out))
    lab.record(event="driver killed (SIGKILL)", results_so_far=had)
    rc, took = lab.sweep(args, log="fault-driver.log")
    lines = lab.results_lines(out)
    text = (lab.out / "fault-driver.log").read_text()
    lab.store_check("driver killed and restarted", lab.newest_run(), planned=len({r["spec"]["key"] for r in lines}))
    lab.check(
        "the restarted driver resumes the run",
        rc == 0 and "resuming interrupted run" in text,
        f"exit {rc}, {had} results before the kill, {len(lines)} in all",
    )
    lab.list_to("node-list-after-faults.txt")


SCALING_RUNS = ("two", "killed", "one")


def phase_scaling(lab: Lab, grid: list[str], runs: tuple[str, ...] = SCALING_RUNS) -> None:
    """Wall time of the same sweep on two nodes sharing the GPU ("two"), on two with one killed halfway ("killed")
    and on one node ("one"); ``runs`` picks which, in that order.  "killed" stops when half as many results are in
    as "two" stored, so it needs "two"'s results file in ``--out``."""
    db = f"store.url=sqlite:///{lab.db}"
    base = ["+sweep=kernels", f"cluster.address={lab.head}", f"target={lab.gpu}", db, "rerun=true", *grid]
    alive = [n for n in lab.nodes() if n["alive"] and n["labels"].get(GPU_LABEL) == lab.gpu]
    want = 2 if {"two", "killed"} & set(runs) else 1
    while len(alive) < want:
        lab.join(f"gpu{len(alive) + 10}")
        alive = [n for n in lab.nodes() if n["alive"] and n["labels"].get(GPU_LABEL) == lab.gpu]
    if "two" in runs:
        out = lab.out / "scaling-2.jsonl"
        rc, took = lab.sweep([*base, "sweep.batch_size=4", f"results_out={out}"], log="scaling-2.log")
        lab.record(figure="kernels sweep, 2 nodes sharing the GPU", seconds=round(took, 2), exit=rc)
    if "killed" in runs:
        _scaling_killed(lab, base, [n["node_id"] for n in alive[:2]])
    if "one" in runs:
        if len(alive) > 1:  # one node of the GPU type takes the sweep: the others leave first
            for n in alive[1:]:
                args = ["node", "leave", "--address", lab.head, "--token-file", str(lab.token)]
                lab.cli(*args, "--node-id", n["node_id"][:12], "--wait", "300", log=f"leave-{n['node_id'][:8]}.log")
        out = lab.out / "scaling-1.jsonl"
        rc, took = lab.sweep([*base, "sweep.batch_size=4", f"results_out={out}"], log="scaling-1.log")
        lab.record(figure="kernels sweep, 1 node", seconds=round(took, 2), exit=rc)
        lines = lab.results_lines(out)
        lab.store_check("scaling: one node", lab.newest_run(), planned=len({r["spec"]["key"] for r in lines}))
    lab.list_to("node-list-after-scaling.txt")


def _scaling_killed(lab: Lab, base: list[str], two: list[str]) -> None:
    lab.state["scaling_nodes"] = two
    lab.save()
    out = lab.out / "scaling-2-killed.jsonl"
    sweep = lab.spawn_sweep([*base, "sweep.batch_size=4", f"results_out={out}"], log="scaling-2-killed.log")
    t0 = time.time()
    half = len(lab.results_lines(lab.out / "scaling-2.jsonl")) // 2
    while sweep.poll() is None and len(lab.results_lines(out)) < half:
        time.sleep(0.5)
    lab.kill_raylet(two[1])
    rc = sweep.wait(timeout=900)
    took = time.time() - t0
    lines = lab.results_lines(out)
    lab.record(figure="kernels sweep, 2 nodes, one killed halfway", seconds=round(took, 2), exit=rc)
    lab.store_check("scaling: node killed halfway", lab.newest_run(), planned=len({r["spec"]["key"] for r in lines}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.fleet_real",
        description=__doc__.split("\n\n")[0] + " Backs docs/perf/fleet.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("phase", choices=["up", "compare", "faults", "scaling"])
    tmp = Path(tempfile.gettempdir())
    ap.add_argument("--work", default=str(tmp / "kf"), help=f"state, token and store (default {tmp / 'kf'})")
    ap.add_argument("--out", required=True, help="where logs, results files and fleet-real.jsonl go")
    ap.add_argument("--node-src", default=str(tmp / "kf-node-src"), help="the copy of the checkout the nodes run from")
    ap.add_argument("--port", type=int, default=6379, help="the head's GCS port (default 6379)")
    ap.add_argument("--gpu", default="h200", help="the host's GPU type as detection names it (default h200)")
    ap.add_argument("--join-arg", action="append", default=[], help="one more argument for every `node join`")
    ap.add_argument("--sweep-arg", action="append", default=[], help="one more override for every sweep")
    ap.add_argument(
        "--grid",
        action="append",
        default=[],
        help="overrides of the kernels sweep the faults and scaling phases run "
        "(default: sweep.impls=[triton,eager] and, for scaling, micro jobs without the profiler pass)",
    )
    ap.add_argument(
        "--runs",
        default=",".join(SCALING_RUNS),
        help="the scaling phase's runs, comma-separated, from two,killed,one (default all three)",
    )
    args = ap.parse_args(argv)
    runs = tuple(r for r in args.runs.split(",") if r)
    if set(runs) - set(SCALING_RUNS):
        ap.error(f"--runs: unknown run(s) {sorted(set(runs) - set(SCALING_RUNS))}; allowed: {','.join(SCALING_RUNS)}")
    lab = Lab(args)
    if args.phase == "up":
        phase_up(lab)
    elif args.phase == "compare":
        phase_compare(lab)
    elif args.phase == "faults":
        phase_faults(
            lab,
            args.grid
            or ["sweep.impls=[triton,eager]", "sweep.kinds=[correctness]", "sweep.kernels=[rmsnorm,adaln,rope,geglu]"],
        )
    else:
        phase_scaling(
            lab,
            args.grid
            or ["sweep.impls=[triton,eager]", "sweep.kinds=[micro]", "sweep.kernel_time=false", "sweep.dtypes=[bf16]"],
            runs,
        )
    return 1 if lab.failed else 0


if __name__ == "__main__":
    sys.exit(main())
