"""One sweep, end to end: plan, open the run in the store, skip what is done, schedule the rest, summarise."""

from __future__ import annotations

import json
import os
import shlex
import signal
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from orchestrator.config.compose import ConfigError
from orchestrator.plan import jobs as planner
from orchestrator.reports import summary as report
from orchestrator.run import conditions as run_conditions
from orchestrator.run import schedule
from orchestrator.store import conditions as store_conditions
from orchestrator.store.open import open_writer
from orchestrator.store.ownership import RunHeld, RunTakenOver
from orchestrator.store.session import display_url, public_config
from workers import kinds
from workers.runtime import runner
from workers.spec import STATUS_LOST, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


def plan_header(cfg: dict, specs: list[JobSpec]) -> dict:
    code = planner.code_version()
    header = {
        "sweep": cfg["sweep"]["name"],
        "config": public_config(cfg),
        "plan_key": planner.plan_key(specs),
        **code.to_dict(specs),
    }
    tree = run_conditions.tree_state()  # a dirty checkout: the commit above is not the code that runs
    if tree is not None:
        header["conditions"] = tree
    return header


def write_dry_run(cfg: dict, specs: list[JobSpec], console: Console) -> int:
    out = Path(cfg.get("plan_out") or f"plan-{cfg['sweep']['name']}.jsonl")
    if not out.parent.is_dir():
        raise ConfigError(f"plan_out={out}: the folder {out.parent} does not exist; create it or name another file")
    runner.write_plan(out, plan_header(cfg, specs), specs)
    from orchestrator.plan.tune import summary

    for line in summary(specs):
        console.print(line, markup=False)
    console.print(
        f"planned {len(specs)} jobs, nothing scheduled: {out}\n"
        f"run them on any machine with `python -m workers run {out} --out results.jsonl`, "
        f"then `python -m orchestrator import results.jsonl`",
        markup=False,
    )
    return EXIT_OK


def open_results_out(path: str, header: dict):
    """The sweep's ``results_out`` file, open for appending result lines: a new file gets the results header; an
    existing one of the same plan is continued (a line its interrupted writer cut off is removed first)."""
    out = Path(path)
    if out.exists() and out.stat().st_size:
        try:
            runner.cut_partial_line(out)
            held, _ = runner.read_results(out)
        except ValueError as exc:
            raise ConfigError(f"results_out={path}: not a results file this sweep can continue ({exc})") from None
        if held.get("plan", {}).get("plan_key") != header["plan_key"]:
            raise ConfigError(f"results_out={path}: it holds the results of another plan; name another file")
        return open(out, "a")
    if not out.parent.is_dir():
        raise ConfigError(f"results_out={path}: the folder {out.parent} does not exist")
    f = open(out, "w")
    f.write(runner.results_header(header))
    f.flush()
    return f


