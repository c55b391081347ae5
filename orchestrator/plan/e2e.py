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

One job per point of the grid (a setting); every mode runs inside that job.  Grid values may be given as one
value or a list.  Keys are left empty here: orchestrator.plan.jobs sets them (content hash + code version).
"""

from __future__ import annotations

from typing import Any

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


def _image_grid(config: str) -> dict[str, Any]:
    """FLUX's and SD3's grid defaults: 1024x1024, 28 steps (both pipelines' defaults), bf16, LTX-Video's modes."""
    grid = {"heights": [1024], "widths": [1024], "resolutions": None, "steps": [28], "dtypes": ["bf16"]}
    return {"configs": [config], **grid, "modes": list(DEFAULT_MODES)}


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


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def e2e_model(sweep_cfg: dict) -> str:
    """The model of ``sweep.e2e`` (``ltx-video`` when absent); ConfigError for an unknown one."""
    model = (sweep_cfg.get("e2e") or {}).get("model", MODEL)
    if model not in MODELS:
        raise _err("model", f"unknown model {model!r}; allowed: {', '.join(MODELS)}")
    return model


def e2e_settings(sweep_cfg: dict) -> dict[str, Any]:
    """``sweep.e2e`` with defaults filled in (grid values as lists)."""
    model = e2e_model(sweep_cfg)
    raw = dict(sweep_cfg.get("e2e") or {})
    defaults = {k: v for k, v in param_defaults(model).items() if k not in _FROM_GRID}
    out: dict[str, Any] = {**MODEL_GRIDS[model], **defaults, **raw, "model": model}
    for k in ("frames", "heights", "widths", "steps", "dtypes", "modes", "configs", "batches", "prompt_lens"):
        if k in out:
            out[k] = _as_list(out[k])
    if out.get("resolutions") is not None:
        out["resolutions"] = [list(r) if isinstance(r, (list, tuple)) else r for r in _as_list(out["resolutions"])]
    return out


def _err(key: str, msg: str) -> ConfigError:
    return ConfigError(f"sweep.e2e.{key}: {msg}")


# why heights and widths are multiples of what they are, per model
_MULTIPLE_WHY = {
    MODEL: "LTX-Video's VAE compresses 32x",
    FLUX: "the VAE's 8x latents in 2x2 patches",
    SD3: "the VAE's 8x latents in 2x2 patches",
}


def _multiple(model: str) -> int:
    return 32 if model == MODEL else IMAGE_MULTIPLE


def _check_positive_ints(e: dict, key: str, multiple_of: int = 1) -> None:
    """Raise ConfigError unless ``e[key]`` is a non-empty list of positive integers (each a multiple of
    ``multiple_of``: heights and widths, which the model's VAE compresses)."""
    if not e[key]:
        raise _err(key, "empty")
    for v in e[key]:
        if not _is_int(v) or v < 1:
            raise _err(key, f"{v!r} is not a positive integer")
        if v % multiple_of:
            raise _err(key, f"{v}: must be a multiple of {multiple_of} ({_MULTIPLE_WHY[e['model']]})")


def validate_kind(cfg: dict) -> None:
    """The checks of a sweep with e2e jobs (workers/kinds/e2e.py): :func:`validate_e2e` of its ``sweep``."""
    validate_e2e(cfg["sweep"])


def plan_kind(cfg: dict, targets: list[str]) -> list[JobSpec]:
    """The sweep's e2e jobs (workers/kinds/e2e.py), once per target."""
    return [s for target in targets for s in plan_e2e(cfg["sweep"], target)]


def validate_e2e(sweep_cfg: dict) -> None:
    """Raise ConfigError (offending key + allowed values) for an e2e grid that cannot run."""
    raw = sweep_cfg.get("e2e") or {}
    model = e2e_model(sweep_cfg)
    allowed = ALLOWED_KEYS if model == MODEL else allowed_keys(model)
    unknown = sorted(set(raw) - set(allowed) - {"model"})
    if unknown:
        raise ConfigError(f"sweep.e2e.{unknown[0]}: no such key; allowed keys in sweep.e2e: {', '.join(allowed)}")
    e = e2e_settings(sweep_cfg)
    if not e["modes"]:
        raise _err("modes", f"empty; allowed: {', '.join(MODES)}")
    for m in e["modes"]:
        if m not in MODES:
            raise _err("modes", f"unknown mode {m!r}; allowed: {', '.join(MODES)}")
        if "graph" in m.split("+") and not graph_modes_apply(model):
            raise _err(
                "modes",
                f"{m}: the decoder takes no +graph mode (its forward updates the KV cache); its CUDA-graph modes "
                f"are compile-ro and compile-max-cg, each also triton+",
            )
    if len(set(e["modes"])) != len(e["modes"]):
        raise _err("modes", f"a mode is listed twice: {e['modes']}")
    if not e["dtypes"]:
        raise _err("dtypes", f"empty; allowed: {', '.join(DTYPE_NAMES)}")
    for d in e["dtypes"]:
        if d not in DTYPE_NAMES:
            raise _err("dtypes", f"unknown dtype {d!r}; allowed: {', '.join(DTYPE_NAMES)}")
    for key in ("frames", "steps", "batches", "prompt_lens", "new_tokens"):
        if key == "new_tokens" and key in e:
            if not _is_int(e[key]) or e[key] < 2:
                raise _err(key, f"must be an integer >= 2 (a prefill and a decode step), got {e[key]!r}")
        elif key in e:
            _check_positive_ints(e, key)
    for f in e.get("frames", []):
        if (f - 1) % 8:
            raise _err("frames", f"{f}: LTX-Video takes 8k+1 frames (9, 17, 25, ..., 121, ...)")
    if "configs" in e:
        _check_configs(e)
    if model == LLAMA:
        pass  # a decoder's shapes are batches x prompt_lens, checked above
    elif e["resolutions"] is not None:
        mult = _multiple(model)
        if not e["resolutions"]:
            raise _err("resolutions", "empty (set null to use heights x widths)")
        for r in e["resolutions"]:
            if not (isinstance(r, list) and len(r) == 2 and all(_is_int(v) and v > 0 for v in r)):
                raise _err("resolutions", f"{r!r} is not a [height, width] pair of positive integers")
            if r[0] % mult or r[1] % mult:
                raise _err("resolutions", f"{r}: height and width must be multiples of {mult}")
    else:
        for key in ("heights", "widths"):
            _check_positive_ints(e, key, multiple_of=_multiple(model))
    for key in ("repeats",):
        if not _is_int(e[key]) or e[key] < 1:
            raise _err(key, f"must be an integer >= 1, got {e[key]!r}")
    for key in ("warmup", "seed", "frame_rate", "profile_steps"):
        if key not in e:
            continue
        if not _is_int(e[key]) or e[key] < 0:
            raise _err(key, f"must be an integer >= 0, got {e[key]!r}")
    if not _is_num(e["timeout_s"]) or not e["timeout_s"] > 0:
        raise _err("timeout_s", f"must be > 0, got {e['timeout_s']!r}")
    if model in (MODEL, SD3) and (not _is_num(e["guidance_scale"]) or not e["guidance_scale"] > 1):
        raise _err("guidance_scale", f"must be > 1 (guidance on: transformer batch 2), got {e['guidance_scale']!r}")
    if model == FLUX and (not _is_num(e["guidance_scale"]) or not e["guidance_scale"] > 0):
        raise _err("guidance_scale", f"must be > 0 (FLUX's guidance embedding), got {e['guidance_scale']!r}")
    if e["tolerance"] is not None and (not _is_num(e["tolerance"]) or not e["tolerance"] > 0):
        raise _err("tolerance", f"must be null (per-dtype default) or a number > 0, got {e['tolerance']!r}")
    if e.get("text_len") is not None and (not _is_int(e["text_len"]) or e["text_len"] < 1):
        raise _err("text_len", f"must be null or an integer >= 1, got {e['text_len']!r}")
    for key in ("pipeline", "tiny", "cpu_compile"):
        if key in e and not isinstance(e[key], bool):
            raise _err(key, f"must be true or false, got {e[key]!r}")
    if e["model_path"] is not None and (not isinstance(e["model_path"], str) or not e["model_path"].strip()):
        what = "transformers" if model == LLAMA else "diffusers"
        raise _err("model_path", f"must be null or a path to a local {what} folder, got {e['model_path']!r}")
    if e["model_path"] is not None and e["tiny"]:
        raise _err("tiny", "tiny=true builds a tiny random model; it cannot be combined with model_path")
    for shape in _shapes(e):
        try:
            check_model_shape(model, shape)
        except ValueError as exc:
            raise _err("frames" if model == MODEL else "resolutions", str(exc)) from None


def _check_configs(e: dict) -> None:
    """Every name of ``configs`` is a configuration of the model's family (conf/models, or a JSON file's path)."""
    if not e["configs"]:
        raise _err("configs", f"empty; known: {', '.join(model_configs.names())}")
    for name in e["configs"]:
        try:
            model_configs.load(name, e["model"])
        except ValueError as exc:
            raise _err("configs", str(exc)) from None
    if len(set(e["configs"])) != len(e["configs"]):
        raise _err("configs", f"a configuration is listed twice: {e['configs']}")


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
