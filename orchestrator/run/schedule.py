"""Ray scheduling: batches of JobSpecs travel as Ray tasks to nodes whose labels match the job's GPU type.

Each task asks for one GPU (one CPU slot on a cluster without GPUs, and for compile-only ``isa`` jobs, which need no
GPU), so two benchmarks never share a GPU; it runs
its batch through the worker's sandbox and streams one result per job back (a Ray streaming generator).  Node
loss is Ray's to retry (``max_retries``; application errors are never retried: kernel failures are data).  The
driver de-duplicates results by job key, so a batch re-run on another node after a node died stores each job once.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from orchestrator.fleet.labels import LABEL_NS, NODE_RESOURCE
from workers import kinds
from workers.spec import JobResult, JobSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_SHARE = 0.001
# How long execute() lets jobs wait for a node that can run them once none is left (a node that restarts rejoins
# within seconds); past it they end as lost.  target.wait_for_nodes=true waits without limit.
NO_NODE_GRACE_S = 60.0
# What a remote node needs of the driver's checkout (Ray's working_dir); everything else stays home.
RUNTIME_EXCLUDES = [
    ".git",
    "**/__pycache__",
    "tests",
    "docs",
    "results",
    "outputs",
    "*.db",
    "*.jsonl",
    ".whl",
    ".gl",
    ".pytest_cache",
    ".hypothesis",
]
FORWARDED_ENV_PREFIXES = ("KERNELFLEET_", "TRITON_")
# Settings only the driver uses: the store (the driver is its only writer; its URL may hold a password) and the head's
# address.  Never sent to the nodes: Ray writes a runtime_env's variables into the nodes' logs.
DRIVER_ONLY_ENV = ("KERNELFLEET_DB", "KERNELFLEET_HEAD")


def forwarded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a cluster's nodes get from the driver (runtime_env's env_vars): the project's and Triton's
    settings, less the driver-only ones and any value holding a URL with a password."""
    from orchestrator.store.session import holds_password

    return {
        k: v
        for k, v in environ.items()
        if k.startswith(FORWARDED_ENV_PREFIXES) and k not in DRIVER_ONLY_ENV and not holds_password(v)
    }