class _Recorder:
    """The driver's side of the results stream: the only writer to the store."""

    def __init__(
        self, writer, run_id: int, force: bool, progress: Progress, task, labels: dict[str, str], console: Console
    ):
        self.writer, self.run_id, self.force = writer, run_id, force
        self.progress, self.task, self.labels, self.console = progress, task, labels, console
        self.counts: Counter[str] = Counter()
        self.known_ceiling: set[str] = set()
        self.results_file = None  # the sweep's results_out, when it has one
        self.specs: dict[str, JobSpec] = {}
        self.weights: dict[str, float] = {}  # the CPU price's seconds per job key, when the sweep was priced
        self.done_weight = 0.0

    def _advance(self, status: str, key: str) -> None:
        self.counts[status] += 1
        done = self.counts[STATUS_OK] + self.counts[STATUS_SKIPPED]
        failed = sum(self.counts.values()) - done
        self.done_weight += self.weights.get(key, 0.0)
        self.progress.update(self.task, advance=1, state=f"done {done}  failed {failed}", done_weight=self.done_weight)

    def result(self, res: JobResult) -> None:
        if res.device is not None:
            hw = self.writer.record_device(res.device.to_dict())
            gbs = res.details.get("copy_gbs")
            if gbs and hw not in self.known_ceiling:
                if self.writer.copy_bandwidth(hw) is None:
                    self.writer.set_copy_bandwidth(hw, float(gbs))
                self.known_ceiling.add(hw)
        self.writer.record_result(self.run_id, res.to_dict(), force=self.force)
        if self.results_file is not None:
            line = {"spec": self.specs[res.key].to_dict(), "result": res.to_dict()}
            self.results_file.write(json.dumps(line, sort_keys=True) + "\n")
            self.results_file.flush()
        if res.status not in (STATUS_OK, STATUS_SKIPPED):
            self.console.print(
                f"[yellow]{escape(self.labels.get(res.key, res.key))}[/]: {res.status}: "
                f"{escape((res.error or '').strip()[:300])}"
            )
        self._advance(res.status, res.key)

    def lost(self, spec: JobSpec, reason: str) -> None:
        self.writer.mark_lost(self.run_id, spec.key, reason)
        self.console.print(f"[red]{escape(spec.label())}[/]: lost: {escape(reason)}")
        self._advance(STATUS_LOST, spec.key)


def _start_cluster(cfg: dict) -> schedule.RayCluster:
    address = cfg["cluster"].get("address") or os.environ.get("RAY_ADDRESS")
    if address:
        _check_head(address)
    return schedule.RayCluster(cfg["cluster"].get("address"), local_labels=_local_labels()).start()


def _check_head(address: str) -> None:
    """Ask the head whether it takes this process before ray.init does (Ray's own refusal of a missing or wrong
    token takes ~20 s of retries and a long traceback); a refusal is a ConfigError naming the token setting.  Sets
    RAY_AUTH_MODE (and the token's variable) the way the head wants it, as `node list` does."""
    from orchestrator.fleet import nodes as fleet

    where = f"cluster.address={address}"
    try:
        token = fleet.find_token(None)
    except fleet.FleetError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    try:
        probe = fleet.probe_head(address, token)
    except fleet.FleetError:  # an address that is not HOST:PORT
        raise ConfigError(f"{where}: expected HOST:PORT of a Ray head (e.g. 10.0.0.5:6379)") from None
    if not probe.reachable:
        raise ConfigError(f"{where}: cannot reach the head: {probe.error}")
    fix = (
        "set RAY_AUTH_TOKEN_PATH=FILE (a file holding the output of `ray get-auth-token` on the head, chmod 600) "
        "or RAY_AUTH_TOKEN"
    )
    fleet.use_head_auth(probe, token, f"{where}: the head", fix, ConfigError)


def _plan(cfg: dict, cluster: schedule.RayCluster | None) -> list[JobSpec]:
    if not cfg["target"].get("per_gpu_type"):
        return planner.plan(cfg)
    # target=all: one copy of each job per GPU type the fleet has, so the fleet is asked first
    types = cluster.gpu_types() if cluster is not None else []
    if not types:
        raise ConfigError(
            f"target={cfg['target']['name']}: no live node carries a {schedule.LABEL_NS}/gpu label; "
            "join GPU nodes with `python -m orchestrator node join`"
        )
    return planner.plan(cfg, gpu_types=types)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM (systemd, Kubernetes) during a sweep; ``exit_code`` is 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.exit_code = 128 + signum


class _Signals:
    """SIGINT and SIGTERM end a sweep alike: the first raises Interrupted where the driver is; any later one, while
    the sweep shuts down and marks its run interrupted, is noted and ignored, so the run is always marked."""

    def __init__(self, console: Console):
        self.console, self.first, self.saved = console, None, {}

    def _handle(self, signum, _frame) -> None:
        if self.first is None:
            self.first = signum
            raise Interrupted(signum)
        self.console.print(
            f"{signal.Signals(signum).name} again: still shutting down; the run is being marked interrupted"
        )

    def __enter__(self) -> "_Signals":
        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may set handlers; there Ctrl-C stays a KeyboardInterrupt
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def shield(self) -> None:
        """From now on every signal is ignored (the run is being finished)."""
        if self.first is None:
            self.first = 0

    def __exit__(self, *exc) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


