"""The catalogue of metrics: every metric a job may emit, with its unit, the job kinds that emit it and which way is
better.

The jobs emit measurements by these names (``workers.spec.Measurement`` refuses any other, so a result that names
an unknown metric fails where it is made or read, never stored); the store's queries, the report and the
regression rule take the lists and the direction from here.  Adding a metric = one :class:`Metric` line below and
its name in its job kind's declaration.

Which job kinds emit a metric is said by the kinds' declarations (workers/kinds/): one kind has it in its
``metrics`` (the kind the store's queries read it from), others may emit it too (``shared_metrics``: ``correct`` is
emitted by micro and e2e jobs too, but a kernel's correctness verdict is its correctness job's).
``higher_is_better``: the direction a change is judged in (a drop of a bandwidth or of a speed-up is a regression;
a rise of a time or of an error is).
"""

from __future__ import annotations

from dataclasses import dataclass

from workers import kinds as job_kinds


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # "" for a plain number (an error ratio, a verdict)
    higher_is_better: bool
    description: str

    @property
    def kind(self) -> str:
        """The job kind the store's queries read this metric from (the one that declares it in its ``metrics``)."""
        owners = [k.name for k in job_kinds.declared().values() if self.name in k.metrics]
        if len(owners) != 1:
            raise ValueError(f"metric {self.name!r}: declared by {len(owners)} job kinds' metrics, expected one")
        return owners[0]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The job kinds that emit this metric, the one the store's queries read it from first."""
        others = [k.name for k in job_kinds.declared().values() if self.name in k.shared_metrics]
        return (self.kind, *others)


class UnknownMetricError(ValueError):
    def __init__(self, name: object):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown metric {self.name!r}; known metrics: {', '.join(CATALOGUE)} (workers/metrics.py)"


