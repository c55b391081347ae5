"""The end-to-end job: LTX-Video's denoising loop in several modes, side by side, on one device.

A JobSpec of kind ``e2e``: ``model="ltx-video"``, ``shape=[frames, height, width]``, ``dtype``, ``impls`` = the
modes (``workers.e2e_spec.MODES``), ``params`` (``workers.e2e_spec.PARAM_DEFAULTS``).  The loop is diffusers' own
``LTXPipeline`` with its ``FlowMatchEulerDiscreteScheduler``, classifier-free guidance on (transformer batch 2),
the text encoder skipped (precomputed random T5-sized embeddings, padded masks) and, unless ``pipeline`` is set, no
VAE (``output_type="latent"``); with ``pipeline`` the VAE decodes the video at the end.  The transformer comes from
``model_path`` (a local diffusers folder: a pipeline or a transformer; never a download) or is LTX-Video's default
configuration built on the device with random weights (``tiny``: a small configuration for CPU tests, with a VAE of
the real 32x/8x compression).

Modes (``workers.e2e_spec.MODES``), all on the same model object, the same inputs and the same seed: ``eager``
(stock), ``triton`` (kernels injected), ``compile`` (``compile_repeated_blocks(fullgraph=True)``), ``compile-max``
(the same in torch.compile's ``max-autotune-no-cudagraphs`` mode), ``triton+compile`` and ``triton+compile-max``
(every compile mode with ``kernels.inject.compile_options``: the mode's own options and Inductor's static launch of
user-defined Triton kernels, which leaves a stock model's compiled code as it is);
each also with ``+graph`` (``eager+graph``, ``triton+graph``, ...), where every transformer call replays a CUDA
graph (:mod:`kernels.inject.graphs`), so the step time is the device's and not the host's; and torch.compile's own
CUDA-graph modes, ``compile-ro`` (``reduce-overhead``) and ``compile-max-cg`` (``max-autotune``), with and without
the kernels, which compile the whole transformer (``transformer.compile(fullgraph=True)``) so that one call replays
one graph tree (a mode in which Inductor skipped its CUDA graphs fails with the count of skips).  The model is put back
between modes (graphs dropped, compiled call removed, ``torch._dynamo.reset()``, ``kernels.inject.restore``) so no
mode sees another's code.

Per mode: ``ms_per_step`` (median over repeats of the mean step time, every repeat kept as a sample; steps are
timed by device events at each step's end, the first step (which carries the pipeline's set-up) excluded),
``host_ms_per_step`` (one more call, the device drained at every step's end: the host's time to issue a step, its
median; a mode whose host time is above its device time is host-bound in plain calls), ``total_s`` (wall clock of one
whole call, VAE decode included), ``warmup_s`` (the warm-up calls: compilation,
Triton JIT, autotuning), ``peak_mem_gb`` (GPU only), and the final latents against eager's: ``max_abs_vs_eager``,
``cos_sim_vs_eager``, ``rel_l2_vs_eager`` (relative to the latents) and ``rel_err_vs_eager`` (relative to what the
denoising loop changed: ||out - eager|| / ||eager - initial noise||).  On an NVIDIA GPU the timed calls run beside
an ``nvidia-smi`` log (:mod:`workers.gpu_clocks`): ``sm_clock_mhz`` and ``power_w`` (medians) per mode, the rest in
``details["clocks"]`` (a mode that draws the power limit runs at a lower clock).  The eager reference is eager's
warm-up call, so eager's own numbers show run-to-run determinism.  A mode past the tolerance (``rel_err_vs_eager`` above
``tolerance``, or any non-finite value) fails: the job is ``incorrect`` and says which mode and why.  On the CPU
the compile modes are skipped (``details["skipped"]``), the rest still runs.  With ``profile_steps`` > 0 each mode
also runs one profiled call of that many steps (:mod:`workers.e2e_profile`): ``details["profile"][mode]`` and, on a
GPU, ``gpu_busy_ms_per_step`` and ``kernels_per_step``.  The profiled calls come after every mode's timed calls, in a
second pass (each mode entered again): once torch.profiler has captured CUDA activity, CUPTI stays attached to the
process and every later launch costs more host time (pytorch/pytorch#144455).
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from workers import gpu_clocks
from workers.e2e_profile import profile_call
from workers.e2e_spec import (
    DEFAULT_TOLERANCE,
    GRAPH_COMPILE_MODES,
    MODEL,
    MODES,
    PARAM_DEFAULTS,
    SPATIAL,
    TEMPORAL,
    check_shape,
    compiles_whole_model,
    latent_shape,
    mode_parts,
)
from workers.spec import STATUS_INCORRECT, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec, Measurement
from workers.timing import mark_profiler_used

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# A tiny transformer (2 blocks, width 32) and a VAE with the real model's 32x spatial / 8x temporal compression,
# so latent shapes and token counts are the real model's.
TINY_TRANSFORMER = dict(
    in_channels=8,
    out_channels=8,
    patch_size=1,
    patch_size_t=1,
    num_attention_heads=4,
    attention_head_dim=8,
    cross_attention_dim=32,
    num_layers=2,
    caption_channels=32,
)
TINY_VAE = dict(
    latent_channels=8,
    block_out_channels=(8, 8, 8, 8),
    decoder_block_out_channels=(8, 8, 8, 8),
    layers_per_block=(1, 1, 1, 1, 1),
    decoder_layers_per_block=(1, 1, 1, 1, 1),
    spatio_temporal_scaling=(True, True, True, False),
    decoder_spatio_temporal_scaling=(True, True, True, False),
    patch_size=4,
    patch_size_t=1,
    encoder_causal=True,
    decoder_causal=False,
)


def skip_reason(mode: str, device: torch.device, params: dict) -> str | None:
    """Why ``mode`` cannot run on ``device`` (None if it can)."""
    if device.type == "cuda":
        return None
    triton, comp, graph = mode_parts(mode)
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
# Model and inputs
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class Setup:
    pipe: Any
    source: str
    text_len: int
    caption_channels: int
    latents: torch.Tensor  # packed [1, S, C] fp32 on the device
    embeds: dict[str, torch.Tensor] = field(default_factory=dict)


def _scheduler():
    from diffusers import FlowMatchEulerDiscreteScheduler

    return FlowMatchEulerDiscreteScheduler()


def _load(path: Path, dtype: torch.dtype, pipeline: bool, device: torch.device):
    from diffusers import AutoencoderKLLTXVideo, LTXPipeline, LTXVideoTransformer3DModel

    if not path.is_dir():
        raise ValueError(f"model_path {str(path)!r} is not a directory (a local diffusers folder)")
    if (path / "model_index.json").exists():
        extra = {} if pipeline else {"vae": None}
        pipe = LTXPipeline.from_pretrained(
            path, text_encoder=None, tokenizer=None, torch_dtype=dtype, local_files_only=True, **extra
        )
        if pipeline and pipe.vae is None:
            raise ValueError(f"model_path {str(path)!r} has no VAE; pipeline=true needs one")
        return pipe.to(device), f"pipeline {path}"
    folder = path if (path / "config.json").exists() else path / "transformer"
    if not (folder / "config.json").exists():
        raise ValueError(
            f"model_path {str(path)!r}: neither a diffusers pipeline (model_index.json) nor a "
            f"transformer folder (config.json)"
        )
    transformer = LTXVideoTransformer3DModel.from_pretrained(folder, torch_dtype=dtype, local_files_only=True)
    vae = None
    if pipeline:
        with torch.device(device):
            vae = AutoencoderKLLTXVideo()
        vae = vae.to(dtype)
    pipe = LTXPipeline(scheduler=_scheduler(), vae=vae, text_encoder=None, tokenizer=None, transformer=transformer)
    return pipe.to(device), f"transformer {folder}" + (" + default VAE (random weights)" if pipeline else "")


def _build(tiny: bool, dtype: torch.dtype, pipeline: bool, device: torch.device, seed: int):
    from diffusers import AutoencoderKLLTXVideo, LTXPipeline, LTXVideoTransformer3DModel

    torch.manual_seed(seed)
    with torch.device(device):
        transformer = LTXVideoTransformer3DModel(**(TINY_TRANSFORMER if tiny else {}))
        vae = AutoencoderKLLTXVideo(**(TINY_VAE if tiny else {})) if pipeline else None
    transformer = transformer.to(dtype).eval()
    if vae is not None:
        vae = vae.to(dtype).eval()
        vae.use_framewise_encoding = False
        vae.use_framewise_decoding = False
    pipe = LTXPipeline(scheduler=_scheduler(), vae=vae, text_encoder=None, tokenizer=None, transformer=transformer)
    what = "tiny config" if tiny else "default config"
    return pipe, f"{what}, random weights" + (" (+ VAE)" if pipeline else "")


def setup(spec: JobSpec, device: torch.device, p: dict) -> Setup:
    dtype = DTYPES[spec.dtype]
    if p["model_path"]:
        pipe, source = _load(Path(str(p["model_path"])).expanduser(), dtype, bool(p["pipeline"]), device)
    else:
        pipe, source = _build(bool(p["tiny"]), dtype, bool(p["pipeline"]), device, int(p["seed"]))
    pipe.set_progress_bar_config(disable=True)
    if pipe.vae is not None and (pipe.vae_spatial_compression_ratio, pipe.vae_temporal_compression_ratio) != (
        SPATIAL,
        TEMPORAL,
    ):
        raise ValueError(
            f"the VAE compresses {pipe.vae_spatial_compression_ratio}x/"
            f"{pipe.vae_temporal_compression_ratio}x; LTX-Video's is {SPATIAL}x/{TEMPORAL}x"
        )
    cfg = pipe.transformer.config
    text_len = int(p["text_len"] or (16 if p["tiny"] else pipe.tokenizer_max_length))
    g = torch.Generator("cpu").manual_seed(int(p["seed"]))
    lf, lh, lw = latent_shape(spec.shape)
    raw = torch.randn(1, cfg.in_channels, lf, lh, lw, generator=g, dtype=torch.float32)
    latents = pipe._pack_latents(raw, cfg.patch_size, cfg.patch_size_t).to(device)
    embeds = {}
    for name, keep in (("prompt", 0.75), ("negative_prompt", 0.25)):
        e = torch.randn(1, text_len, cfg.caption_channels, generator=g, dtype=torch.float32)
        mask = torch.zeros(1, text_len, dtype=torch.long)
        mask[:, : max(1, int(text_len * keep))] = 1  # real prompts are padded to the tokenizer length
        embeds[f"{name}_embeds"] = e.to(device=device, dtype=dtype)
        embeds[f"{name}_attention_mask"] = mask.to(device)
    return Setup(pipe, source, text_len, cfg.caption_channels, latents, embeds)


# ----------------------------------------------------------------------------------------------------------------
# One call of the pipeline, timed
# ----------------------------------------------------------------------------------------------------------------
class _Clock:
    """Marks on the device's timeline (CUDA events, no host sync) or the host clock on the CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.device = device

    def mark(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def ms(self, a, b) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)