class _EtaColumn(ProgressColumn):
    """Time left from the time the completed jobs took: shown from the first completed job on (rich's own estimate
    needs several completions within its 30 s window, which jobs of minutes never give).  A sweep priced on a CPU
    weighs each job by its estimate (a grid's small shapes come first and take seconds, its large ones hours: the
    mean per job would promise minutes), else every job alike."""

    def render(self, task) -> Text:
        if not task.completed or task.elapsed is None:
            return Text("eta –", style="progress.remaining")
        total, done = task.fields.get("total_weight") or 0.0, task.fields.get("done_weight") or 0.0
        if total and done:
            left = task.elapsed / done * (total - done)
        else:
            left = task.elapsed / task.completed * (task.total - task.completed)
        return Text(
            f"eta {int(left) // 3600}:{int(left) % 3600 // 60:02d}:{int(left) % 60:02d}", style="progress.remaining"
        )


def _local_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def _kept_overrides(overrides: Sequence[str]) -> str:
    """The user's overrides that the suggested commands keep (the grid's: sweep.kernels, sweep.dtypes, ...), quoted
    for the shell, with a leading space; the ones each suggestion sets itself are left out."""
    own = ("sweep=", "+sweep=", "allow_cpu=", "target=", "dry_run=", "plan_out=")
    kept = [o for o in overrides if not o.lstrip("+~").startswith(tuple(x.lstrip("+") for x in own))]
    return "".join(" " + shlex.quote(o) for o in kept)


def _check_cpu_price(
    cfg: dict, todo: list[JobSpec], no_gpu: str, console: Console, calibration=None, overrides: Sequence[str] = ()
) -> dict[str, float]:
    """On CPUs only: price the jobs to run; refuse a grid that is not small unless allow_cpu=true.  ``no_gpu`` says
    where there is no GPU, as a sentence ("this machine has no GPU"); the suggested commands keep ``overrides``.
    Returns each job's estimated seconds by key (empty when not priced), which the progress bar's eta weighs."""
    from orchestrator.plan import cpu_price

    # the kinds that cost interpreter (or CPU model) time: their declarations' cpu_priced (workers/kinds/)
    priced = kinds.cpu_priced()
    if not any(s.kind in priced for s in todo):
        _stop_calibration(calibration)
        return {}
    kept = cpu_price.kept_fit()
    if kept is not None:
        _stop_calibration(calibration)
        fit, source = kept[0], f"this machine's calibration of {kept[1]}"
    else:
        try:
            fit = cpu_price.calibrate(calibration)
        except Exception as exc:  # the price is advice: without it the sweep goes on, and says so
            console.print(f"[yellow]could not price this sweep on the CPU:[/] {exc}")
            return {}
        cpu_price.keep_fit(fit)
        source = "a calibration just now"
    p = cpu_price.price(todo, fit)
    interp = f"{p.triton_calls} Triton calls in the interpreter at {p.per_element_s * 1e6:.1f} µs per element"
    what = (
        f"{no_gpu}: {p.jobs} jobs to run, the largest {p.largest} ({cpu_price.gb(p.largest_bytes)} "
        f"of tensors); {interp}, PyTorch at {p.eager_per_element_s * 1e9:.1f} ns per element: estimated "
        f"{cpu_price.duration(p.estimate_s)} on this CPU (an estimate from {source}; compile time not included)"
    )
    if p.small or cfg.get("allow_cpu"):
        console.print(what, highlight=False, markup=False)
        return {s.key: cpu_price.price([s], fit).estimate_s for s in todo}
    name = cfg["sweep"]["name"]
    keep = _kept_overrides(overrides)
    console.print(what, highlight=False, markup=False)
    console.print(
        f"nothing was scheduled or stored. Instead:\n"
        f"  python -m orchestrator +sweep=smoke                      small shapes, minutes on a CPU\n"
        f"  python -m orchestrator +sweep={name}{keep} target=h200         on a GPU node of the fleet "
        f"(cluster.address=HEAD:6379)\n"
        f"  python -m orchestrator +sweep={name}{keep} dry_run=true plan_out=plan.jsonl   then on a GPU machine: "
        f"python -m workers run plan.jsonl --out results.jsonl\n"
        f"  python -m orchestrator +sweep={name}{keep} allow_cpu=true      run it here anyway",
        highlight=False,
        markup=False,
    )
    raise ConfigError(
        f"sweep {name} is GPU-sized: estimated {cpu_price.duration(p.estimate_s)} on this CPU "
        f"(over {cpu_price.duration(cpu_price.SMALL_S)}); add allow_cpu=true to run it anyway"
    )


