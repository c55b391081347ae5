"""Expand ``sweep.e2e`` into end-to-end JobSpecs, and check it before anything runs.

``sweep.e2e.model`` names the model (workers.jobs.e2e.spec.MODELS: ``ltx-video`` when absent, ``flux``, ``sd3``,
``llama``); the rest is a grid plus the job parameters.  LTX-Video's (conf/sweep/ltx_e2e.yaml)::

    frames: [25, 121]          # 8k+1
    heights: [480]             # multiples of 32; crossed with widths ...
    widths: [704]
    resolutions: null          # ... unless given as [[height, width], ...] pairs
    steps: [30]
    dtypes: [bf16]
    modes: [eager, triton, compile, triton+compile, compile-max, triton+compile-max]  # one job, side by side
    repeats / warmup / model_path / pipeline / tiny / tolerance / seed / timeout_s / guidance_scale / ...

FLUX and SD3 (conf/sweep/flux_e2e.yaml, sd3_e2e.yaml): ``configs`` (names in conf/models), ``heights`` x
``widths`` or ``resolutions`` (multiples of 16), ``steps``, ``dtypes``, ``modes``.  The Llama family
(conf/sweep/llm_e2e.yaml): ``configs``, ``batches``, ``prompt_lens``, ``dtypes``, ``modes``, and ``new_tokens``
among the parameters.

One job per point of the grid (a setting); every mode runs inside that job.  Keys are left empty here:
orchestrator.plan.jobs sets them (content hash + code version).

The keys, their types and the enumerations (model, modes, dtypes) are orchestrator.config.schema.E2ECfg's, which Hydra
checks while composing (and config.check_plain checks for plain data given here): every key any model takes,
null for the model's default.  :func:`validate_e2e` adds the rest: which keys the chosen model takes, and what a
type cannot say (ranges, 8k+1 frames, multiples of 16 or 32, a configuration's family, a mode the model cannot
run), one small check each.
"""

from __future__ import annotations

from typing import Any

from orchestrator.config import compose as config
from orchestrator.config.compose import ConfigError
from workers.jobs.e2e import model_configs
from workers.jobs.e2e.spec import (
    DEFAULT_MODES,
    DTYPE_NAMES,
    FLUX,
    IMAGE_MULTIPLE,
    LLAMA,
    MODEL,
    MODELS,
    MODES,
    SD3,
    check_model_shape,
    graph_modes_apply,
    model_name,
    param_defaults,
)
from workers.kinds.e2e import NAME as E2E
from workers.spec import JobSpec

PATH = "sweep.e2e"  # where these keys live in the configuration (schema.SweepCfg.e2e)
GRID_KEYS = ("frames", "heights", "widths", "resolutions", "steps", "dtypes", "modes")
GRID_DEFAULTS: dict[str, Any] = {
    "frames": [25],
    "heights": [480],
    "widths": [704],
    "resolutions": None,
    "steps": [30],
    "dtypes": ["bf16"],
    "modes": list(DEFAULT_MODES),
}
# The decoder's default modes: LTX-Video's without kernels.inject.cuda_graphs (graph_modes_apply), whose CUDA-graph
# mode is torch.compile's reduce-overhead, with and without the kernels (how transformers compiles decoding).
LLM_DEFAULT_MODES = [m for m in DEFAULT_MODES if "graph" not in m.split("+")] + ["triton+compile-ro"]


def _image_grid(config_name: str) -> dict[str, Any]:
    """FLUX's and SD3's grid defaults: 1024x1024, 28 steps (both pipelines' defaults), bf16, LTX-Video's modes."""
    grid = {"heights": [1024], "widths": [1024], "resolutions": None, "steps": [28], "dtypes": ["bf16"]}
    return {"configs": [config_name], **grid, "modes": list(DEFAULT_MODES)}


# Each model's grid (a job per point) and its defaults; "configs" names conf/models/<name>.json per job
MODEL_GRIDS: dict[str, dict[str, Any]] = {
    MODEL: GRID_DEFAULTS,
    FLUX: _image_grid("flux.1-dev"),
    SD3: _image_grid("sd3.5-medium"),
    LLAMA: {
        "configs": ["tinyllama-1.1b"],
        "batches": [1, 8],
        "prompt_lens": [128, 1024],
        "dtypes": ["bf16"],
        "modes": LLM_DEFAULT_MODES,
    },
}
# the grid's per-job values, not job parameters: steps and config come from the grid
_FROM_GRID = ("steps", "config")
# parameters that go into every job's params (LTX-Video's; job_param_keys(model) for any model)
JOB_PARAM_KEYS = tuple(k for k in param_defaults(MODEL) if k not in _FROM_GRID)
ALLOWED_KEYS = GRID_KEYS + JOB_PARAM_KEYS


