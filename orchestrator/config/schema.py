"""The structured-config schema: every key a sweep may set, with its type.

Hydra validates the composed YAML against these dataclasses, so a misspelt key or a value of the wrong type is
caught while composing; orchestrator.config.validate then checks the values against the kernel registry (kernel names,
implementations, dtypes, shapes) before anything is scheduled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from workers import kinds
from workers.jobs.e2e import spec as e2e_spec


def _choices(noun: str, values: tuple[str, ...]) -> type[Enum]:
    """An enumeration OmegaConf checks a value against: members named by their values (OmegaConf matches a
    config's string to a member's name; ``triton+compile`` is a name only this way), in ``values``' order, and
    the class named ``noun``, the word a config error uses for one value ("unknown mode 'x'; allowed: ...").
    orchestrator.config.to_plain turns the members back into their strings."""
    return Enum(noun, [(v, v) for v in values], type=str)


E2EModel = _choices("model", e2e_spec.MODELS)
E2EMode = _choices("mode", e2e_spec.MODES)
E2EDtype = _choices("dtype", e2e_spec.DTYPE_NAMES)


@dataclass
class KernelCfg:
    """One kernel's default grid (conf/kernel/<name>.yaml, or the grid its registry entry declares)."""

    name: str = MISSING
    shapes: List[List[int]] = field(default_factory=list)
    dtypes: List[str] = field(default_factory=lambda: ["bf16"])
    impls: List[str] = field(default_factory=list)


@dataclass
class E2ECfg:
    """``sweep.e2e``: the grid and parameters of end-to-end jobs (orchestrator/plan/e2e.py expands them).

    Every key any model takes; which ones apply depends on ``model`` (LTX-Video: frames and the image grid;
    FLUX and SD3: configs and the image grid; Llama: configs, batches, prompt_lens, new_tokens), and
    orchestrator.plan.e2e refuses a key its model does not take.  null, or a key left out, is the model's default
    (orchestrator.plan.e2e.MODEL_GRIDS, workers.jobs.e2e.spec.MODEL_PARAMS); where the default is null itself, null
    means what the comment says.  What a type cannot say (8k+1 frames, multiples of 16 or 32, ranges, a
    configuration's family) is checked by orchestrator.plan.e2e.validate_e2e.
    """

    model: E2EModel = E2EModel[e2e_spec.MODEL]
    # the grid: one job per point (configuration, shape, steps, dtype), every mode inside the job
    configs: Optional[List[str]] = None  # FLUX, SD3, Llama: names in conf/models, or paths to such JSON files
    frames: Optional[List[int]] = None  # LTX-Video: 8k+1
    heights: Optional[List[int]] = None  # crossed with widths: multiples of 32 (LTX-Video) or 16 (FLUX, SD3)
    widths: Optional[List[int]] = None
    resolutions: Optional[List[List[int]]] = None  # [[height, width], ...] instead of heights x widths
    steps: Optional[List[int]] = None  # denoising steps
    batches: Optional[List[int]] = None  # Llama: sequences decoded together
    prompt_lens: Optional[List[int]] = None  # Llama: prompt tokens per sequence
    dtypes: Optional[List[E2EDtype]] = None
    modes: Optional[List[E2EMode]] = None
    # the job's parameters (workers.jobs.e2e.spec.MODEL_PARAMS)
    new_tokens: Optional[int] = None  # Llama: tokens generated per sequence (>= 2: a prefill and a decode step)
    repeats: Optional[int] = None  # timed calls per mode
    warmup: Optional[int] = None  # untimed calls per mode first
    guidance_scale: Optional[float] = None  # LTX-Video, SD3: > 1; FLUX: > 0
    frame_rate: Optional[int] = None  # LTX-Video
    seed: Optional[int] = None
    model_path: Optional[str] = None  # a local diffusers (transformers: Llama) folder; null: random weights
    pipeline: Optional[bool] = None  # LTX-Video: also the VAE decode
    tiny: Optional[bool] = None  # a tiny model for CPU tests
    tolerance: Optional[float] = None  # max rel. error vs eager; null: per dtype
    text_len: Optional[int] = None  # LTX-Video, FLUX, SD3: text tokens; null: the model's
    cpu_compile: Optional[bool] = None  # run the stock compile mode on a CPU too
    profile_steps: Optional[int] = None  # profile this many steps per mode; 0: off
    timeout_s: Optional[float] = None  # per job (all modes)


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
    e2e: E2ECfg = field(default_factory=E2ECfg)  # end-to-end jobs' grid and parameters (sweep ltx_e2e, flux_e2e, ...)
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
