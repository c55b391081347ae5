"""The end-to-end job: a model's denoising loop or its ``generate`` in several modes, side by side, on one device.

A JobSpec of kind ``e2e``: ``model`` (``workers.jobs.e2e.spec.MODELS``: ``ltx-video``, ``flux``, ``sd3``, ``llama``),
``shape`` (``[frames, height, width]``, ``[height, width]``, ``[batch, prompt_len]``), ``dtype``, ``impls`` = the
modes (``workers.jobs.e2e.spec.MODES``), ``params`` (``workers.jobs.e2e.spec.param_defaults(model)``).  Each model's own
module builds it and times one call: :mod:`workers.jobs.e2e.ltx` (LTXPipeline), :mod:`workers.jobs.e2e.image`
(FluxPipeline, StableDiffusion3Pipeline), :mod:`workers.jobs.e2e.llm` (``generate`` with a static KV cache).  Everything
else is the same for every model and lives here: the modes, the timing, the comparison with eager, clocks, the profile.

Modes (``workers.jobs.e2e.spec.MODES``), all on the same model object, the same inputs and the same seed: ``eager``
(stock), ``triton`` (kernels injected), ``compile`` (``compile_repeated_blocks(fullgraph=True)``; SD3's
JointTransformerBlocks one by one; the decoder whole, ``model.compile(fullgraph=True)``, as its step is one
forward), ``compile-max``
(the same in torch.compile's ``max-autotune-no-cudagraphs`` mode), ``triton+compile`` and ``triton+compile-max``
(every compile mode with ``kernels.inject.compile_options``: the mode's own options and Inductor's static launch of
user-defined Triton kernels, which leaves a stock model's compiled code as it is);
each also with ``+graph`` (``eager+graph``, ``triton+graph``, ...), where every transformer call replays a CUDA
graph (:mod:`kernels.inject.graphs`), so the step time is the device's and not the host's; and torch.compile's own
CUDA-graph modes, ``compile-ro`` (``reduce-overhead``) and ``compile-max-cg`` (``max-autotune``), with and without
the kernels, which compile the whole transformer (``transformer.compile(fullgraph=True)``) so that one call replays
one graph tree (a mode in which Inductor skipped its CUDA graphs fails with the count of skips).  The decoder takes
no ``+graph`` (its forward updates the KV cache; see ``skip_reason``).  The model is put back
between modes (graphs dropped, compiled call removed, ``torch._dynamo.reset()``, ``kernels.inject.restore``) so no
mode sees another's code.

Per mode: ``ms_per_step`` (median over repeats of the mean step time, every repeat kept as a sample; steps are
timed by device events at each step's end, the first step (which carries the pipeline's set-up, or the decoder's
prefill) excluded; the decoder's step is a decode step: one token per sequence),
``host_ms_per_step`` (one more call, the device drained at every step's end: the host's time to issue a step, its
median; a mode whose host time is above its device time is host-bound in plain calls), ``total_s`` (wall clock of one
whole call, VAE decode included), ``warmup_s`` (the warm-up calls: compilation,
Triton JIT, autotuning), ``peak_mem_gb`` (GPU only); the decoder also ``prefill_ms``, ``prefill_tokens_per_s`` and
``decode_tokens_per_s``; and the final latents (the decoder: the logits of every step) against eager's:
``max_abs_vs_eager``,
``cos_sim_vs_eager``, ``rel_l2_vs_eager`` (relative to the latents) and ``rel_err_vs_eager`` (relative to what the
denoising loop changed: ||out - eager|| / ||eager - initial noise||; for logits, relative to eager's logits).
On an NVIDIA GPU the timed calls run beside
an ``nvidia-smi`` log (:mod:`workers.device.clocks`): ``sm_clock_mhz`` and ``power_w`` (medians) per mode, the rest in
``details["clocks"]`` (a mode that draws the power limit runs at a lower clock).  The eager reference is eager's
warm-up call, so eager's own numbers show run-to-run determinism.  A mode past the tolerance (``rel_err_vs_eager`` above
``tolerance``, or any non-finite value) fails: the job is ``incorrect`` and says which mode and why.  On the CPU
the compile modes are skipped (``details["skipped"]``), the rest still runs.  With ``profile_steps`` > 0 each mode
also runs one profiled call of that many steps (:mod:`workers.jobs.e2e.profile`): ``details["profile"][mode]`` and, on a
GPU, ``gpu_busy_ms_per_step`` and ``kernels_per_step``.  The profiled calls come after every mode's timed calls, in a
second pass (each mode entered again): once torch.profiler has captured CUDA activity, CUPTI stays attached to the
process and every later launch costs more host time (pytorch/pytorch#144455).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
import traceback
from typing import Any

import torch

from workers.device import clocks as gpu_clocks
from workers.jobs.e2e.profile import profile_call
from workers.jobs.e2e.spec import (
    DEFAULT_TOLERANCE,
    FLUX,
    GRAPH_COMPILE_MODES,
    LLAMA,
    MODEL,
    MODELS,
    MODES,
    OUTPUT,
    SD3,
    check_model_shape,
    compiles_whole_model,
    family_of,
    graph_modes_apply,
    mode_parts,
    param_defaults,
)
from workers.jobs.e2e.steps import Call, Setup
from workers.runtime.timing import mark_profiler_used
from workers.spec import STATUS_INCORRECT, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec, Measurement

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def skip_reason(mode: str, device: torch.device, params: dict, model: str = MODEL) -> str | None:
    """Why ``mode`` cannot run on ``device`` for the e2e model ``model`` (None if it can)."""
    triton, comp, graph = mode_parts(mode)
    if graph and not graph_modes_apply(model):
        return (
            "kernels.inject.cuda_graphs runs a new call geometry before capturing it, and a decode step updates the "
            "KV cache each time; the decoder's CUDA-graph modes are torch.compile's (compile-ro, compile-max-cg)"
        )
    if device.type == "cuda":
        return None
    if graph:
        return "replays CUDA graphs; runs on a CUDA GPU"
    if comp in GRAPH_COMPILE_MODES:
        return f"torch.compile's {comp} mode replays CUDA graphs; runs on a CUDA GPU"
    if triton and comp:
        return (
            "needs Triton kernels under torch.compile: on the CPU they run in Triton's interpreter "
            "(TRITON_INTERPRET=1), which torch.compile cannot trace; runs on a GPU"
        )
    if comp and not params.get("cpu_compile"):
        return (
            "torch.compile on the CPU generates Inductor's C++ code, not the GPU Triton code this mode "
            "measures; runs on a GPU (set params.cpu_compile to run it here anyway)"
        )
    return None


# ----------------------------------------------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------------------------------------------
def _family(model: str):
    """The module that builds ``model`` and times one call of it: setup(spec, device, p, dtype) -> Setup,
    run_call(s, spec, p, device, host_probe) -> Call."""
    if model == MODEL:
        from workers.jobs.e2e import ltx as e2e_ltx

        return e2e_ltx
    if model in (FLUX, SD3):
        from workers.jobs.e2e import image as e2e_image

        return e2e_image
    if model == LLAMA:
        from workers.jobs.e2e import llm as e2e_llm

        return e2e_llm
    raise ValueError(f"e2e: unknown model {model!r}; supported: {', '.join(MODELS)}")


def setup(spec: JobSpec, device: torch.device, p: dict) -> Setup:
    """The model of ``spec`` on ``device``, its inputs and ``details["config"]``."""
    spec = _family_spec(spec)
    return _family(spec.model).setup(spec, device, p, DTYPES[spec.dtype])


def run_call(s: Setup, spec: JobSpec, p: dict, device: torch.device, host_probe: bool = False) -> Call:
    """One timed call of the model (its loop or its generate).  With ``host_probe`` the device is drained at the end
    of every step and the host's time to issue the next step is taken from there to the step's end on the host
    (``Call.host_ms``): what the host needs per step when it never waits for the device, whatever the device
    needs."""
    spec = _family_spec(spec)
    return _family(spec.model).run_call(s, spec, p, device, host_probe)


def compile_scope(model: str, mode: str) -> str:
    """What ``mode`` compiles: ``"model"`` (the whole model: torch.compile's CUDA-graph modes, and every compile
    mode of the decoder, whose step is one forward), ``"blocks"`` (the transformer's repeated blocks, one
    compiled code each: ``compile_repeated_blocks``, or SD3's JointTransformerBlocks one by one)."""
    return "model" if model == LLAMA or compiles_whole_model(mode) else "blocks"


# ----------------------------------------------------------------------------------------------------------------
# Modes
# ----------------------------------------------------------------------------------------------------------------
def _uncompile(model: torch.nn.Module) -> None:
    for m in model.modules():
        if getattr(m, "_compiled_call_impl", None) is not None:
            m._compiled_call_impl = None
    torch._dynamo.reset()


def enter_mode(mode: str, transformer: torch.nn.Module, model: str = MODEL) -> dict[str, Any]:
    """Put the model (``transformer``: the module the modes act on, of the e2e model ``model``) into ``mode``;
    returns facts for the details (e.g. the injection report)."""
    info: dict[str, Any] = {}
    triton, comp, graph = mode_parts(mode)
    if triton:
        from kernels.inject import inject

        rep = inject(transformer)
        if not rep.replaced:
            raise RuntimeError(f"injection replaced nothing: {rep.summary()}")
        info["injection"] = {
            "summary": rep.summary(),
            "counts": rep.counts(),
            "kernels": rep.kernels_used(),
            "left": rep.left_counts(),
        }
    if comp:
        from kernels.inject.compile_options import compile_options

        info["compile_options"] = options = compile_options(comp)
        model = family_of(model)
        blocks = None
        if model in (FLUX, SD3):
            from workers.jobs.e2e.image import IMAGE_MODELS

            blocks = IMAGE_MODELS[model].blocks
        if compile_scope(model, mode) == "model":
            transformer.compile(fullgraph=True, options=options)
        elif blocks is None:
            transformer.compile_repeated_blocks(fullgraph=True, options=options)
        else:
            compiled = [m for m in transformer.modules() if type(m).__name__ in blocks]
            if not compiled:
                raise RuntimeError(f"no {' or '.join(blocks)} to compile in {type(transformer).__name__}")
            for m in compiled:
                m.compile(fullgraph=True, options=options)
    if graph:
        from kernels.inject.graphs import cuda_graphs

        cuda_graphs(transformer)
    return info


def leave_mode(mode: str, transformer: torch.nn.Module) -> None:
    triton, comp, graph = mode_parts(mode)
    if graph:
        from kernels.inject.graphs import remove_cuda_graphs

        remove_cuda_graphs(transformer)
    if comp:
        _uncompile(transformer)
    if triton:
        from kernels.inject import is_injected, restore

        restore(transformer)
        if is_injected(transformer):
            raise RuntimeError("restore left the model injected")


def compare(out: torch.Tensor, ref: torch.Tensor, start: torch.Tensor) -> dict[str, float]:
    """Final latents ``out`` against eager's ``ref``; ``start`` = the initial (noise) latents both began from.

    ``rel_err_vs_eager`` = ||out - ref|| / ||ref - start||: the error relative to what the denoising loop changed
    (the model's contribution), the figure the tolerance applies to; ``rel_l2_vs_eager`` is relative to the
    latents themselves (dominated by the initial noise when there are few steps)."""
    o, r, x0 = out.double().flatten(), ref.double().flatten(), start.double().flatten().to(out.device)
    diff = o - r
    finite = bool(torch.isfinite(o).all())
    rn = torch.linalg.vector_norm(r).item()
    on = torch.linalg.vector_norm(o).item()
    dn = torch.linalg.vector_norm(r - x0).item()
    dnorm = torch.linalg.vector_norm(diff).item()
    if not finite:
        return {
            "max_abs_vs_eager": math.inf,
            "rel_l2_vs_eager": math.inf,
            "rel_err_vs_eager": math.inf,
            "cos_sim_vs_eager": math.nan,
            "finite": False,
        }
    cos = torch.dot(o, r).item() / (on * rn) if on > 0 and rn > 0 else (1.0 if on == rn == 0 else 0.0)
    return {
        "max_abs_vs_eager": diff.abs().max().item() if diff.numel() else 0.0,
        "rel_l2_vs_eager": dnorm / (rn if rn > 0 else 1.0),
        "rel_err_vs_eager": dnorm / (dn if dn > 0 else 1.0),
        "cos_sim_vs_eager": max(-1.0, min(1.0, cos)),
        "finite": True,
    }


def _run_mode(
    mode: str, s: Setup, spec: JobSpec, p: dict, device: torch.device
) -> tuple[list[Measurement], dict[str, Any], torch.Tensor]:
    """Warm up, time ``repeats`` calls; returns measurements, facts, and the output of the last call."""
    transformer = s.model
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    facts: dict[str, Any] = {}
    skips_before = _cudagraph_skips()
    t0 = time.perf_counter()
    try:
        facts.update(enter_mode(mode, transformer, spec.model))
        warm = [run_call(s, spec, p, device) for _ in range(max(int(p["warmup"]), 0))]
        warmup_s = time.perf_counter() - t0
        with gpu_clocks.ClockLog.for_device(device) as clock_log:  # the SM clock and power the calls ran at
            calls = [run_call(s, spec, p, device) for _ in range(int(p["repeats"]))]
        clocks = clock_log.summary()
        probe = run_call(s, spec, p, device, host_probe=True)
        if mode_parts(mode)[2]:  # enter_mode put a GraphedForward on the instance
            graphed = vars(transformer)["forward"]
            if not graphed.replays:
                raise RuntimeError("no model call replayed a CUDA graph")
            facts["graph"] = {"captures": graphed.captures, "replays": graphed.replays}
        if mode_parts(mode)[1] in GRAPH_COMPILE_MODES:
            skipped = _cudagraph_skips() - skips_before
            if skipped:
                raise RuntimeError(
                    f"torch.compile skipped its CUDA graphs {skipped} time(s) (TORCH_LOGS=perf_hints says why): "
                    f"the mode's calls launched from the host"
                )
            facts["compile_graphs"] = {"cudagraph_skips": 0}
    finally:
        leave_mode(mode, transformer)
    if mode == "eager" and warm:
        facts["reference"] = warm[0].output
    ms = [c.ms_per_step for c in calls]
    totals = [c.total_s for c in calls]
    out = [
        Measurement(mode, "ms_per_step", statistics.median(ms), "ms", ms),
        Measurement(mode, "total_s", statistics.median(totals), "s", totals),
        Measurement(mode, "warmup_s", warmup_s, "s"),
    ]
    if probe.host_ms:
        out.append(Measurement(mode, "host_ms_per_step", statistics.median(probe.host_ms), "ms", probe.host_ms))
    if device.type == "cuda":
        out.append(Measurement(mode, "peak_mem_gb", torch.cuda.max_memory_allocated(device) / 1e9, "GB"))
    if clocks is not None:
        facts["clocks"] = clocks
        if "sm_mhz_median" in clocks:
            out.append(Measurement(mode, "sm_clock_mhz", clocks["sm_mhz_median"], "MHz"))
        if "power_w_median" in clocks:
            out.append(Measurement(mode, "power_w", clocks["power_w_median"], "W"))
    facts["step_ms"] = [round(x, 4) for c in calls for x in c.step_ms]
    if spec.model == LLAMA:
        from workers.jobs.e2e.llm import rate_measurements

        out += rate_measurements(mode, calls, s)
    return out, facts, calls[-1].output


def _cudagraph_skips() -> int:
    """How many times Inductor has declined to use CUDA graphs for a compiled graph in this process."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["cudagraph_skips"])


def _profile_mode(mode: str, s: Setup, spec: JobSpec, p: dict, device: torch.device) -> dict[str, Any]:
    """Enter ``mode`` again, warm it up with one call (compilation, Triton JIT) and profile one call of
    ``profile_steps`` steps; the breakdown of :func:`workers.jobs.e2e.profile.profile_call`.  The decoder's capture
    begins after its prefill (its ``profile_steps`` decode steps only)."""
    transformer = s.model
    n_prof = int(p["profile_steps"])
    try:
        enter_mode(mode, transformer, spec.model)
        if spec.model == LLAMA:
            from workers.jobs.e2e import llm as e2e_llm

            short = {**p, "new_tokens": n_prof + 1}
            run_call(s, spec, short, device)
            mark_profiler_used()
            return profile_call(
                lambda start: e2e_llm.run_call(s, spec, short, device, on_prefill=start), n_prof, device, deferred=True
            )
        short = {**p, "steps": n_prof}
        run_call(s, spec, short, device)
        mark_profiler_used()
        return profile_call(lambda: run_call(s, spec, short, device), n_prof, device)
    finally:
        leave_mode(mode, transformer)


def _profile_measurements(mode: str, prof: dict[str, Any]) -> list[Measurement]:
    if "gpu_busy_ms" not in prof:
        return []
    return [
        Measurement(mode, "gpu_busy_ms_per_step", prof["gpu_busy_ms"], "ms"),
        Measurement(mode, "kernels_per_step", prof["kernels"], ""),
    ]


def _params(spec: JobSpec) -> dict[str, Any]:
    spec = _family_spec(spec)
    defaults = param_defaults(spec.model)
    unknown = set(spec.params) - set(defaults)
    if unknown:
        raise ValueError(f"e2e params: unknown {sorted(unknown)}; allowed: {', '.join(defaults)}")
    p = {**defaults, **spec.params}
    for k in ("steps", "repeats", "new_tokens"):
        if k in p and int(p[k]) < 1:
            raise ValueError(f"e2e params: {k} must be >= 1, got {p[k]}")
    for k in ("warmup", "profile_steps"):
        if int(p[k]) < 0:
            raise ValueError(f"e2e params: {k} must be >= 0, got {p[k]}")
    if spec.model == LLAMA and int(p["new_tokens"]) < 2:
        raise ValueError(
            f"e2e params: new_tokens must be >= 2 (a prefill and at least one decode step), got {p['new_tokens']}"
        )
    if spec.model == FLUX and float(p["guidance_scale"]) <= 0.0:
        raise ValueError("e2e params: guidance_scale must be > 0 (FLUX's guidance embedding)")
    if spec.model in (MODEL, SD3) and float(p["guidance_scale"]) <= 1.0:
        raise ValueError("e2e params: guidance_scale must be > 1 (classifier-free guidance on: transformer batch 2)")
    if p["tolerance"] is None:
        p["tolerance"] = DEFAULT_TOLERANCE[spec.dtype]
    if not float(p["tolerance"]) > 0:
        raise ValueError(f"e2e params: tolerance must be > 0, got {p['tolerance']}")
    return p


def _family_spec(spec: JobSpec) -> JobSpec:
    """``spec`` with its model as the family that runs it (``sd3/sd3.5-large`` -> ``sd3``)."""
    return dataclasses.replace(spec, model=family_of(spec.model or ""))


def run(spec: JobSpec, device: torch.device) -> JobResult:
    spec = _family_spec(spec)
    _check(spec)
    p = _params(spec)
    out = _Outcome(details={"skipped": {}, "errors": {}, "tolerance": {"rel_err_vs_eager": float(p["tolerance"])}})
    runnable = _runnable(spec, device, p, out.details)
    if not runnable:
        return JobResult(
            spec.key,
            STATUS_SKIPPED,
            details=out.details,
            error="no mode can run here: " + "; ".join(f"{k}: {v}" for k, v in out.details["skipped"].items()),
        )
    s = _set_up(spec, device, p, out.details)
    # eager first: its warm-up call is the reference for every mode
    order = (["eager"] if "eager" in runnable else []) + [m for m in runnable if m != "eager"]
    ref = None if "eager" in runnable else run_call(s, spec, {**p, "warmup": 0}, device).output
    for mode in order:
        ref = _time_mode(mode, s, spec, p, device, ref, out)
    # The profiled calls last (see the module doc): a capture would slow every later call's launches.
    if int(p["profile_steps"]):
        _profile_modes([m for m in order if m in out.medians], s, spec, p, device, out)
    out.measurements += _speedups(out.medians, out.correct)
    status = STATUS_INCORRECT if out.failed else STATUS_OK
    return JobResult(spec.key, status, out.measurements, error="; ".join(out.failed) or None, details=out.details)


@dataclasses.dataclass
class _Outcome:
    """What a job's modes have given so far: measurements, failures (``mode: why``), the median ms per step and the
    correctness of each mode timed, and the result's details."""

    details: dict[str, Any]
    measurements: list[Measurement] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)
    medians: dict[str, float] = dataclasses.field(default_factory=dict)
    correct: dict[str, bool] = dataclasses.field(default_factory=dict)


