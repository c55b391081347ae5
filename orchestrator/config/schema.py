"""The structured-config schema: every key a sweep may set, with its type.

Hydra validates the composed YAML against these dataclasses, so a misspelt key or a value of the wrong type is
caught while composing; orchestrator.config.validate then checks the values against the kernel registry (kernel names,
implementations, dtypes, shapes) before anything is scheduled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from workers import kinds


@dataclass
class KernelCfg:
    """One kernel's default grid (conf/kernel/<name>.yaml, or the grid its registry entry declares)."""

    name: str = MISSING
    shapes: List[List[int]] = field(default_factory=list)
    dtypes: List[str] = field(default_factory=lambda: ["bf16"])
    impls: List[str] = field(default_factory=list)


@dataclass
class SweepCfg:
    """The grid and how to run it.  ``shapes``/``dtypes``/``impls`` set here override every kernel's own."""

    name: str = MISSING
    kinds: List[str] = field(default_factory=kinds.defaults)  # the kinds declared ``default`` (workers/kinds/)
    kernels: Optional[List[str]] = None  # run only these of the sweep's kernels
    shapes: Optional[List[List[int]]] = None
    dtypes: Optional[List[str]] = None
    impls: Optional[List[str]] = None
    # micro-benchmark timing (milliseconds of warm-up and of timed repeats per implementation)
    warmup_ms: float = 25.0
    rep_ms: float = 200.0
    rounds: int = 5  # implementations are timed interleaved, in this many rounds
    graph: bool = True  # also time CUDA/HIP-graph replay (launch-free) on a GPU
    # also read each call's kernel time from torch.profiler on a GPU (the kernels alone, L2 flushed: what ncu or
    # rocprofv3 would report; workers.runtime.timing.kernel_time)
    kernel_time: bool = True
    # how L2 is flushed before each timed call: "read" a 256 MB buffer (clean lines), or "write" it (dirty lines the
    # timed call writes back; on an H200 per-call times >= 100 MB ran a median 7 % over launch-free with "write",
    # 3 % with "read": docs/perf/kernels-h200.md)
    flush: str = "read"
    seed: Optional[int] = None  # None: fresh random inputs every run
    # compile torch.compile's implementations without the node's Inductor cache: autotune again on purpose
    # (workers/jobs/autotune_pick.py); by default a node keeps its cache, so a rerun picks the same kernels
    fresh_autotune: bool = False
    timeout_s: float = 600.0  # per job; the job's process group is killed past it
    batch_size: int = 32  # jobs per Ray task (one sandbox process, torch imported once)
    max_retries: int = 3  # Ray retries of a batch whose node died
    e2e: Dict[str, Any] = field(default_factory=dict)  # end-to-end job parameters (sweep ltx_e2e)
    # compile targets of isa jobs (workers/jobs/isa_targets.py): each kernel x shape x dtype is compiled for each
    archs: List[str] = field(default_factory=lambda: ["gfx950", "gfx1201", "gfx942"])


@dataclass
class TargetCfg:
    """Which GPUs run the jobs: a Ray label selector over the fleet's node labels."""

    name: str = MISSING
    label_selector: Dict[str, str] = field(default_factory=dict)
    per_gpu_type: bool = False  # one copy of every job for each GPU type present
    wait_for_nodes: bool = False  # wait for a matching node instead of failing fast


@dataclass
class StoreCfg:
    url: Optional[str] = None


@dataclass
class ClusterCfg:
    address: Optional[str] = None


@dataclass
class Config:
    sweep: SweepCfg = MISSING
    kernels: Dict[str, KernelCfg] = field(default_factory=dict)
    target: TargetCfg = field(default_factory=TargetCfg)
    store: StoreCfg = field(default_factory=StoreCfg)
    cluster: ClusterCfg = field(default_factory=ClusterCfg)
    dry_run: bool = False
    plan_out: Optional[str] = None
    # also write each result, as it is stored, to this `python -m workers run` results file (import-ready; a run on a
    # cluster brought home as a file); a resumed sweep of the same plan appends to it
    results_out: Optional[str] = None
    summary_json: Optional[str] = None  # when the sweep ends, its run as JSON (docs/json.md) is written here
    rerun: bool = False
    wait_for_run: bool = False  # another sweep runs this plan: wait for it to end instead of exiting 2
    allow_cpu: bool = False  # run a GPU-sized grid on a machine without a GPU anyway (orchestrator.plan.cpu_price)
    wide: bool = False  # the summary table with every column (the default fits 120 columns)


def register() -> None:
    cs = ConfigStore.instance()
    cs.store(name="kf_schema", node=Config)
