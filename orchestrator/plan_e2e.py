"""Expand ``sweep.e2e`` into end-to-end JobSpecs (LTX-Video denoising loop), and check it before anything runs.

``sweep.e2e`` (conf/sweep/ltx_e2e.yaml) is a grid plus the job parameters::

    frames: [25, 121]          # 8k+1
    heights: [480]             # multiples of 32; crossed with widths ...
    widths: [704]
    resolutions: null          # ... unless given as [[height, width], ...] pairs
    steps: [30]
    dtypes: [bf16]
    modes: [eager, triton, compile, triton+compile, compile-max, triton+compile-max]  # one job, side by side
    repeats / warmup / model_path / pipeline / tiny / tolerance / seed / timeout_s / guidance_scale / ...

One job per (frames, resolution, steps, dtype); every mode runs inside that job.  Grid values may be given as one
value or a list.  Keys are left empty here: orchestrator.plan sets them (content hash + code version).
"""

from __future__ import annotations

from typing import Any

from orchestrator.config import ConfigError
from workers.e2e_spec import DEFAULT_MODES, DTYPE_NAMES, MODEL, MODES, PARAM_DEFAULTS, check_shape
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
# parameters that go into every job's params (steps is per job, from the grid)
JOB_PARAM_KEYS = tuple(k for k in PARAM_DEFAULTS if k != "steps")
ALLOWED_KEYS = GRID_KEYS + JOB_PARAM_KEYS


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def e2e_settings(sweep_cfg: dict) -> dict[str, Any]:
    """``sweep.e2e`` with defaults filled in (grid values as lists)."""
    raw = dict(sweep_cfg.get("e2e") or {})
    out: dict[str, Any] = {**GRID_DEFAULTS, **{k: v for k, v in PARAM_DEFAULTS.items() if k != "steps"}, **raw}
    for k in ("frames", "heights", "widths", "steps", "dtypes", "modes"):
        out[k] = _as_list(out[k])
    if out["resolutions"] is not None:
        out["resolutions"] = [list(r) if isinstance(r, (list, tuple)) else r for r in _as_list(out["resolutions"])]
    return out


def _err(key: str, msg: str) -> ConfigError:
    return ConfigError(f"sweep.e2e.{key}: {msg}")


def _check_positive_ints(e: dict, key: str, multiple_of: int = 1) -> None:
    """Raise ConfigError unless ``e[key]`` is a non-empty list of positive integers (each a multiple of
    ``multiple_of``: heights and widths, which LTX-Video's VAE compresses 32x)."""
    if not e[key]:
        raise _err(key, "empty")
    for v in e[key]:
        if not _is_int(v) or v < 1:
            raise _err(key, f"{v!r} is not a positive integer")
        if v % multiple_of:
            raise _err(key, f"{v}: must be a multiple of {multiple_of} (LTX-Video's VAE compresses 32x)")