@dataclass
class Call:
    total_s: float
    step_ms: list[float]  # steps 2..N (the first step carries the pipeline's set-up)
    latents: torch.Tensor  # final latents (packed, fp32)
    host_ms: list[float] = field(default_factory=list)  # with host_probe: the host's time per step, steps 2..N

    @property
    def ms_per_step(self) -> float:
        return statistics.fmean(self.step_ms)


def run_call(s: Setup, spec: JobSpec, p: dict, device: torch.device, host_probe: bool = False) -> Call:
    """One timed call of the pipeline.  With ``host_probe`` the device is drained at the end of every step and the
    host's time to issue the next step is taken from there to the step's end on the host (``Call.host_ms``): what
    the host needs per step when it never waits for the device, whatever the device needs."""
    clock = _Clock(device)
    steps = int(p["steps"])
    marks: list[Any] = []
    final: list[torch.Tensor] = []
    host_ms: list[float] = []
    issued = 0.0  # the host clock when the current step began to be issued

    def on_step_end(pipe, i, t, kw):
        nonlocal issued
        if host_probe and i > 0:
            host_ms.append((time.perf_counter() - issued) * 1e3)
        marks.append(clock.mark())
        if i == steps - 1:
            final.append(kw["latents"].detach().float().clone())
        if host_probe:
            clock.sync()
            issued = time.perf_counter()
        return {}

    frames, height, width = spec.shape
    torch.manual_seed(int(p["seed"]))
    clock.sync()
    t0 = time.perf_counter()
    start = clock.mark()
    s.pipe(
        **s.embeds,
        height=height,
        width=width,
        num_frames=frames,
        num_inference_steps=steps,
        guidance_scale=float(p["guidance_scale"]),
        frame_rate=int(p["frame_rate"]),
        latents=s.latents.clone(),
        output_type="pt" if p["pipeline"] else "latent",
        callback_on_step_end=on_step_end,
        callback_on_step_end_tensor_inputs=["latents"],
        return_dict=False,
    )
    clock.sync()
    total = time.perf_counter() - t0
    if len(marks) != steps or not final:
        raise RuntimeError(f"the pipeline ran {len(marks)} steps, expected {steps}")
    if steps == 1:
        step_ms = [clock.ms(start, marks[0])]
    else:
        step_ms = [clock.ms(a, b) for a, b in zip(marks[:-1], marks[1:])]
    return Call(total, step_ms, final[0], host_ms)