LOOPBACK = "127.0.0.1"
CLUSTERS_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def _local_only() -> Iterator[None]:
    """While an embedded local Ray starts: it listens on the loopback interface only and uses no token.

    Ray turns a node IP of 127.0.0.1 into the machine's outward address unless it thinks clusters are off
    (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read into ``ray_constants.ENABLE_RAY_CLUSTER``); with them off the GCS,
    the raylet and the workers bind to 127.0.0.1.  Nothing but this machine's own processes can then reach it, so
    token authentication is set off explicitly (``RAY_AUTH_MODE=disabled``, unless the user chose a mode): Ray
    neither warns about it on every sweep nor writes a token file into the home folder.
    """
    import ray._private.ray_constants as ray_constants

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    before_env, before = os.environ.get(CLUSTERS_ENV), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[CLUSTERS_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:  # a later connection to a real cluster from this process finds Ray as it was
        ray_constants.ENABLE_RAY_CLUSTER = before
        if before_env is None:
            os.environ.pop(CLUSTERS_ENV, None)
        else:
            os.environ[CLUSTERS_ENV] = before_env


def takes_whole_node(spec: JobSpec) -> bool:
    """Jobs of a whole-node kind (workers/kinds/: e2e and profile), and any job with ``params.whole_node``, run alone on
    their node."""
    return kinds.kind_of(spec.kind).whole_node or bool(spec.params.get("whole_node"))


def needs_gpu(spec: JobSpec) -> bool:
    """Jobs of a kind that needs no GPU (workers/kinds/: compile-only ``isa``) take a CPU slot on any node the
    selector matches; every other job a GPU."""
    return kinds.kind_of(spec.kind).needs_gpu


def _run_batch(spec_dicts: list[dict]):
    """The Ray task body: run a batch in the sandbox, yield one result dict per job as it ends."""
    import ray

    from workers.device import rehearsal
    from workers.runtime import runner

    context = ray.get_runtime_context()
    node_id, labels = context.get_node_id(), context.get_node_labels()
    for result in runner.run([JobSpec.from_dict(d) for d in spec_dicts], node_id=node_id):
        result.device = rehearsal.relabel(result.device, labels)  # a rehearsal node's results keep its tag
        yield result.to_dict()


@dataclass
class NodeView:
    node_id: str
    alive: bool
    labels: dict[str, str]
    resources: dict[str, float]

    @property
    def gpus(self) -> int:
        return int(self.resources.get("GPU", 0))


def selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """Ray's label-selector semantics for the operators we use: v, !v, in(a,b), !in(a,b)."""
    for key, expr in selector.items():
        have = labels.get(key)
        neg = expr.startswith("!")
        body = expr[1:] if neg else expr
        if body.startswith("in(") and body.endswith(")"):
            ok = have in [v.strip() for v in body[3:-1].split(",")]
        else:
            ok = have == body
        if ok == neg:
            return False
    return True


# How long the driver tries to open a TCP connection to cluster.address before it gives up (Ray's own connect
# retries for minutes against a head that is down or filtered).
CONNECT_TIMEOUT_S = 5.0


def check_reachable(address: str, timeout_s: float | None = None) -> None:
    """ConfigError, in one line and within ``timeout_s``, unless a TCP connection to ``address`` (HOST:PORT, or
    ray://HOST:PORT) opens; ``auto`` (Ray finds a local head itself) is not checked."""
    import socket

    from orchestrator.config.compose import ConfigError

    timeout_s = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    target = address.strip()
    if target == "auto":
        return
    target = target.split("://", 1)[-1]
    host, sep, port_text = target.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"cluster.address={address}: expected HOST:PORT of a Ray head (e.g. 10.0.0.5:6379)")
    try:
        socket.create_connection((host, int(port_text)), timeout=timeout_s).close()
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc) or type(exc).__name__)
        raise ConfigError(
            f"cluster.address={address}: cannot reach the Ray head ({why} within {timeout_s:g} s); is it running "
            "(`python -m orchestrator cluster up`) and is the port open from here?"
        ) from None


