"""The job kinds, one declaration each: what a kind is, read by every part of the project that treats kinds apart.

A kind is one module of this package whose ``KIND`` is a :class:`JobKind`; this package finds them by scanning its
folder (and the folders named in the environment variable ``KERNELFLEET_KINDS``, separated by ``os.pathsep``, which
the recipe test uses for a kind of its own), as ``kernels/registry.py`` finds the kernels' entries.  A declaration
is plain data, read without torch (``python -m orchestrator --help`` and the dashboard never import it): the module
that runs the kind, its planner and its validator are named by strings and imported only where they are used.

What reads it: the sandbox child (which module runs a job), the runner and the scheduler (compile-only jobs, whole
nodes, GPUs), the sandbox (device-only figures), the planner and the validator (per-kernel kinds, each kind's own
planner and checks, its parameters), the CPU price (which kinds cost interpreter time), the metric catalogue (each
metric's kinds), the store's queries, the report, the JSON summary and the dashboard (which kinds are timed side by
side, which run a model rather than a kernel).  Code that means one particular kind imports its ``NAME`` from its
module (``from workers.kinds.micro import NAME as MICRO``); a kind's name is written nowhere else
(tests/workers/test_kind_literals.py).

===============  ====================================================================================================
module           holds
===============  ====================================================================================================
``__init__``     :class:`JobKind` and the registry: :func:`declared`, :func:`kind_of`, :func:`names` and the kinds
                 that have a property (:func:`timed`, :func:`compile_only`, ...); the paths below are under workers/
``correctness``  ``correctness``: every implementation against a float64 reference (jobs/correctness.py)
``micro``        ``micro``: the implementations of one kernel, shape and dtype timed side by side (jobs/micro.py)
``e2e``          ``e2e``: a model's denoising loop (or a decoder's generate) in several modes (jobs/e2e/job.py)
``profile``      ``profile``: where each implementation's time goes, kernel by kernel (jobs/profile.py)
``isa``          ``isa``: a kernel compiled for a target architecture, its machine code read (jobs/isa.py)
``tune``         ``tune``: every candidate launch of one kernel, shape and dtype, checked, then timed (jobs/tune.py)
===============  ====================================================================================================

Adding a kind = one module here and the module that runs it (docs/developer-guide.md, "A job kind";
tests/workers/test_add_a_job_kind.py follows that recipe with a kind of its own).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

PATH_ENV = "KERNELFLEET_KINDS"  # more folders of kind modules, separated by os.pathsep

# The sweep keys a timed or checked kernel job carries in its params (orchestrator.plan.jobs.kind_params)
TIMING_PARAMS = ("warmup_ms", "rep_ms", "rounds", "graph", "kernel_time", "flush", "seed", "timeout_s")


@dataclass(frozen=True)
class JobKind:
    """One job kind as the project declares it."""

    name: str
    # The module whose ``run(spec, device) -> JobResult`` runs a job of the kind in the sandbox
    # (workers/runtime/child.py); what it imports is the code the job's key covers (workers/runtime/job_code.py)
    module: str
    description: str
    # One job per kernel x shape x dtype of the sweep's grid; else the kind runs models and plans its own jobs
    per_kernel: bool = True
    # Takes a GPU slot (orchestrator/run/schedule.py); a kind that does not takes a CPU slot on any matching node
    needs_gpu: bool = True
    # Only compiles (no GPU, kernels compiled rather than interpreted): its jobs run in a sandbox of their own
    # (workers/runtime/runner.py)
    compile_only: bool = False
    # Runs alone on its node (orchestrator/run/schedule.py)
    whole_node: bool = False
    # Its implementations are timed side by side: the store reads its times as the kernel's (the queries of
    # orchestrator/store/query/picked.py, the timing trends and the dashboard)
    timed: bool = False
    # Costs interpreter time on a CPU, so a sweep of it is priced before it starts (orchestrator/plan/cpu_price.py)
    cpu_priced: bool = False
    # Its figures hold no host time, so it may run in a sandbox child that has run torch.profiler
    # (workers/runtime/sandbox.py)
    device_only: bool = False
    # In the sweep's kinds unless the sweep says otherwise (orchestrator/config/schema.py)
    default: bool = False
    # The metrics the store reads from this kind's jobs (each metric of workers/metrics.py has one such kind) ...
    metrics: tuple[str, ...] = ()
    # ... and those its jobs emit too that the store reads from another kind (``correct``: a kernel's verdict is its
    # correctness job's)
    shared_metrics: tuple[str, ...] = ()
    # The sweep keys (orchestrator/config/schema.py SweepCfg) its jobs read; a per-kernel kind without a planner of its
    # own copies them into each job's params
    params: tuple[str, ...] = ()
    # "module:function" of its own planner (orchestrator side): for a per-kernel kind ``f(cfg, grid, targets,
    # params, code) -> list[JobSpec]`` once per kernel, else ``f(cfg, targets) -> list[JobSpec]`` once per sweep;
    # None: one job per kernel x shape x dtype x target
    planner: str | None = None
    # "module:function" of its own checks of a composed config, ``f(cfg) -> None`` raising ConfigError
    validator: str | None = None

    def __post_init__(self) -> None:
        if self.compile_only and self.needs_gpu:
            raise ValueError(f"job kind {self.name!r}: a compile-only kind needs no GPU (needs_gpu=False)")
        if not self.per_kernel and not self.planner:
            raise ValueError(f"job kind {self.name!r}: a kind that is not per kernel names its planner")


class UnknownKindError(ValueError):
    def __init__(self, name: object):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown job kind {self.name!r}; known kinds: {', '.join(names())} (workers/kinds/)"


_DECLARED: dict[str, JobKind] | None = None


def _folders() -> list[str]:
    extra = [f for f in os.environ.get(PATH_ENV, "").split(os.pathsep) if f]
    for folder in extra:
        if folder not in __path__:
            __path__.append(folder)
    return list(__path__)


def kind_modules() -> list[str]:
    """The modules that declare a kind, sorted by name."""
    return sorted(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(_folders()) if not m.name.startswith("_"))


def declared() -> dict[str, JobKind]:
    """Every declared kind by name, in the order of their modules' names."""
    global _DECLARED
    if _DECLARED is None:
        found: dict[str, JobKind] = {}
        for module in kind_modules():
            kind = importlib.import_module(module).KIND
            if not isinstance(kind, JobKind):
                raise TypeError(f"{module}.KIND is not a JobKind")
            if kind.name in found:
                raise ValueError(f"job kind {kind.name!r} declared twice ({module})")
            found[kind.name] = kind
        from workers import metrics  # imports this package: read once it is loaded

        for kind in found.values():
            for name in kind.metrics + kind.shared_metrics:
                metrics.get(name)  # UnknownMetricError names the catalogue
        _DECLARED = found
    return _DECLARED


