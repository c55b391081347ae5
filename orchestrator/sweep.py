"""One sweep, end to end: plan, open the run in the store, skip what is done, schedule the rest, summarise."""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from orchestrator import plan as planner
from orchestrator import report, schedule
from orchestrator.config import ConfigError
from orchestrator.store.ownership import RunHeld
from orchestrator.store_access import open_writer
from workers import runner
from workers.spec import STATUS_LOST, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_INTERRUPTED = 0, 1, 2, 130


def plan_header(cfg: dict, specs: list[JobSpec]) -> dict:
    code = planner.code_version()
    return {"sweep": cfg["sweep"]["name"], "config": cfg, "plan_key": planner.plan_key(specs), **code.to_dict()}


def write_dry_run(cfg: dict, specs: list[JobSpec], console: Console) -> int:
    out = Path(cfg.get("plan_out") or f"plan-{cfg['sweep']['name']}.jsonl")
    runner.write_plan(out, plan_header(cfg, specs), specs)
    console.print(f"planned {len(specs)} jobs, nothing scheduled: {out}\n"
                  f"run them on any machine with `python -m workers run {out} --out results.jsonl`, "
                  f"then `python -m orchestrator import results.jsonl`")
    return EXIT_OK


class _Recorder:
    """The driver's side of the results stream: the only writer to the store."""

    def __init__(self, writer, run_id: int, force: bool, progress: Progress, task, labels: dict[str, str],
                 console: Console):
        self.writer, self.run_id, self.force = writer, run_id, force
        self.progress, self.task, self.labels, self.console = progress, task, labels, console
        self.counts: Counter[str] = Counter()
        self.known_ceiling: set[str] = set()

    def _advance(self, status: str) -> None:
        self.counts[status] += 1
        done = self.counts[STATUS_OK] + self.counts[STATUS_SKIPPED]
        failed = sum(self.counts.values()) - done
        self.progress.update(self.task, advance=1, state=f"done {done}  failed {failed}")

    def result(self, res: JobResult) -> None:
        if res.device is not None:
            hw = self.writer.record_device(res.device.to_dict())
            gbs = res.details.get("copy_gbs")
            if gbs and hw not in self.known_ceiling:
                if self.writer.copy_bandwidth(hw) is None:
                    self.writer.set_copy_bandwidth(hw, float(gbs))
                self.known_ceiling.add(hw)
        self.writer.record_result(self.run_id, res.to_dict(), force=self.force)
        if res.status not in (STATUS_OK, STATUS_SKIPPED):
            self.console.print(f"[yellow]{self.labels.get(res.key, res.key)}[/]: {res.status}: "
                               f"{(res.error or '').strip()[:300]}")
        self._advance(res.status)

    def lost(self, spec: JobSpec, reason: str) -> None:
        self.writer.mark_lost(self.run_id, spec.key, reason)
        self.console.print(f"[red]{spec.label()}[/]: lost: {reason}")
        self._advance(STATUS_LOST)


def _start_cluster(cfg: dict) -> schedule.RayCluster:
    return schedule.RayCluster(cfg["cluster"].get("address"), local_labels=_local_labels()).start()


def _plan(cfg: dict, cluster: schedule.RayCluster | None) -> list[JobSpec]:
    if not cfg["target"].get("per_gpu_type"):
        return planner.plan(cfg)
    # target=all: one copy of each job per GPU type the fleet has, so the fleet is asked first
    types = cluster.gpu_types() if cluster is not None else []
    if not types:
        raise ConfigError(f"target={cfg['target']['name']}: no live node carries a {schedule.LABEL_NS}/gpu label; "
                          "join GPU nodes with `python -m orchestrator node join`")
    return planner.plan(cfg, gpu_types=types)