def _check(spec: JobSpec) -> None:
    """ValueError for a model, dtype, shape or mode this kind does not know."""
    if spec.model not in MODELS:
        raise ValueError(f"e2e: unknown model {spec.model!r}; supported: {', '.join(MODELS)}")
    if spec.dtype not in DTYPES:
        raise ValueError(f"e2e: unknown dtype {spec.dtype!r}; allowed: {', '.join(DTYPES)}")
    check_model_shape(spec.model, list(spec.shape))
    modes = list(spec.impls)
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ValueError(f"e2e: unknown mode(s) {bad or modes}; allowed: {', '.join(MODES)}")


def _runnable(spec: JobSpec, device: torch.device, p: dict, details: dict[str, Any]) -> list[str]:
    """The modes that can run here; the others go to ``details["skipped"]`` with the reason."""
    runnable = []
    for m in spec.impls:
        why = skip_reason(m, device, p, spec.model)
        if why:
            details["skipped"][m] = why
        else:
            runnable.append(m)
    return runnable


def _set_up(spec: JobSpec, device: torch.device, p: dict, details: dict[str, Any]) -> Setup:
    """The model and its inputs (:func:`setup`); its config, parameter count and set-up time into ``details``."""
    t_setup = time.perf_counter()
    s = setup(spec, device, p)
    details["config"] = {
        **s.config,
        "params": sum(t.numel() for t in s.model.parameters()),
        "setup_s": round(time.perf_counter() - t_setup, 3),
    }
    return s