def job_param_keys(model: str) -> tuple[str, ...]:
    return tuple(k for k in param_defaults(model) if k not in _FROM_GRID)


def allowed_keys(model: str) -> tuple[str, ...]:
    return ("model", *MODEL_GRIDS[model], *job_param_keys(model))


def _plain(v: Any) -> Any:
    """A list for a list or a tuple (each pair of ``resolutions`` too), else ``v``: the JobSpec holds lists."""
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v


def _given(sweep_cfg: dict) -> dict[str, Any]:
    """The keys ``sweep.e2e`` sets: a key left out or null takes the model's default (a composed configuration has
    every key of schema.E2ECfg, null where its sweep file and the overrides set none)."""
    return {k: v for k, v in (sweep_cfg.get("e2e") or {}).items() if v is not None}


def e2e_model(sweep_cfg: dict) -> str:
    """The model of ``sweep.e2e`` (``ltx-video`` when absent); ConfigError for an unknown one (schema.E2EModel)."""
    model = _given(sweep_cfg).get("model", MODEL)
    config.check_plain(PATH, {"model": model})
    return model


def e2e_settings(sweep_cfg: dict) -> dict[str, Any]:
    """``sweep.e2e`` with the model's defaults filled in."""
    model = e2e_model(sweep_cfg)
    defaults = {k: v for k, v in param_defaults(model).items() if k not in _FROM_GRID}
    out = {**MODEL_GRIDS[model], **defaults, **_given(sweep_cfg), "model": model}
    return {k: _plain(v) for k, v in out.items()}


def _err(key: str, msg: str) -> ConfigError:
    return ConfigError(f"{PATH}.{key}: {msg}")


def validate_kind(cfg: dict) -> None:
    """The checks of a sweep with e2e jobs (workers/kinds/e2e.py): :func:`validate_e2e` of its ``sweep``."""
    validate_e2e(cfg["sweep"])


def plan_kind(cfg: dict, targets: list[str]) -> list[JobSpec]:
    """The sweep's e2e jobs (workers/kinds/e2e.py), once per target."""
    return [s for target in targets for s in plan_e2e(cfg["sweep"], target)]


def validate_e2e(sweep_cfg: dict) -> None:
    """Raise ConfigError (offending key + allowed values) for an e2e grid that cannot run: a key the model does not
    take, a value of the wrong type or outside an enumeration (schema.E2ECfg, checked by OmegaConf), then each of
    :data:`VALUE_CHECKS`, what a type cannot say."""
    model = e2e_model(sweep_cfg)
    given = _given(sweep_cfg)
    _check_keys_apply(given, model)
    config.check_plain(PATH, given)
    e = e2e_settings(sweep_cfg)
    for check in VALUE_CHECKS:
        check(e)


def _model_keys(model: str) -> tuple[str, ...]:
    """The keys of ``sweep.e2e`` that ``model`` takes, as its errors list them (LTX-Video's without ``model``)."""
    return ALLOWED_KEYS if model == MODEL else allowed_keys(model)


def _check_keys_apply(given: dict[str, Any], model: str) -> None:
    """Every key set is one ``model`` takes; a key of another model says whose it is."""
    allowed = _model_keys(model)
    for key in sorted(set(given) - set(allowed) - {"model"}):
        owners = [m for m in MODELS if key in _model_keys(m)]
        whose = f" (for model {model}; {key} is for {', '.join(owners)})" if owners else ""
        raise _err(key, f"no such key; allowed keys in {PATH}: {', '.join(allowed)}{whose}")