def _check_writable(explicit_url: str | None) -> None:
    """A SQLite store the sweep could not write is refused before Ray starts (the first write would fail later)."""
    from orchestrator.store.session import resolve_url, sqlite_path

    url = resolve_url(explicit_url)
    path = sqlite_path(url)
    if path is None or not path.exists():
        return
    for p in (path, path.parent):
        if not os.access(p, os.W_OK):
            raise ConfigError(
                f"store {display_url(url)}: {p} is read-only; make it writable or use another store (store.url=...)"
            )


def _nothing_to_run(writer, url: str, cfg: dict, header: dict, specs: list[JobSpec], console: Console) -> int:
    """Every job already has a good result: no new run; show the newest run of this plan."""
    from orchestrator.store.query import run_queries

    same = [r for r in run_queries.list_runs(url, limit=500) if r["plan_key"] == header["plan_key"]]
    if same:
        report.print_run_summary(
            console, url, same[0]["id"], f"run {same[0]['id']} · {cfg['sweep']['name']}", wide=bool(cfg.get("wide"))
        )
        if cfg.get("summary_json"):  # the newest run of this plan: the results a rerun would have shown
            from orchestrator.reports import run_json

            run_json.write(url, same[0]["id"], cfg["summary_json"])
    where = f"; newest run of this plan: {same[0]['id']}" if same else ""
    console.print(
        f"sweep {cfg['sweep']['name']}: all {len(specs)} jobs have good results in the store{where}; "
        f"nothing to run, no run recorded (rerun=true runs them again; store {display_url(url)})",
        highlight=False,
        markup=False,
    )
    return EXIT_OK


def _dry_run(cfg: dict, console: Console) -> int:
    if cfg["target"].get("per_gpu_type"):
        raise ConfigError(
            f"target={cfg['target']['name']}: a dry run cannot know which GPU types the fleet "
            "has; plan for a named target instead (e.g. target=h200)"
        )
    return write_dry_run(cfg, planner.plan(cfg), console)


def _stop_calibration(calibration) -> None:
    if calibration is not None:
        calibration.kill()
        calibration.communicate()