# ----------------------------------------------------------------------------------------------------------------
# Modes
# ----------------------------------------------------------------------------------------------------------------
def _uncompile(model: torch.nn.Module) -> None:
    for m in model.modules():
        if getattr(m, "_compiled_call_impl", None) is not None:
            m._compiled_call_impl = None
    torch._dynamo.reset()


def enter_mode(mode: str, transformer: torch.nn.Module) -> dict[str, Any]:
    """Put the model into ``mode``; returns facts for the details (e.g. the injection report)."""
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
        if compiles_whole_model(mode):
            transformer.compile(fullgraph=True, options=options)
        else:
            transformer.compile_repeated_blocks(fullgraph=True, options=options)
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
    """Warm up, time ``repeats`` calls; returns measurements, facts, and the final latents of the last call."""
    transformer = s.pipe.transformer
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    facts: dict[str, Any] = {}
    skips_before = _cudagraph_skips()
    t0 = time.perf_counter()
    try:
        facts.update(enter_mode(mode, transformer))
        warm = [run_call(s, spec, p, device) for _ in range(max(int(p["warmup"]), 0))]
        warmup_s = time.perf_counter() - t0
        with gpu_clocks.ClockLog.for_device(device) as clock_log:  # the SM clock and power the calls ran at
            calls = [run_call(s, spec, p, device) for _ in range(int(p["repeats"]))]
        clocks = clock_log.summary()
        probe = run_call(s, spec, p, device, host_probe=True)
        if mode_parts(mode)[2]:  # enter_mode put a GraphedForward on the instance
            graphed = vars(transformer)["forward"]
            if not graphed.replays:
                raise RuntimeError("no transformer call replayed a CUDA graph")
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
        facts["reference"] = warm[0].latents
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
    return out, facts, calls[-1].latents