def _check_modes(e: dict) -> None:
    """At least one mode, none twice, and no ``+graph`` mode for the decoder (graph_modes_apply)."""
    if not e["modes"]:
        raise _err("modes", f"empty; allowed: {', '.join(MODES)}")
    graph = [m for m in e["modes"] if "graph" in m.split("+")]
    if graph and not graph_modes_apply(e["model"]):
        raise _err(
            "modes",
            f"{graph[0]}: the decoder takes no +graph mode (its forward updates the KV cache); its CUDA-graph modes "
            f"are compile-ro and compile-max-cg, each also triton+",
        )
    if len(set(e["modes"])) != len(e["modes"]):
        raise _err("modes", f"a mode is listed twice: {e['modes']}")


def _check_dtypes(e: dict) -> None:
    if not e["dtypes"]:
        raise _err("dtypes", f"empty; allowed: {', '.join(DTYPE_NAMES)}")


# why heights and widths are multiples of what they are, per model
_MULTIPLE_WHY = {
    MODEL: "LTX-Video's VAE compresses 32x",
    FLUX: "the VAE's 8x latents in 2x2 patches",
    SD3: "the VAE's 8x latents in 2x2 patches",
}


def _multiple(model: str) -> int:
    return 32 if model == MODEL else IMAGE_MULTIPLE


def _check_positive_ints(e: dict, key: str, multiple_of: int = 1) -> None:
    """Raise ConfigError unless ``e[key]`` is a non-empty list of integers >= 1 (each a multiple of
    ``multiple_of``: heights and widths, which the model's VAE compresses)."""
    if not e[key]:
        raise _err(key, "empty")
    for v in e[key]:
        if v < 1:
            raise _err(key, f"{v!r} is not a positive integer")
        if v % multiple_of:
            raise _err(key, f"{v}: must be a multiple of {multiple_of} ({_MULTIPLE_WHY[e['model']]})")


def _check_grid_sizes(e: dict) -> None:
    """The grid's counts the model takes (frames, steps, batches, prompt_lens): non-empty, each >= 1."""
    for key in ("frames", "steps", "batches", "prompt_lens"):
        if key in e:
            _check_positive_ints(e, key)


def _check_frames(e: dict) -> None:
    for f in e.get("frames", []):
        if (f - 1) % 8:
            raise _err("frames", f"{f}: LTX-Video takes 8k+1 frames (9, 17, 25, ..., 121, ...)")


def _check_image_grid(e: dict) -> None:
    """The diffusion models' resolutions: ``resolutions`` when given, else ``heights`` x ``widths``, in multiples of
    what the model's VAE compresses (the decoder has none)."""
    if e["model"] == LLAMA:
        return
    if e["resolutions"] is not None:
        _check_resolutions(e["resolutions"], _multiple(e["model"]))
        return
    for key in ("heights", "widths"):
        _check_positive_ints(e, key, multiple_of=_multiple(e["model"]))


def _check_resolutions(resolutions: list[list[int]], multiple: int) -> None:
    if not resolutions:
        raise _err("resolutions", "empty (set null to use heights x widths)")
    for r in resolutions:
        if len(r) != 2 or min(r) < 1:
            raise _err("resolutions", f"{r!r} is not a [height, width] pair of positive integers")
        if r[0] % multiple or r[1] % multiple:
            raise _err("resolutions", f"{r}: height and width must be multiples of {multiple}")


# The least value of each integer parameter a model may take, and why where it is not plain
_LEAST = {
    "repeats": (1, ""),
    "warmup": (0, ""),
    "seed": (0, ""),
    "frame_rate": (0, ""),
    "profile_steps": (0, ""),
    "new_tokens": (2, " (a prefill and a decode step)"),
}


def _check_counts(e: dict) -> None:
    for key, (least, why) in _LEAST.items():
        if key in e and e[key] < least:
            raise _err(key, f"must be an integer >= {least}{why}, got {e[key]!r}")


def _check_timeout(e: dict) -> None:
    if not e["timeout_s"] > 0:
        raise _err("timeout_s", f"must be > 0, got {e['timeout_s']!r}")


# guidance_scale must exceed this, per model, and why (the decoder takes none)
_GUIDANCE_ABOVE = {
    MODEL: (1, "guidance on: transformer batch 2"),
    SD3: (1, "guidance on: transformer batch 2"),
    FLUX: (0, "FLUX's guidance embedding"),
}


def _check_guidance(e: dict) -> None:
    if e["model"] not in _GUIDANCE_ABOVE:
        return
    above, why = _GUIDANCE_ABOVE[e["model"]]
    if not e["guidance_scale"] > above:
        raise _err("guidance_scale", f"must be > {above} ({why}), got {e['guidance_scale']!r}")