class _Sweep:
    """One sweep past its dry-run check: the store it writes, the fleet it runs on, its plan, and its run."""

    def __init__(self, cfg: dict, console: Console):
        self.cfg, self.console = cfg, console
        self.name = cfg["sweep"]["name"]
        self.embedded = not (cfg["cluster"].get("address") or os.environ.get("RAY_ADDRESS"))
        self.selector = dict(cfg["target"].get("label_selector") or {})
        self.wait = bool(cfg.get("wait_for_run"))
        self.cluster: schedule.RayCluster | None = None
        self.run_id: int | None = None
        self.overrides: list[str] = []  # the command line's, for the commands a refusal suggests
        self.recorded_nodes: list[dict] = []  # the fleet snapshot this sweep stored
        self.priced_on_cpu = False  # the embedded instance has no GPU: the jobs are priced before Ray starts
        self.cpu_weights: dict[str, float] = {}  # the price's seconds per job key (the progress bar's eta)

    def open(self):
        """Open the store and plan (a target=all plan asks the fleet first); returns the CPU price calibration
        started meanwhile (None with a GPU, a cluster or a kept calibration)."""
        calibration = None
        if self.embedded and not _local_gpu():  # priced before Ray starts, so the answer comes in seconds
            from orchestrator.plan import cpu_price

            self.priced_on_cpu = True
            if cpu_price.kept_fit() is None:  # a kept calibration needs no child (_check_cpu_price reads it)
                calibration = cpu_price.start_calibration()
        try:
            _check_writable(self.cfg["store"].get("url"))
            self.writer, self.url = open_writer(self.cfg["store"].get("url"), self.console)
            if self.cfg["target"].get("per_gpu_type"):
                self.cluster = _start_cluster(self.cfg)
            try:
                self.specs = _plan(self.cfg, self.cluster)
            except BaseException:
                self.stop_cluster()
                raise
        except BaseException:
            _stop_calibration(calibration)
            raise
        self.header = plan_header(self.cfg, self.specs)
        self.keys = [s.key for s in self.specs]
        return calibration

    def stop_cluster(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    def find_resumable(self) -> None:
        """A run of this plan to resume; another live sweep holding it: exit 2 naming it, or wait
        (wait_for_run=true)."""
        try:
            self.run_id = self.writer.find_resumable_run(self.header["plan_key"], self.wait, self.console.print)
        except RunHeld as exc:
            raise ConfigError(str(exc)) from None
        self.resumed = self.run_id is not None

    def what_is_done(self) -> set[str]:
        if self.cfg.get("rerun"):  # run everything again; a resumed forced run skips only what it already redid
            return self.writer.done_keys(self.keys, run_id=self.run_id) if self.resumed else set()
        return self.writer.done_keys(self.keys)

    def take_stock(self) -> None:
        self.done = self.what_is_done()
        self.todo = [s for s in self.specs if s.key not in self.done]

    def connect(self) -> bool:
        """Start Ray (or join the cluster) and check a live node matches the target, before the run is written;
        False when interrupted meanwhile (nothing written)."""
        try:
            self.cluster = self.cluster or _start_cluster(self.cfg)
            _check_target(self.cluster, self.cfg["target"], self.selector, self.console)
            if not self.embedded and not any(n.gpus > 0 for n in self.cluster.matching(self.selector)):
                no_gpu = (
                    f"no node matching {schedule.describe_selector(self.selector)} has a GPU"
                    if self.selector
                    else "no node of the cluster has a GPU"
                )
                self.cpu_weights = _check_cpu_price(self.cfg, self.todo, no_gpu, self.console, overrides=self.overrides)
        except BaseException as exc:
            self.stop_cluster()
            if isinstance(exc, KeyboardInterrupt):
                self.console.print("interrupted before any job was scheduled; nothing was written")
                return False
            raise
        return True

    def claim(self, signals: _Signals) -> None:
        """This process takes the run (owner, heartbeat) and records its jobs; RunHeld if another sweep took the
        plan meanwhile."""
        try:
            try:
                claimed, resumed = self.writer.claim_run(
                    self.name,
                    self.header["config"],
                    self.header["plan_key"],
                    self.header["commit"],
                    self.header["code_hash"],
                    self.wait,
                    self.console.print,
                )
            except RunHeld as exc:
                raise ConfigError(str(exc)) from None
            if claimed != self.run_id and not self.cfg.get("rerun"):  # another sweep of the plan ran meanwhile
                self.take_stock()
            self.run_id = claimed
            if resumed:
                self.console.print(f"resuming interrupted run {self.run_id}")
            self.writer.add_jobs(self.run_id, [s.to_dict() for s in self.specs])
            self.mark(self.header.get("conditions"))
        except BaseException:
            signals.shield()
            self.stop_cluster()
            raise

    def mark(self, conditions: dict | None) -> None:
        """Record what the run is made under (a dirty checkout, a fleet sharing GPUs), say it, and keep it in the
        results_out header."""
        if not conditions:
            return
        self.writer.mark_run(self.run_id, conditions)
        self.header["conditions"] = store_conditions.merged(self.header.get("conditions"), conditions)
        self.console.print(
            f"run {self.run_id} is marked: {store_conditions.describe(self.header['conditions'])} "
            "(left out of trends, regressions and compare unless asked)",
            markup=False,
        )

    def selector_of(self, spec: JobSpec) -> dict[str, str]:
        if self.cfg["target"].get("per_gpu_type"):
            return {**self.selector, f"{schedule.LABEL_NS}/gpu": spec.target}
        return self.selector

    def execute(self) -> Counter[str]:
        """Record the fleet, then run the jobs to do on it with a progress bar; the count of each job status."""
        nodes = self.cluster.nodes()
        self.recorded_nodes = [
            {"node_id": n.node_id, "alive": n.alive, "labels": n.labels, "resources": n.resources}  # the fleet page's
            for n in nodes
        ]
        self.writer.record_nodes(self.recorded_nodes)
        self.console.print(f"fleet: {schedule.fleet_summary(nodes)}", markup=False)
        self.mark(run_conditions.fleet_conditions(nodes))
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[state]}"),
            TimeElapsedColumn(),
            _EtaColumn(),
            console=self.console,
            transient=False,
        ) as progress:
            weights = {s.key: self.cpu_weights.get(s.key, 0.0) for s in self.todo} if self.cpu_weights else {}
            task = progress.add_task(
                escape(self.name), total=len(self.todo), state="", total_weight=sum(weights.values()), done_weight=0.0
            )
            labels = {s.key: s.label() for s in self.todo}
            rec = _Recorder(self.writer, self.run_id, bool(self.cfg.get("rerun")), progress, task, labels, self.console)
            rec.weights = weights
            self.counts = rec.counts  # what ran so far, also when a signal ends the sweep mid-way
            results_out = self.cfg.get("results_out")
            if results_out:
                rec.results_file = open_results_out(results_out, self.header)
                rec.specs = {s.key: s for s in self.todo}
            try:
                schedule.execute(
                    self.cluster,
                    self.todo,
                    self.selector_of,
                    rec.result,
                    rec.lost,
                    batch_size=self.cfg["sweep"]["batch_size"],
                    max_retries=self.cfg["sweep"]["max_retries"],
                    no_node_grace_s=(
                        float("inf") if self.cfg["target"].get("wait_for_nodes") else schedule.NO_NODE_GRACE_S
                    ),
                )
            finally:
                if rec.results_file is not None:
                    rec.results_file.close()
            return rec.counts

    def run(self, signals: _Signals) -> int:
        """Claim the run, execute what is to do, mark the run (even when interrupted) and summarise it."""
        self.claim(signals)
        self.console.print(
            f"sweep {self.name}: {len(self.specs)} jobs, {len(self.done)} done earlier, "
            f"{len(self.todo)} to run (run {self.run_id}, store {display_url(self.url)})",
            markup=False,
        )
        self.counts: Counter[str] = Counter()
        interrupted: Interrupted | None = None
        t0 = time.perf_counter()
        try:
            if self.todo:
                self.execute()
        except RunTakenOver as exc:
            return self.displaced(exc)
        except KeyboardInterrupt as exc:
            # Ray's own wait loop can turn the handler's Interrupted into a plain KeyboardInterrupt: the first
            # signal seen decides the exit code
            interrupted = exc if isinstance(exc, Interrupted) else Interrupted(signals.first or signal.SIGINT)
        finally:
            signals.shield()  # a second Ctrl-C or SIGTERM from here on cannot stop the run being marked
            self.stop_cluster()
        return self.finish(self.counts, time.perf_counter() - t0, interrupted)

    def displaced(self, exc: RunTakenOver) -> int:
        """Another sweep took the run over while this one looked gone: stop, write nothing more, say so."""
        self.stop_cluster()
        self.console.print(f"[red]stopped:[/] {escape(str(exc))}", highlight=False)
        return EXIT_FAILED

    def finish(self, counts: Counter[str], wall_s: float, interrupted: Interrupted | None) -> int:
        """Mark the run with its status and counts, print its summary; the exit code."""
        # this run's own jobs: what it recorded, or "not_run"; the jobs done by earlier runs keep their status
        final = {
            **self.writer.run_job_statuses(self.run_id, [s.key for s in self.todo]),
            **self.writer.job_statuses(self.done),
        }
        n_bad = sum(1 for st in final.values() if st not in (STATUS_OK, STATUS_SKIPPED))
        status = "interrupted" if interrupted else "failed" if n_bad else "complete"
        by_status = {f"status_{k}": v for k, v in Counter(final.values()).items()}
        summary = {
            "planned": len(self.specs),
            "ran": sum(counts.values()),
            "done_earlier": len(self.done),
            "wall_s": round(wall_s, 3),
            **by_status,
        }
        try:
            self.writer.finish_run(self.run_id, status, summary)
        except RunTakenOver as exc:
            return self.displaced(exc)
        if self.embedded and self.recorded_nodes:  # the local Ray instance ends with the sweep: so do its nodes
            self.writer.record_nodes({**n, "alive": False} for n in self.recorded_nodes)
        title = f"run {self.run_id} · {self.name}"
        if any(st != "not_run" for st in final.values()):  # a table of earlier runs' results would mislead
            report.print_run_summary(self.console, self.url, self.run_id, title, wide=bool(self.cfg.get("wide")))
        if self.cfg.get("summary_json"):
            from orchestrator.reports import run_json

            run_json.write(self.url, self.run_id, self.cfg["summary_json"])
            self.console.print(f"wrote {self.cfg['summary_json']}", highlight=False)
        self.console.print(
            f"run {self.run_id}: {status}; {report.counts_in_words({'planned': len(self.specs), **by_status})}; "
            f"store: {display_url(self.url)}",
            highlight=False,
            markup=False,
        )
        if interrupted:
            self.console.print(f"interrupted: run the same command again to complete run {self.run_id}")
            return interrupted.exit_code
        return EXIT_FAILED if n_bad else EXIT_OK


