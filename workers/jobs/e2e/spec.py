"""What an end-to-end (``e2e``) JobSpec may say: the model, the modes, the parameters and their defaults, and
the shape rule of each model.  Plain data (no torch), shared by the planner (orchestrator.plan.e2e) and the job
(workers.jobs.e2e.job).

Models (``JobSpec.model``), one per injected family (kernels.inject):

* ``ltx-video``: LTX-Video's denoising loop, shape ``[frames, height, width]`` (workers.jobs.e2e.ltx);
* ``flux``: FLUX.1's denoising loop (FluxPipeline, guidance embedded: transformer batch 1), shape
  ``[height, width]`` (workers.jobs.e2e.image);
* ``sd3``: SD3/SD3.5's denoising loop (StableDiffusion3Pipeline, classifier-free guidance: batch 2), shape
  ``[height, width]`` (workers.jobs.e2e.image);
* ``llama``: a LlamaForCausalLM-compatible decoder under ``generate`` with a static KV cache, shape
  ``[batch, prompt_len]``: prefill, then ``new_tokens`` decode steps (workers.jobs.e2e.llm).

The configuration of the diffusion transformers and of the decoder is ``params.config``: a name in ``conf/models/``
(``flux.1-dev``, ``sd3.5-medium``, ``sd3.5-large``, ``tinyllama-1.1b``, ``llama-3-8b``) or a path to such a JSON
file (workers.jobs.e2e.model_configs).  A planned job's model names its family and its configuration, ``family/config``
(:func:`model_name`: ``sd3/sd3.5-large``, ``llama/tinyllama-1.1b``, ``flux/tiny``), so the store's series of two
configurations never mix; the job runs the family (:func:`family_of`).
"""

from __future__ import annotations

from typing import Any

MODEL = "ltx-video"
FLUX, SD3, LLAMA = "flux", "sd3", "llama"
MODELS = (MODEL, FLUX, SD3, LLAMA)
DIFFUSION_MODELS = (MODEL, FLUX, SD3)
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


# Parameters every model's job takes (the LTX-Video ones are PARAM_DEFAULTS above, kept as they were).
COMMON_PARAMS = (
    "repeats",
    "warmup",
    "seed",
    "model_path",
    "tiny",
    "tolerance",
    "cpu_compile",
    "profile_steps",
    "timeout_s",
)
_COMMON = {k: PARAM_DEFAULTS[k] for k in COMMON_PARAMS}
MODEL_PARAMS: dict[str, dict[str, Any]] = {
    MODEL: PARAM_DEFAULTS,
    FLUX: {
        **_COMMON,
        "steps": 28,
        "guidance_scale": 3.5,  # FLUX.1-dev: guidance distilled into the transformer (an embedding), batch 1
        "config": "flux.1-dev",  # conf/models/<name>.json or a path to one
        "text_len": None,  # None: 512 (the T5 tokenizer length of FLUX.1-dev; 16 with tiny)
    },
    SD3: {
        **_COMMON,
        "steps": 28,
        "guidance_scale": 3.5,  # > 1: classifier-free guidance on, transformer batch 2 (SD3.5 large's default)
        "config": "sd3.5-medium",
        "text_len": None,  # None: 333 (77 CLIP + 256 T5 tokens, the pipeline's joint embeddings; 16 with tiny)
    },
    LLAMA: {
        **_COMMON,
        "new_tokens": 64,  # decode steps (tokens per sequence) after the prefill
        "config": "tinyllama-1.1b",
    },
}
# The unit a step's time is per: a denoising step, or a decode step (one token per sequence of the batch).
STEP_UNIT = {MODEL: "denoising step", FLUX: "denoising step", SD3: "denoising step", LLAMA: "decode step"}
# What a mode's output is compared against eager by (workers.jobs.e2e.job.compare)
OUTPUT = {MODEL: "final latents", FLUX: "final latents", SD3: "final latents", LLAMA: "logits"}
# FLUX and SD3 latents are the VAE's 8x compression, patchified 2x2: height and width multiples of 16.
IMAGE_MULTIPLE = 16
SHAPE_DOC = {
    MODEL: "[frames, height, width]",
    FLUX: "[height, width]",
    SD3: "[height, width]",
    LLAMA: "[batch, prompt_len]",
}


def family_of(model: str) -> str:
    """The model family of a job's model name: ``sd3/sd3.5-large`` -> ``sd3``; ``ltx-video`` -> ``ltx-video``."""
    return str(model).split("/", 1)[0]


def model_name(family: str, config: str | None, tiny: bool = False, model_path: str | None = None) -> str:
    """A job's model name, ``family/what``: the configuration's name (a path: its file's stem), ``tiny``, or the
    model folder's name; LTX-Video's stays ``ltx-video``."""
    if family == MODEL:
        return MODEL
    if tiny:
        what = "tiny"
    elif model_path:
        what = str(model_path).rstrip("/").rsplit("/", 1)[-1] or "model"
    else:
        what = str(config).rstrip("/").rsplit("/", 1)[-1].removesuffix(".json")
    return f"{family}/{what}"


def param_defaults(model: str) -> dict[str, Any]:
    """The parameters of ``model``'s e2e job with their defaults (ValueError for an unknown model)."""
    model = family_of(model)
    if model not in MODEL_PARAMS:
        raise ValueError(f"unknown model {model!r}; supported: {', '.join(MODELS)}")
    return MODEL_PARAMS[model]


def graph_modes_apply(model: str) -> bool:
    """Whether kernels.inject.cuda_graphs ("+graph" modes) applies: not to the decoder, whose forward updates its
    KV cache (a capture's warm-up calls would repeat the update); its CUDA-graph modes are torch.compile's."""
    return model != LLAMA


def check_model_shape(model: str, shape: Any) -> None:
    """ValueError unless ``shape`` is one ``model`` takes (SHAPE_DOC)."""
    model = family_of(model)
    if model == MODEL:
        check_shape(shape)
        return
    param_defaults(model)
    if (
        not isinstance(shape, (list, tuple))
        or len(shape) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in shape)
    ):
        raise ValueError(f"shape must be {SHAPE_DOC[model]} of positive ints, got {shape!r}")
    if model in (FLUX, SD3) and (shape[0] % IMAGE_MULTIPLE or shape[1] % IMAGE_MULTIPLE):
        raise ValueError(f"height x width = {shape[0]}x{shape[1]}: both must be multiples of {IMAGE_MULTIPLE}")


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