@dataclass
class RayCluster:
    """A connection to Ray: an existing cluster (address) or an embedded local instance on this machine."""

    address: str | None = None
    local_labels: dict[str, str] = field(default_factory=dict)
    started_local: bool = False

    def start(self) -> "RayCluster":
        import ray

        address = self.address or os.environ.get("RAY_ADDRESS") or None
        env_vars = forwarded_env(os.environ)
        if address:
            check_reachable(address)
            runtime_env: dict = {"working_dir": str(REPO_ROOT), "excludes": RUNTIME_EXCLUDES}
            if env_vars:
                runtime_env["env_vars"] = env_vars
            ray.init(
                address=address,
                runtime_env=runtime_env,
                log_to_driver=False,
                logging_level=logging.WARNING,
                configure_logging=True,
            )
            self.address = address
            return self
        import torch

        ngpu = torch.cuda.device_count() if torch.cuda.is_available() else 0
        # address="local": always a fresh embedded instance, never a cluster that happens to run on this machine
        kwargs: dict = {
            "address": "local",
            "num_gpus": ngpu,
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.WARNING,
            "labels": self.local_labels or None,
            "resources": {NODE_RESOURCE: 1},
            "_node_ip_address": LOOPBACK,
        }
        if ngpu == 0:
            kwargs["num_cpus"] = 1  # the single local CPU slot: jobs run one at a time through the interpreter
        with _local_only():
            ray.init(**kwargs)
        self.started_local = True
        return self

    def stop(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()

    def nodes(self) -> list[NodeView]:
        import ray

        out = []
        for n in ray.nodes():
            out.append(
                NodeView(n["NodeID"], bool(n.get("Alive")), dict(n.get("Labels") or {}), dict(n.get("Resources") or {}))
            )
        return out

    def has_gpus(self) -> bool:
        return any(n.alive and n.gpus > 0 for n in self.nodes())

    def matching(self, selector: dict[str, str], gpu: bool = True) -> list[NodeView]:
        gpu = gpu and self.has_gpus()
        return [
            n
            for n in self.nodes()
            if n.alive
            and selector_matches(selector, n.labels)
            and (n.gpus > 0 if gpu else n.resources.get("CPU", 0) > 0)
        ]

    def slots(self, selector: dict[str, str], gpu: bool = True) -> int:
        """Jobs that can run at once: GPUs of the matching nodes, or one per matching node (CPU jobs, no GPUs)."""
        nodes = self.matching(selector, gpu)
        if gpu and self.has_gpus():
            return sum(n.gpus for n in nodes)
        return len(nodes)

    def gpu_types(self) -> list[str]:
        return sorted({n.labels[f"{LABEL_NS}/gpu"] for n in self.nodes() if n.alive and f"{LABEL_NS}/gpu" in n.labels})


def can_run(node: NodeView, selector: dict[str, str], whole_node: bool, gpu: bool) -> bool:
    """Whether a live node can run a job with this selector (and, for a whole-node job, has the node resource)."""
    return (
        node.alive
        and selector_matches(selector, node.labels)
        and (node.gpus > 0 if gpu else node.resources.get("CPU", 0) > 0)
        and (not whole_node or node.resources.get(NODE_RESOURCE, 0) >= 1)
    )


def task_options(selector: dict[str, str], whole_node: bool, gpu: bool, node_share: bool, max_retries: int) -> dict:
    """The Ray options of one batch task: one GPU (one CPU slot without GPUs), the selector, the node resource."""
    opts: dict = {
        "num_returns": "streaming",
        "max_retries": max_retries,
        "retry_exceptions": False,
        "name": "kernelfleet-batch",
    }
    if gpu:
        opts["num_gpus"] = 1
        opts["num_cpus"] = 0
    else:
        opts["num_cpus"] = 1
    if whole_node:
        opts["resources"] = {NODE_RESOURCE: 1}
    elif node_share:
        opts["resources"] = {NODE_RESOURCE: NODE_SHARE}
    if selector:
        opts["label_selector"] = selector
    return opts


def make_batches(specs: list[JobSpec], batch_size: int, slots: int) -> list[list[JobSpec]]:
    """Split into batches: no larger than batch_size, and enough of them to keep every slot busy."""
    if not specs:
        return []
    size = max(1, min(batch_size, math.ceil(len(specs) / max(slots, 1))))
    return [specs[i : i + size] for i in range(0, len(specs), size)]


def _ray_failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]


def _group_key(spec: JobSpec, selector_of: Callable[[JobSpec], dict[str, str]], has_gpus: bool) -> tuple:
    """A job's group: (its selector, whether it takes a whole node, whether it runs on a GPU).  Compile-only jobs
    take a CPU slot even on a GPU cluster."""
    return (tuple(sorted(selector_of(spec).items())), takes_whole_node(spec), has_gpus and needs_gpu(spec))