def names() -> tuple[str, ...]:
    return tuple(declared())


def kind_of(name: str) -> JobKind:
    """The declaration of ``name``; :class:`UnknownKindError` (a ValueError) for any other name."""
    try:
        return declared()[name]
    except (KeyError, TypeError):
        raise UnknownKindError(name) from None


def _having(prop: Callable[[JobKind], bool]) -> tuple[str, ...]:
    return tuple(k.name for k in declared().values() if prop(k))


def per_kernel() -> tuple[str, ...]:
    """The kinds that run one kernel (a job per kernel x shape x dtype)."""
    return _having(lambda k: k.per_kernel)


def timed() -> tuple[str, ...]:
    """The kinds whose implementations are timed side by side."""
    return _having(lambda k: k.timed)


def compile_only() -> tuple[str, ...]:
    return _having(lambda k: k.compile_only)


def whole_node() -> tuple[str, ...]:
    return _having(lambda k: k.whole_node)


def cpu_priced() -> tuple[str, ...]:
    return _having(lambda k: k.cpu_priced)


def device_only() -> tuple[str, ...]:
    return _having(lambda k: k.device_only)


def defaults() -> list[str]:
    """The kinds a sweep runs unless it names its own."""
    return list(_having(lambda k: k.default))


def resolve(ref: str) -> Any:
    """The object a ``"module:function"`` reference of a declaration names (imported now)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def runs_model(name: str | None) -> bool:
    """A job of ``name`` runs a model, not a kernel (its job's ``model`` names it): a declared kind that is not per
    kernel.  False for None and for a name no kind declares."""
    return name in declared() and not declared()[name].per_kernel