_METRICS = (
    # micro, per implementation
    Metric("time_us", "us", False, "median time per call (L2 flushed); samples hold every repeat"),
    Metric("iqr_us", "us", False, "inter-quartile range of the repeats of time_us"),
    Metric("gbs", "GB/s", True, "bandwidth by the kernel's byte model over time_us"),
    Metric(
        "graph_time_us",
        "us",
        False,
        "median time per call in CUDA/HIP-graph replay (launch-free, warm L2)",
    ),
    Metric(
        "kernel_time_us",
        "us",
        False,
        "the call's own kernel time from the profiler (L2 flushed); per call in profile jobs",
    ),
    Metric("kernel_gbs", "GB/s", True, "bandwidth by the kernel's byte model over kernel_time_us"),
    Metric(
        "speedup",
        "x",
        True,
        "the baseline's time_us over this implementation's, for implementations that passed correctness",
    ),
    Metric("compile_s", "s", False, "time of the first call (compilation, Triton JIT)"),
    # correctness, per implementation (micro and e2e jobs emit `correct` too)
    Metric("rel_err", "", False, "||out - ref|| / ||ref|| against the float64 reference"),
    Metric("max_abs", "", False, "max |out - ref| against the float64 reference"),
    Metric("correct", "", True, "1.0 passed its tolerance, 0.0 failed"),
    # e2e, per mode (workers.jobs.e2e.spec.MODES)
    Metric("ms_per_step", "ms", False, "median time of one denoising step (a decoder: one decode step)"),
    Metric("prefill_ms", "ms", False, "a decoder's prefill: the prompt's forward and its first token"),
    Metric("prefill_tokens_per_s", "tokens/s", True, "a decoder's prompt tokens (x batch) per prefill s"),
    Metric("decode_tokens_per_s", "tokens/s", True, "a decoder's tokens (x batch) per decode-step s"),
    Metric(
        "host_ms_per_step",
        "ms",
        False,
        "median host time to issue one step, the device drained before each (above the device's: host-bound)",
    ),
    Metric("total_s", "s", False, "median time of the whole call"),
    Metric("warmup_s", "s", False, "time of the warm-up calls (compilation, Triton JIT)"),
    Metric("peak_mem_gb", "GB", False, "peak GPU memory allocated"),
    Metric("sm_clock_mhz", "MHz", True, "median SM clock while timed (a lower clock: throttling)"),
    Metric("power_w", "W", False, "median board power while timed"),
    Metric("gpu_busy_ms_per_step", "ms", False, "GPU busy time per step from the profiler"),
    Metric("kernels_per_step", "kernels", False, "kernel launches per step from the profiler"),
    Metric("max_abs_vs_eager", "", False, "max |latents - eager latents| (a decoder: its logits)"),
    Metric("cos_sim_vs_eager", "", True, "cosine similarity of the final latents (logits) with eager's"),
    Metric("rel_l2_vs_eager", "", False, "||latents - eager|| / ||eager||"),
    Metric("rel_err_vs_eager", "", False, "the relative error judged against the job's tolerance"),
    Metric("speedup_vs_eager", "x", True, "eager's ms_per_step over this mode's, for correct modes"),
    # profile
    Metric("kernels_per_call", "kernels", False, "kernel launches per call of the implementation"),
    # isa: one kernel call compiled for a target architecture (workers/jobs/isa.py); per call: registers and LDS of the
    # largest launch, occupancy and access widths of the narrowest, counts summed over the launches
    Metric("vgprs", "count", False, "vector registers per lane (AMD)"),
    Metric("agprs", "count", False, "accumulation registers per lane (AMD CDNA)"),
    Metric("sgprs", "count", False, "scalar registers per wave (AMD)"),
    Metric("registers", "count", False, "registers per thread (NVIDIA, from ptxas)"),
    Metric("vgpr_spills", "count", False, "vector registers spilled to scratch"),
    Metric("sgpr_spills", "count", False, "scalar registers spilled"),
    Metric("spill_store_bytes", "B", False, "bytes of spill stores (NVIDIA)"),
    Metric("spill_load_bytes", "B", False, "bytes of spill loads (NVIDIA)"),
    Metric("scratch_bytes", "B", False, "private (scratch / local) memory per lane"),
    Metric("lds_bytes", "B", False, "LDS / shared memory per program"),
    Metric("occupancy_waves", "waves/SIMD", True, "waves per SIMD the registers and LDS allow"),
    Metric("code_bytes", "B", False, "size of the machine code"),
    Metric("isa_compile_s", "s", False, "time to compile the call's kernels for the target"),
    Metric("load_min_bits", "bit", True, "the narrowest global load of the call, bits per lane"),
    Metric("store_min_bits", "bit", True, "the narrowest global store of the call, bits per lane"),
    *(
        Metric(f"{d}s_b{b}", "count", b == 128, f"global {d} instructions {b} bits wide")
        for d in ("load", "store")
        for b in (128, 96, 64, 32, 16, 8)
    ),
    Metric("transcendentals", "count", False, "transcendental instructions (exp, log, rsq, rcp, sqrt)"),
    Metric("conversions", "count", False, "conversion instructions (cvt)"),
    Metric("instructions", "count", False, "instructions in the machine code"),
    Metric("launches", "count", False, "kernel launches in one call"),
    Metric(
        "est_min_time_us",
        "us",
        False,
        "estimate, not a measurement: the kernel's byte model over the target's published memory bandwidth",
    ),
    Metric(
        "est_min_time_copy_us",
        "us",
        False,
        "estimate, not a measurement: the byte model over the device's measured copy bandwidth",
    ),
)

CATALOGUE: dict[str, Metric] = {m.name: m for m in _METRICS}


def get(name: str) -> Metric:
    """The catalogue entry of ``name``; :class:`UnknownMetricError` (a ValueError) for any other name."""
    try:
        return CATALOGUE[name]
    except (KeyError, TypeError):
        raise UnknownMetricError(name) from None


def of_kind(kind: str) -> tuple[str, ...]:
    """The names of the metrics the store reads from jobs of ``kind``, in catalogue order."""
    own = job_kinds.kind_of(kind).metrics
    return tuple(m.name for m in _METRICS if m.name in own)


def higher_is_better(name: str) -> bool:
    return get(name).higher_is_better