class _Execution:
    """The driver's loop of :func:`execute`: a queue of (group, batch) waiting for a slot, the batches in flight (Ray
    streaming generators), and the fleet as last seen.  Each spec ends in exactly one on_result or on_lost call."""

    def __init__(
        self,
        cluster: RayCluster,
        specs: list[JobSpec],
        selector_of: Callable[[JobSpec], dict[str, str]],
        on_result: Callable[[JobResult], None],
        on_lost: Callable[[JobSpec, str], None],
        batch_size: int,
        max_retries: int,
        no_node_grace_s: float,
    ):
        import ray

        self.ray, self.cluster, self.on_result, self.on_lost = ray, cluster, on_result, on_lost
        self.max_retries, self.no_node_grace_s = max_retries, no_node_grace_s
        self.has_gpus = cluster.has_gpus()
        self.nodes = cluster.nodes()  # the latest look at the fleet (check_nodes refreshes it)
        self.queue, total_slots = self._batches(specs, selector_of, batch_size)
        self.remote = ray.remote(_run_batch)
        self.inflight: dict = {}  # generator -> (group key, {key: spec} still to come)
        self.limit = max(2 * total_slots, 2)
        self.no_node_since: dict[tuple, float] = {}

    def _batches(
        self, specs: list[JobSpec], selector_of: Callable[[JobSpec], dict[str, str]], batch_size: int
    ) -> tuple[list[tuple[tuple, list[JobSpec]]], int]:
        """The queue of (group key, batch), each group split to keep its matching slots busy; and the slots."""
        groups: dict[tuple, list[JobSpec]] = {}
        for s in specs:
            groups.setdefault(_group_key(s, selector_of, self.has_gpus), []).append(s)
        queue: list[tuple[tuple, list[JobSpec]]] = []
        total_slots = 0
        for gkey, group in groups.items():
            slots = self.cluster.slots(dict(gkey[0]), gkey[2])
            total_slots += slots
            queue += [(gkey, b) for b in make_batches(group, batch_size, slots)]
        return queue, total_slots

    def share(self, sel: dict[str, str], gpu: bool) -> bool:
        """A sliver of the node resource only where every candidate node has it (nodes started by hand may not)."""
        matching = [n for n in self.nodes if can_run(n, sel, False, gpu)]
        return bool(matching) and all(n.resources.get(NODE_RESOURCE, 0) > 0 for n in matching)

    def submit(self) -> None:
        """Start queued batches while fewer than the limit are in flight."""
        while self.queue and len(self.inflight) < self.limit:
            gkey, batch = self.queue.pop(0)
            sel, whole, gpu = dict(gkey[0]), gkey[1], gkey[2]
            opts = task_options(sel, whole, gpu, self.share(sel, gpu), self.max_retries)
            gen = self.remote.options(**opts).remote([s.to_dict() for s in batch])
            self.inflight[gen] = (gkey, {s.key: s for s in batch})

    def _lose(self, specs: Iterable[JobSpec], reason: str) -> None:
        for spec in specs:
            self.on_lost(spec, reason)

    def cancel(self, gen) -> None:
        try:
            self.ray.cancel(gen, force=True)
        except Exception:
            pass

    def lose_group(self, gkey: tuple, reason: str) -> None:
        """Every job of a group, queued or in flight, ends as lost with the reason."""
        for entry in [e for e in self.queue if e[0] == gkey]:
            self.queue.remove(entry)
            self._lose(entry[1], reason)
        for gen in [g for g, (k, _) in self.inflight.items() if k == gkey]:
            self.cancel(gen)
            self._lose(self.inflight.pop(gen)[1].values(), reason)

    def receive(self, gen) -> None:
        """The next result of a ready batch; when the batch ended or failed, its jobs still to come are lost."""
        from ray.exceptions import RayError

        remaining = self.inflight[gen][1]
        try:
            result = JobResult.from_dict(self.ray.get(next(gen)))
        except StopIteration:
            self._lose(remaining.values(), "its batch ended without a result for it")
            del self.inflight[gen]
            return
        except RayError as exc:  # node died and retries ran out, worker crashed, task cancelled
            self._lose(remaining.values(), _ray_failure(exc))
            del self.inflight[gen]
            return
        if result.key in remaining:  # a retried batch re-yields jobs already stored: ignore those
            del remaining[result.key]
            self.on_result(result)

    def check_nodes(self) -> None:
        """Lose the jobs that no live node can run (after the grace); let new nodes raise the in-flight limit."""
        self.nodes = self.cluster.nodes()
        now = time.monotonic()
        waiting = {k for k, _ in self.queue} | {k for k, _ in self.inflight.values()}
        for gkey in waiting:
            sel, whole, gpu = dict(gkey[0]), gkey[1], gkey[2]
            if any(can_run(n, sel, whole, gpu) for n in self.nodes):
                self.no_node_since.pop(gkey, None)
                continue
            since = self.no_node_since.setdefault(gkey, now)
            if now - since >= self.no_node_grace_s:
                need = f" with the {NODE_RESOURCE} resource (a whole-node job)" if whole else ""
                self.lose_group(
                    gkey,
                    f"no live node matches {describe_selector(sel)}{need}: the last one left the "
                    f"cluster or none joined (waited {self.no_node_grace_s:g} s)",
                )
                self.no_node_since.pop(gkey, None)
        self.limit = max(self.limit, 2 * self._slots_now())

    def _slots_now(self) -> int:
        has_gpus = self.has_gpus
        return sum(
            n.gpus if has_gpus else 1
            for n in self.nodes
            if n.alive and (n.gpus > 0 if has_gpus else n.resources.get("CPU", 0) > 0)
        )

    def run(self, poll_s: float, on_tick: Callable[[], None] | None) -> None:
        """Submit, wait for results, look at the fleet every second, until every job has ended."""
        next_check = time.monotonic() + 1.0
        try:
            self.submit()
            while self.inflight or self.queue:
                if self.inflight:
                    ready, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=poll_s)
                else:
                    ready = []
                    time.sleep(poll_s)
                if on_tick:
                    on_tick()
                for gen in ready:
                    self.receive(gen)
                if time.monotonic() >= next_check:
                    self.check_nodes()
                    next_check = time.monotonic() + 1.0
                self.submit()
        except BaseException:
            for gen in self.inflight:
                self.cancel(gen)
            raise