# The facts of a mode's timing kept in the details, per mode: always (step_ms), or when the mode has them.
_MODE_FACTS = ("injection", "step_ms", "graph", "compile_graphs", "clocks")


def _time_mode(
    mode: str, s: Setup, spec: JobSpec, p: dict, device: torch.device, ref: torch.Tensor | None, out: _Outcome
) -> torch.Tensor | None:
    """Warm up and time ``mode`` (:func:`_run_mode`), compare its output with eager's and record it all in
    ``out``; a mode that raises is an error of the job, not of the sweep.  Returns the reference output (eager's
    warm-up call's, taken when eager is timed)."""
    try:
        ms_, facts, latents = _run_mode(mode, s, spec, p, device)
    except Exception as exc:
        msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        out.details["errors"][mode] = msg
        out.details.setdefault("tracebacks", {})[mode] = traceback.format_exc(limit=6)
        out.failed.append(f"{mode}: {msg}")
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return ref
    if mode == "eager":
        ref = facts.pop("reference", None)
        if ref is None:  # no warm-up call: the timed call is the reference
            ref = latents
    ok, why = _against_eager(mode, latents, ref, s, spec, p, ms_)
    out.correct[mode] = ok
    if not ok:
        out.failed.append(f"{mode}: {why}")
    out.medians[mode] = ms_[0].value
    out.measurements += ms_
    for key in _MODE_FACTS:
        if key == "step_ms" or facts.get(key):
            out.details.setdefault(key, {})[mode] = facts[key]
    return ref