def run_sweep(cfg: dict, console: Console, overrides: Sequence[str] = ()) -> int:
    """Run the composed sweep ``cfg``; ``overrides``: the command line's, kept in the commands it suggests."""
    from orchestrator.config.validate import validate

    validate(cfg)
    if cfg.get("dry_run"):
        return _dry_run(cfg, console)
    sweep = _Sweep(cfg, console)
    sweep.overrides = list(overrides)
    calibration = sweep.open()
    sweep.find_resumable()
    sweep.take_stock()
    if sweep.priced_on_cpu:
        sweep.cpu_weights = _check_cpu_price(
            cfg, sweep.todo, "this machine has no GPU", console, calibration, overrides
        )
    if not sweep.todo and not sweep.resumed:
        return _nothing_to_run(sweep.writer, sweep.url, cfg, sweep.header, sweep.specs, console)
    if sweep.todo and not sweep.connect():  # a target no live node matches fails here, before the run is written
        return EXIT_INTERRUPTED
    with _Signals(console) as signals:
        return sweep.run(signals)


def _local_labels() -> dict[str, str]:
    """Labels of the embedded local node, so GPU-type targets also work without a cluster."""
    try:
        from workers.device import detect as device

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
    raise ConfigError(
        f"target={target['name']}: no live node matches {schedule.describe_selector(selector)}; "
        f"fleet: {schedule.fleet_summary(cluster.nodes())} (join one with `python -m orchestrator node "
        f"join`, or wait with target.wait_for_nodes=true)"
    )