def _check_tolerance(e: dict) -> None:
    if e["tolerance"] is not None and not e["tolerance"] > 0:
        raise _err("tolerance", f"must be null (per-dtype default) or a number > 0, got {e['tolerance']!r}")


def _check_text_len(e: dict) -> None:
    if e.get("text_len") is not None and e["text_len"] < 1:
        raise _err("text_len", f"must be null or an integer >= 1, got {e['text_len']!r}")


def _check_model_path(e: dict) -> None:
    """A model folder is a path (not blank), and not combined with the tiny random model."""
    if e["model_path"] is None:
        return
    if not e["model_path"].strip():
        what = "transformers" if e["model"] == LLAMA else "diffusers"
        raise _err("model_path", f"must be null or a path to a local {what} folder, got {e['model_path']!r}")
    if e["tiny"]:
        raise _err("tiny", "tiny=true builds a tiny random model; it cannot be combined with model_path")


def _check_shapes(e: dict) -> None:
    """Each shape of the grid is one the model takes (workers.jobs.e2e.spec.check_model_shape)."""
    for shape in _shapes(e):
        try:
            check_model_shape(e["model"], shape)
        except ValueError as exc:
            raise _err("frames" if e["model"] == MODEL else "resolutions", str(exc)) from None


def _check_configs(e: dict) -> None:
    """Every name of ``configs`` is a configuration of the model's family (conf/models, or a JSON file's path);
    LTX-Video takes none."""
    if "configs" not in e:
        return
    if not e["configs"]:
        raise _err("configs", f"empty; known: {', '.join(model_configs.names())}")
    for name in e["configs"]:
        try:
            model_configs.load(name, e["model"])
        except ValueError as exc:
            raise _err("configs", str(exc)) from None
    if len(set(e["configs"])) != len(e["configs"]):
        raise _err("configs", f"a configuration is listed twice: {e['configs']}")


# What a type cannot say about ``sweep.e2e`` with its defaults filled in, in the order they are checked
VALUE_CHECKS = (
    _check_modes,
    _check_dtypes,
    _check_grid_sizes,
    _check_counts,
    _check_frames,
    _check_configs,
    _check_image_grid,
    _check_timeout,
    _check_guidance,
    _check_tolerance,
    _check_text_len,
    _check_model_path,
    _check_shapes,
)


def _resolutions(e: dict) -> list[list[int]]:
    if e["resolutions"] is not None:
        return [list(r) for r in e["resolutions"]]
    return [[h, w] for h in e["heights"] for w in e["widths"]]


def _shapes(e: dict) -> list[list[int]]:
    """The grid's shapes: [frames, height, width] (LTX-Video), [height, width] (FLUX, SD3), [batch, prompt_len]."""
    if e["model"] == MODEL:
        return [[f, h, w] for f in e["frames"] for h, w in _resolutions(e)]
    if e["model"] == LLAMA:
        return [[b, n] for b in e["batches"] for n in e["prompt_lens"]]
    return [list(r) for r in _resolutions(e)]


def plan_e2e(sweep_cfg: dict, target: str) -> list[JobSpec]:
    """One e2e JobSpec per setting of ``sweep_cfg['e2e']`` (configuration, shape, steps, dtype), every mode in
    it."""
    validate_e2e(sweep_cfg)
    e = e2e_settings(sweep_cfg)
    model = e["model"]
    base = {k: e[k] for k in job_param_keys(model)}
    base["timeout_s"] = float(base["timeout_s"])
    per_job = [{}]
    if "configs" in e:
        per_job = [{"config": c} for c in e["configs"]]
    if "steps" in e:
        per_job = [{**j, "steps": s} for j in per_job for s in e["steps"]]
    specs = []
    for extra in per_job:
        for shape in _shapes(e):
            for dtype in e["dtypes"]:
                specs.append(
                    JobSpec(
                        kind=E2E,
                        model=model_name(model, extra.get("config"), bool(e.get("tiny")), e.get("model_path")),
                        shape=list(shape),
                        dtype=dtype,
                        impls=list(e["modes"]),
                        target=target,
                        params={**base, **extra},
                        sweep=sweep_cfg.get("name", ""),
                    )
                )
    return specs