def _against_eager(
    mode: str, latents: torch.Tensor, ref: torch.Tensor, s: Setup, spec: JobSpec, p: dict, ms_: list[Measurement]
) -> tuple[bool, str]:
    """The mode's output against eager's (:func:`compare`): its measurements appended to ``ms_``; (correct, why
    not)."""
    cmp = compare(latents, ref, s.start)
    tolerance = float(p["tolerance"])
    ok = cmp["finite"] and cmp["rel_err_vs_eager"] <= tolerance
    for key in ("max_abs_vs_eager", "cos_sim_vs_eager", "rel_l2_vs_eager", "rel_err_vs_eager"):
        ms_.append(Measurement(mode, key, cmp[key]))
    ms_.append(Measurement(mode, "correct", 1.0 if ok else 0.0))
    if ok:
        return True, ""
    if not cmp["finite"]:
        return False, f"non-finite values in the {OUTPUT[spec.model]}"
    return False, (
        f"{OUTPUT[spec.model]} drift from eager: rel_err {cmp['rel_err_vs_eager']:.3g} > tolerance "
        f"{tolerance:.3g} (max_abs {cmp['max_abs_vs_eager']:.3g}, cos_sim {cmp['cos_sim_vs_eager']:.6f})"
    )


def _profile_modes(modes: list[str], s: Setup, spec: JobSpec, p: dict, device: torch.device, out: _Outcome) -> None:
    """Profile each mode that was timed (:func:`_profile_mode`); a failed profile is noted, never the job's
    failure."""
    for mode in modes:
        try:
            prof = _profile_mode(mode, s, spec, p, device)
        except Exception as exc:
            msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            out.details.setdefault("profile_errors", {})[mode] = msg
            continue
        out.details.setdefault("profile", {})[mode] = prof
        out.measurements += _profile_measurements(mode, prof)


def _speedups(medians: dict[str, float], correct: dict[str, bool]) -> list[Measurement]:
    """Each correct mode's speed-up over eager, when eager itself is correct."""
    if "eager" not in medians or not correct.get("eager"):
        return []
    return [
        Measurement(mode, "speedup_vs_eager", medians["eager"] / med, "x")
        for mode, med in medians.items()
        if correct.get(mode)
    ]
