"""What an end-to-end (``e2e``) JobSpec may say: the model, the modes, the parameters and their defaults, and
the shape rule.  Plain data (no torch), shared by the planner (orchestrator.plan_e2e) and the job (workers.e2e)."""

from __future__ import annotations

from typing import Any

MODEL = "ltx-video"
# A mode is "+"-joined parts: "triton" (the kernels injected), one of COMPILE_MODES (torch.compile in that mode,
# fullgraph) and "graph" (each transformer call replayed from a CUDA graph by kernels.inject.cuda_graphs:
# launch-free, so the step time is the device's); no part at all is "eager" (and "eager+graph" with graph alone).
# "compile" and "compile-max" compile the repeated blocks (compile_repeated_blocks); "compile-ro" and
# "compile-max-cg" are torch.compile's own CUDA-graph modes (Inductor's CUDA graph trees) and compile the whole
# transformer, as a user who wants speed writes it (torch.compile(transformer, mode="reduce-overhead")): one call,
# one graph tree.  They take no "+graph" (a graph inside a graph capture).
COMPILE_MODES = {
    "compile": "default",
    "compile-max": "max-autotune-no-cudagraphs",
    "compile-ro": "reduce-overhead",
    "compile-max-cg": "max-autotune",
}
# torch.compile modes whose compiled code replays CUDA graphs (Inductor's "triton.cudagraphs"), compiled whole-model
GRAPH_COMPILE_MODES = ("reduce-overhead", "max-autotune")
MODES = (
    "eager",
    "triton",
    "compile",
    "triton+compile",
    "compile-max",
    "triton+compile-max",
    "eager+graph",
    "triton+graph",
    "compile+graph",
    "triton+compile+graph",
    "compile-max+graph",
    "triton+compile-max+graph",
    "compile-ro",
    "triton+compile-ro",
    "compile-max-cg",
    "triton+compile-max-cg",
)
# What a sweep runs unless told: eager and the kernels; torch.compile in its default mode and in
# max-autotune-no-cudagraphs, each with and without the kernels, in plain calls (host launches, as a user runs
# them); and the graph-enabled modes side by side: torch.compile's reduce-overhead, the compiled blocks under
# kernels.inject.cuda_graphs, and the kernels under cuda_graphs with and without compile.  compile-max-cg
# (max-autotune with CUDA graphs) is left out: it autotunes the whole model's GEMMs and Inductor templates first
# (compile-max's blocks alone took 110-117 s of warm-up on the H200), so it runs only when asked.
DEFAULT_MODES = (
    "eager",
    "triton",
    "compile",
    "triton+compile",
    "compile-max",
    "triton+compile-max",
    "compile-ro",
    "compile+graph",
    "triton+graph",
    "triton+compile+graph",
)


def mode_parts(mode: str) -> tuple[bool, str | None, bool]:
    """``(triton, compile, graph)`` of a mode name: whether the kernels are injected, the torch.compile mode
    (``"default"``, ``"max-autotune-no-cudagraphs"``, ``"reduce-overhead"``, ``"max-autotune"`` or None) and
    whether calls replay a CUDA graph of kernels.inject.cuda_graphs."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; allowed: {', '.join(MODES)}")
    parts = mode.split("+")
    comp = [COMPILE_MODES[p] for p in parts if p in COMPILE_MODES]
    return "triton" in parts, (comp[0] if comp else None), "graph" in parts


def compiles_whole_model(mode: str) -> bool:
    """Whether ``mode`` compiles the whole transformer (torch.compile's CUDA-graph modes) rather than its
    repeated blocks."""
    return mode_parts(mode)[1] in GRAPH_COMPILE_MODES


def graph_enabled(mode: str) -> bool:
    """Whether a step of ``mode`` replays CUDA graphs: kernels.inject.cuda_graphs ("+graph") or torch.compile's
    own (reduce-overhead, max-autotune).  The other modes launch every kernel from the host (plain calls)."""
    _, comp, graph = mode_parts(mode)
    return graph or comp in GRAPH_COMPILE_MODES


DTYPE_NAMES = ("fp32", "bf16", "fp16")
# Tolerance on rel_err = ||latents - eager|| / ||eager - initial noise|| of the final latents (the error relative
# to what the denoising loop changed), per dtype; params.tolerance overrides.
DEFAULT_TOLERANCE = {"fp32": 1e-3, "bf16": 5e-2, "fp16": 2e-2}
SPATIAL, TEMPORAL = 32, 8  # LTX-Video's VAE compression

PARAM_DEFAULTS: dict[str, Any] = {
    "steps": 30,
    "repeats": 3,
    "warmup": 1,  # whole pipeline calls before the timed ones (compilation, Triton JIT)
    "guidance_scale": 3.0,  # > 1: classifier-free guidance on, transformer batch 2
    "frame_rate": 25,
    "seed": 0,
    "model_path": None,  # a local diffusers folder (pipeline or transformer); None: random weights
    "pipeline": False,  # also decode with the VAE (the whole pipeline minus the text encoder)
    "tiny": False,  # a tiny configuration for CPU tests
    "tolerance": None,  # None: DEFAULT_TOLERANCE[dtype]
    "text_len": None,  # None: 128 (the tokenizer length; 16 with tiny)
    "cpu_compile": False,  # also run the stock "compile" mode on a CPU (Inductor's C++ backend)
    "profile_steps": 0,  # > 0: after every mode's timing, profile one call of this many steps per mode
    "timeout_s": 1800.0,  # the whole job; enforced by the sandbox
}


def check_shape(shape: Any) -> None:
    """``[frames, height, width]`` as LTX-Video takes them: frames = 8k+1, height and width multiples of 32."""
    if (
        not isinstance(shape, (list, tuple))
        or len(shape) != 3
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in shape)
    ):
        raise ValueError(f"shape must be [frames, height, width] of positive ints, got {shape!r}")
    frames, height, width = shape
    if (frames - 1) % TEMPORAL:
        raise ValueError(f"frames={frames}: LTX-Video takes 8k+1 frames (9, 17, 25, ..., 121, ...)")
    if height % SPATIAL or width % SPATIAL:
        raise ValueError(f"height x width = {height}x{width}: both must be multiples of {SPATIAL}")


def latent_shape(shape: Any) -> tuple[int, int, int]:
    """Latent (frames, height, width) of a ``[frames, height, width]`` video: 25x480x704 -> (4, 15, 22)."""
    frames, height, width = shape
    return (frames - 1) // TEMPORAL + 1, height // SPATIAL, width // SPATIAL