def run_sweep(cfg: dict, console: Console) -> int:
    from orchestrator.validate import validate

    validate(cfg)
    per_gpu_type = bool(cfg["target"].get("per_gpu_type"))
    if cfg.get("dry_run"):
        if per_gpu_type:
            raise ConfigError(f"target={cfg['target']['name']}: a dry run cannot know which GPU types the fleet "
                              "has; plan for a named target instead (e.g. target=h200)")
        return write_dry_run(cfg, planner.plan(cfg), console)

    writer, url = open_writer(cfg["store"].get("url"), console)
    cluster = _start_cluster(cfg) if per_gpu_type else None
    try:
        specs = _plan(cfg, cluster)
    except BaseException:
        if cluster is not None:
            cluster.stop()
        raise
    header = plan_header(cfg, specs)
    keys = [s.key for s in specs]
    wait = bool(cfg.get("wait_for_run"))
    try:  # a run of this plan that another live sweep holds: exit 2 naming it, or wait (wait_for_run=true)
        run_id = writer.find_resumable_run(header["plan_key"], wait, console.print)
    except RunHeld as exc:
        raise ConfigError(str(exc)) from None
    resumed = run_id is not None

    def what_is_done() -> set[str]:
        if cfg.get("rerun"):  # run everything again; a resumed forced run skips only what it already redid
            return writer.done_keys(keys, run_id=run_id) if resumed else set()
        return writer.done_keys(keys)

    done = what_is_done()
    todo = [s for s in specs if s.key not in done]
    selector = dict(cfg["target"].get("label_selector") or {})
    if todo:  # a target no live node matches fails here, before the run is written
        try:
            cluster = cluster or _start_cluster(cfg)
            _check_target(cluster, cfg["target"], selector, console)
        except BaseException as exc:
            if cluster is not None:
                cluster.stop()
            if isinstance(exc, KeyboardInterrupt):
                console.print("interrupted before any job was scheduled; nothing was written")
                return EXIT_INTERRUPTED
            raise
    try:  # this process takes the run (owner, heartbeat); RunHeld if another sweep took the plan meanwhile
        claimed, resumed = writer.claim_run(cfg["sweep"]["name"], cfg, header["plan_key"], header["commit"],
                                            header["kernels_hash"], wait, console.print)
    except RunHeld as exc:
        if cluster is not None:
            cluster.stop()
        raise ConfigError(str(exc)) from None
    if claimed != run_id and not cfg.get("rerun"):  # another sweep of the plan ran meanwhile: not run again
        done = what_is_done()
        todo = [s for s in specs if s.key not in done]
    run_id = claimed
    if resumed:
        console.print(f"resuming interrupted run {run_id}")
    writer.add_jobs(run_id, [s.to_dict() for s in specs])
    console.print(f"sweep {cfg['sweep']['name']}: {len(specs)} jobs, {len(done)} done earlier, "
                  f"{len(todo)} to run (run {run_id}, store {url})")
    status = "complete"
    interrupted = False
    counts: Counter[str] = Counter()
    t0 = time.perf_counter()
    try:
        if todo:
            def selector_of(spec: JobSpec) -> dict[str, str]:
                if per_gpu_type:
                    return {**selector, f"{schedule.LABEL_NS}/gpu": spec.target}
                return selector

            console.print(f"fleet: {schedule.fleet_summary(cluster.nodes())}")
            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TextColumn("{task.fields[state]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                          console=console, transient=False) as progress:
                task = progress.add_task(cfg["sweep"]["name"], total=len(todo), state="")
                rec = _Recorder(writer, run_id, bool(cfg.get("rerun")), progress, task,
                                {s.key: s.label() for s in todo}, console)
                schedule.execute(cluster, todo, selector_of, rec.result, rec.lost,
                                 batch_size=cfg["sweep"]["batch_size"], max_retries=cfg["sweep"]["max_retries"],
                                 no_node_grace_s=(float("inf") if cfg["target"].get("wait_for_nodes")
                                                  else schedule.NO_NODE_GRACE_S))
                counts = rec.counts
    except KeyboardInterrupt:
        interrupted = True
        status = "interrupted"
    finally:
        if cluster is not None:
            cluster.stop()
    final = writer.job_statuses([s.key for s in specs])
    n_bad = sum(1 for st in final.values() if st not in (STATUS_OK, STATUS_SKIPPED))
    if not interrupted and n_bad:
        status = "failed"
    writer.finish_run(run_id, status, {"planned": len(specs), "ran": sum(counts.values()),
                                        "done_earlier": len(done), "wall_s": round(time.perf_counter() - t0, 3),
                                        **{f"status_{k}": v for k, v in Counter(final.values()).items()}})
    from orchestrator.store import queries

    report.print_summary(console, queries.run_summary(url, run_id), f"run {run_id} · {cfg['sweep']['name']}",
                         queries.e2e_results(url, run_id), queries.isa_results(url, run_id))
    console.print(f"run {run_id}: {status}; {len(specs)} jobs ({dict(Counter(final.values()))}); store: {url}")
    if interrupted:
        console.print(f"interrupted: run the same command again to complete run {run_id}")
        return EXIT_INTERRUPTED
    return EXIT_FAILED if n_bad else EXIT_OK


def _local_labels() -> dict[str, str]:
    """Labels of the embedded local node, so GPU-type targets also work without a cluster."""
    try:
        from workers import device

        infos = device.detect_all()
        return device.labels(infos[0]) if infos and infos[0].vendor != "cpu" else {}
    except Exception:
        return {}


def _check_target(cluster: schedule.RayCluster, target: dict, selector: dict[str, str], console: Console) -> None:
    if cluster.slots(selector) > 0:
        return
    if target.get("wait_for_nodes"):
        console.print(f"waiting for a node matching {schedule.describe_selector(selector)} ...")
        schedule.wait_for_match(cluster, selector, float("inf"))
        return
    raise ConfigError(f"target={target['name']}: no live node matches {schedule.describe_selector(selector)}; "
                      f"fleet: {schedule.fleet_summary(cluster.nodes())} (join one with `python -m orchestrator node "
                      f"join`, or wait with target.wait_for_nodes=true)")
