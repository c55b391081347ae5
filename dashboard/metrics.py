"""The one place the dashboard looks up metric names, units and directions: the catalogue of workers/metrics.py
(through the store's query module), with the labels the pages show.
"""

from __future__ import annotations

from orchestrator.store.query import picked
from workers import metrics as catalogue
from workers.kinds.e2e import NAME as E2E
from workers.kinds.isa import NAME as ISA
from workers.kinds.micro import NAME as MICRO

# the three readings of one call (view_queries.TIME_READINGS), as the README names them
READINGS = {
    "time_us": "per call (µs, L2 flushed)",
    "kernel_time_us": "kernel time (µs, profiler)",
    "graph_time_us": "launch-free graph (µs)",
}
BANDWIDTH_OF = {"time_us": "gbs", "kernel_time_us": "kernel_gbs"}  # the GB/s metric of a reading
DEFAULT_READING = "time_us"
DEFAULT_IMPL = "triton"
BASELINE_IMPL = picked.BASELINE_IMPL

_SHOWN_UNITS = {"us": "µs", "x": "×", "count": "", "kernels": ""}  # the catalogue's units as the pages print them

# what the Compare page compares: each reading of a call, an end-to-end step, and the compiled code's counts
COMPARE_METRICS = {
    **READINGS,
    "ms_per_step": "end to end: ms per step",
    "instructions": "ISA: instructions",
    "registers": "ISA: registers per thread (NVIDIA)",
    "vgprs": "ISA: VGPRs (AMD)",
    "spill_store_bytes": "ISA: spill store bytes (NVIDIA)",
    "vgpr_spills": "ISA: spilled VGPRs (AMD)",
    "code_bytes": "ISA: machine code bytes",
}
# the metric the Compare page shows a run by default, by the kind of job it holds (micro first)
COMPARE_DEFAULT_OF_KIND = {MICRO: DEFAULT_READING, E2E: "ms_per_step", ISA: "instructions"}

# e2e metrics shown on the end-to-end page, with their labels
E2E_SHOWN = {
    "ms_per_step": "ms per step",
    "host_ms_per_step": "host ms per step",
    "decode_tokens_per_s": "decode tokens/s",
    "prefill_tokens_per_s": "prefill tokens/s",
    "rel_err_vs_eager": "latents: rel. error vs eager",
    "peak_mem_gb": "peak memory (GB)",
    "sm_clock_mhz": "SM clock (MHz)",
    "power_w": "power (W)",
}
# the kernel classes of an e2e profile (workers.jobs.e2e.profile.kernel_class), in stacking order, and their labels
KERNEL_CLASSES = {
    "kernelfleet": "ours",
    "gemm": "GEMM",
    "attention": "attention",
    "inductor": "inductor",
    "elementwise": "PyTorch elementwise",
    "other": "other",
}
IDLE = "idle"


def unit(metric: str) -> str:
    u = catalogue.get(metric).unit
    return _SHOWN_UNITS.get(u, u)


def kind(metric: str) -> str:
    """The kind of job that measures ``metric``: micro, e2e, isa, ..."""
    return catalogue.get(metric).kind


def higher_is_better(metric: str) -> bool:
    return catalogue.higher_is_better(metric)


def label(metric: str) -> str:
    u = unit(metric)
    return f"{metric} ({u})" if u else metric