def _cudagraph_skips() -> int:
    """How many times Inductor has declined to use CUDA graphs for a compiled graph in this process."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["cudagraph_skips"])


def _profile_mode(mode: str, s: Setup, spec: JobSpec, p: dict, device: torch.device) -> dict[str, Any]:
    """Enter ``mode`` again, warm it up with one call (compilation, Triton JIT) and profile one call of
    ``profile_steps`` steps; the breakdown of :func:`workers.e2e_profile.profile_call`."""
    transformer = s.pipe.transformer
    n_prof = int(p["profile_steps"])
    short = {**p, "steps": n_prof}
    try:
        enter_mode(mode, transformer)
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
    unknown = set(spec.params) - set(PARAM_DEFAULTS)
    if unknown:
        raise ValueError(f"e2e params: unknown {sorted(unknown)}; allowed: {', '.join(PARAM_DEFAULTS)}")
    p = {**PARAM_DEFAULTS, **spec.params}
    for k in ("steps", "repeats"):
        if int(p[k]) < 1:
            raise ValueError(f"e2e params: {k} must be >= 1, got {p[k]}")
    for k in ("warmup", "profile_steps"):
        if int(p[k]) < 0:
            raise ValueError(f"e2e params: {k} must be >= 0, got {p[k]}")
    if float(p["guidance_scale"]) <= 1.0:
        raise ValueError("e2e params: guidance_scale must be > 1 (classifier-free guidance on: transformer batch 2)")
    if p["tolerance"] is None:
        p["tolerance"] = DEFAULT_TOLERANCE[spec.dtype]
    if not float(p["tolerance"]) > 0:
        raise ValueError(f"e2e params: tolerance must be > 0, got {p['tolerance']}")
    return p


def run(spec: JobSpec, device: torch.device) -> JobResult:
    if spec.model != MODEL:
        raise ValueError(f"e2e: unknown model {spec.model!r}; supported: {MODEL}")
    if spec.dtype not in DTYPES:
        raise ValueError(f"e2e: unknown dtype {spec.dtype!r}; allowed: {', '.join(DTYPES)}")
    check_shape(list(spec.shape))
    modes = list(spec.impls)
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ValueError(f"e2e: unknown mode(s) {bad or modes}; allowed: {', '.join(MODES)}")
    p = _params(spec)

    details: dict[str, Any] = {"skipped": {}, "errors": {}, "tolerance": {"rel_err_vs_eager": float(p["tolerance"])}}
    runnable = []
    for m in modes:
        why = skip_reason(m, device, p)
        if why:
            details["skipped"][m] = why
        else:
            runnable.append(m)
    if not runnable:
        return JobResult(
            spec.key,
            STATUS_SKIPPED,
            details=details,
            error="no mode can run here: " + "; ".join(f"{k}: {v}" for k, v in details["skipped"].items()),
        )

    t_setup = time.perf_counter()
    s = setup(spec, device, p)
    lf, lh, lw = latent_shape(spec.shape)
    details["config"] = {
        "source": s.source,
        "latent": [lf, lh, lw],
        "tokens": int(s.latents.shape[1]),
        "batch": 2,
        "text_len": s.text_len,
        "steps": int(p["steps"]),
        "params": sum(t.numel() for t in s.pipe.transformer.parameters()),
        "layers": int(s.pipe.transformer.config.num_layers),
        "pipeline": bool(p["pipeline"]),
        "setup_s": round(time.perf_counter() - t_setup, 3),
    }

    measurements: list[Measurement] = []
    failed: list[str] = []
    ref: torch.Tensor | None = None
    # eager first: its warm-up call is the reference for every mode
    order = (["eager"] if "eager" in runnable else []) + [m for m in runnable if m != "eager"]
    if "eager" not in runnable:
        p_ref = {**p, "warmup": 0}
        ref = run_call(s, spec, p_ref, device).latents
    medians: dict[str, float] = {}
    correct: dict[str, bool] = {}
    for mode in order:
        try:
            ms_, facts, latents = _run_mode(mode, s, spec, p, device)
        except Exception as exc:
            msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            details["errors"][mode] = msg
            details.setdefault("tracebacks", {})[mode] = traceback.format_exc(limit=6)
            failed.append(f"{mode}: {msg}")
            if device.type == "cuda":
                torch.cuda.empty_cache()
            continue
        if mode == "eager":
            ref = facts.pop("reference", None)
            if ref is None:  # no warm-up call: the timed call is the reference
                ref = latents
        cmp = compare(latents, ref, s.latents)
        ok = cmp["finite"] and cmp["rel_err_vs_eager"] <= float(p["tolerance"])
        correct[mode] = ok
        for key in ("max_abs_vs_eager", "cos_sim_vs_eager", "rel_l2_vs_eager", "rel_err_vs_eager"):
            ms_.append(Measurement(mode, key, cmp[key]))
        ms_.append(Measurement(mode, "correct", 1.0 if ok else 0.0))
        if not ok:
            why = (
                "non-finite values in the final latents"
                if not cmp["finite"]
                else f"final latents drift from eager: rel_err {cmp['rel_err_vs_eager']:.3g} > tolerance "
                f"{float(p['tolerance']):.3g} (max_abs {cmp['max_abs_vs_eager']:.3g}, "
                f"cos_sim {cmp['cos_sim_vs_eager']:.6f})"
            )
            failed.append(f"{mode}: {why}")
        medians[mode] = ms_[0].value
        measurements += ms_
        if facts.get("injection"):
            details.setdefault("injection", {})[mode] = facts["injection"]
        details.setdefault("step_ms", {})[mode] = facts["step_ms"]
        if facts.get("graph"):
            details.setdefault("graph", {})[mode] = facts["graph"]
        if facts.get("compile_graphs"):
            details.setdefault("compile_graphs", {})[mode] = facts["compile_graphs"]
        if facts.get("clocks"):
            details.setdefault("clocks", {})[mode] = facts["clocks"]
        del latents
    # The profiled calls last (see the module doc): a capture would slow every later call's launches.
    if int(p["profile_steps"]):
        for mode in [m for m in order if m in medians]:
            try:
                prof = _profile_mode(mode, s, spec, p, device)
            except Exception as exc:
                msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                details.setdefault("profile_errors", {})[mode] = msg
                continue
            details.setdefault("profile", {})[mode] = prof
            measurements += _profile_measurements(mode, prof)
    if "eager" in medians and correct.get("eager"):
        for mode, med in medians.items():
            if correct.get(mode):
                measurements.append(Measurement(mode, "speedup_vs_eager", medians["eager"] / med, "x"))
    status = STATUS_INCORRECT if failed else STATUS_OK
    return JobResult(spec.key, status, measurements, error="; ".join(failed) or None, details=details)