def execute(
    cluster: RayCluster,
    specs: list[JobSpec],
    selector_of: Callable[[JobSpec], dict[str, str]],
    on_result: Callable[[JobResult], None],
    on_lost: Callable[[JobSpec, str], None],
    *,
    batch_size: int = 32,
    max_retries: int = 3,
    poll_s: float = 0.5,
    on_tick: Callable[[], None] | None = None,
    no_node_grace_s: float = NO_NODE_GRACE_S,
) -> None:
    """Run every spec on the cluster; each ends in exactly one on_result or on_lost call.

    Jobs that no live node can run any more (the last node of their type left or died) wait ``no_node_grace_s``
    for one to join, then end as lost with the reason; the rest of the sweep goes on.
    """
    _Execution(cluster, specs, selector_of, on_result, on_lost, batch_size, max_retries, no_node_grace_s).run(
        poll_s, on_tick
    )


def wait_for_match(cluster: RayCluster, selector: dict[str, str], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cluster.slots(selector) > 0:
            return True
        time.sleep(1.0)
    return cluster.slots(selector) > 0


def describe_selector(selector: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in selector.items()) or "(any node)"


def fleet_summary(nodes: Iterable[NodeView]) -> str:
    types: dict[str, int] = {}
    nodes = list(nodes)
    any_gpu = any(n.alive and n.gpus > 0 for n in nodes)
    for n in nodes:
        if n.alive and not (any_gpu and n.gpus == 0):  # a GPU-less head of a GPU fleet runs no jobs: not listed
            if n.gpus:
                t = f"{n.labels.get(f'{LABEL_NS}/gpu', 'unlabelled')} GPU"
                types[t] = types.get(t, 0) + n.gpus
            else:
                types["CPU-only node"] = types.get("CPU-only node", 0) + 1
    return ", ".join(f"{c} x {t}" for t, c in sorted(types.items())) or "no live nodes"