def validate_e2e(sweep_cfg: dict) -> None:
    """Raise ConfigError (offending key + allowed values) for an e2e grid that cannot run."""
    raw = sweep_cfg.get("e2e") or {}
    unknown = sorted(set(raw) - set(ALLOWED_KEYS))
    if unknown:
        raise ConfigError(f"sweep.e2e.{unknown[0]}: no such key; allowed keys in sweep.e2e: {', '.join(ALLOWED_KEYS)}")
    e = e2e_settings(sweep_cfg)
    if not e["modes"]:
        raise _err("modes", f"empty; allowed: {', '.join(MODES)}")
    for m in e["modes"]:
        if m not in MODES:
            raise _err("modes", f"unknown mode {m!r}; allowed: {', '.join(MODES)}")
    if len(set(e["modes"])) != len(e["modes"]):
        raise _err("modes", f"a mode is listed twice: {e['modes']}")
    if not e["dtypes"]:
        raise _err("dtypes", f"empty; allowed: {', '.join(DTYPE_NAMES)}")
    for d in e["dtypes"]:
        if d not in DTYPE_NAMES:
            raise _err("dtypes", f"unknown dtype {d!r}; allowed: {', '.join(DTYPE_NAMES)}")
    for key in ("frames", "steps"):
        _check_positive_ints(e, key)
    for f in e["frames"]:
        if (f - 1) % 8:
            raise _err("frames", f"{f}: LTX-Video takes 8k+1 frames (9, 17, 25, ..., 121, ...)")
    if e["resolutions"] is not None:
        if not e["resolutions"]:
            raise _err("resolutions", "empty (set null to use heights x widths)")
        for r in e["resolutions"]:
            if not (isinstance(r, list) and len(r) == 2 and all(_is_int(v) and v > 0 for v in r)):
                raise _err("resolutions", f"{r!r} is not a [height, width] pair of positive integers")
            if r[0] % 32 or r[1] % 32:
                raise _err("resolutions", f"{r}: height and width must be multiples of 32")
    else:
        for key in ("heights", "widths"):
            _check_positive_ints(e, key, multiple_of=32)
    for key in ("repeats",):
        if not _is_int(e[key]) or e[key] < 1:
            raise _err(key, f"must be an integer >= 1, got {e[key]!r}")
    for key in ("warmup", "seed", "frame_rate", "profile_steps"):
        if not _is_int(e[key]) or e[key] < 0:
            raise _err(key, f"must be an integer >= 0, got {e[key]!r}")
    if not _is_num(e["timeout_s"]) or not e["timeout_s"] > 0:
        raise _err("timeout_s", f"must be > 0, got {e['timeout_s']!r}")
    if not _is_num(e["guidance_scale"]) or not e["guidance_scale"] > 1:
        raise _err("guidance_scale", f"must be > 1 (guidance on: transformer batch 2), got {e['guidance_scale']!r}")
    if e["tolerance"] is not None and (not _is_num(e["tolerance"]) or not e["tolerance"] > 0):
        raise _err("tolerance", f"must be null (per-dtype default) or a number > 0, got {e['tolerance']!r}")
    if e["text_len"] is not None and (not _is_int(e["text_len"]) or e["text_len"] < 1):
        raise _err("text_len", f"must be null or an integer >= 1, got {e['text_len']!r}")
    for key in ("pipeline", "tiny", "cpu_compile"):
        if not isinstance(e[key], bool):
            raise _err(key, f"must be true or false, got {e[key]!r}")
    if e["model_path"] is not None and (not isinstance(e["model_path"], str) or not e["model_path"].strip()):
        raise _err("model_path", f"must be null or a path to a local diffusers folder, got {e['model_path']!r}")
    if e["model_path"] is not None and e["tiny"]:
        raise _err("tiny", "tiny=true builds a tiny random model; it cannot be combined with model_path")
    for shape in _shapes(e):
        try:
            check_shape(shape)
        except ValueError as exc:
            raise _err("frames", str(exc)) from None


def _resolutions(e: dict) -> list[list[int]]:
    if e["resolutions"] is not None:
        return [list(r) for r in e["resolutions"]]
    return [[h, w] for h in e["heights"] for w in e["widths"]]


def _shapes(e: dict) -> list[list[int]]:
    return [[f, h, w] for f in e["frames"] for h, w in _resolutions(e)]


def plan_e2e(sweep_cfg: dict, target: str) -> list[JobSpec]:
    """One e2e JobSpec per (frames, resolution, steps, dtype) of ``sweep_cfg['e2e']``, every mode in it."""
    validate_e2e(sweep_cfg)
    e = e2e_settings(sweep_cfg)
    base = {k: e[k] for k in JOB_PARAM_KEYS}
    base["timeout_s"] = float(base["timeout_s"])
    specs = []
    for shape in _shapes(e):
        for steps in e["steps"]:
            for dtype in e["dtypes"]:
                specs.append(
                    JobSpec(
                        kind="e2e",
                        model=MODEL,
                        shape=list(shape),
                        dtype=dtype,
                        impls=list(e["modes"]),
                        target=target,
                        params={**base, "steps": steps},
                        sweep=sweep_cfg.get("name", ""),
                    )
                )
    return specs
