"""How much work one e2e job is, before it runs: the model's parameters (the model built on the ``meta`` device: no
memory, no weights) and the tokens a step pushes through them.  The CPU price of a sweep (orchestrator.plan.cpu_price)
turns it into time: a step costs about 2 x parameters x tokens FLOPs.  A ``model_path`` job is sized by the
configuration its folder holds."""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path

from workers.jobs.e2e import model_configs
from workers.jobs.e2e.spec import FLUX, LLAMA, MODEL, SD3, family_of, latent_shape, param_defaults
from workers.spec import JobSpec

CPU_MODES = ("eager", "triton")  # the modes a CPU runs (the compile modes only with cpu_compile)


@dataclass(frozen=True)
class Work:
    parameters: int
    tokens_per_step: int  # tokens (x batch) through the model per step
    steps_per_call: int
    calls_per_mode: int  # warm-up, timed, the host probe and the profile's two short calls (as steps)

    @property
    def flops_per_mode(self) -> float:
        return 2.0 * self.parameters * self.tokens_per_step * self.steps_per_call * self.calls_per_mode


def _folder_config(path: str, sub: str | None) -> dict | None:
    folder = Path(path).expanduser()
    for f in ([folder / sub / "config.json"] if sub else []) + [folder / "config.json"]:
        if f.is_file():
            try:
                return {k: v for k, v in json.loads(f.read_text()).items() if not k.startswith("_")}
            except (OSError, ValueError):
                return None
    return None


@functools.lru_cache(maxsize=32)
def _parameters(model: str, config_json: str) -> int:
    """Parameters of ``model`` built from ``config_json`` on the meta device."""
    import torch

    cfg = json.loads(config_json)
    with torch.device("meta"):
        if model == LLAMA:
            from transformers import LlamaConfig, LlamaForCausalLM

            keep = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type", "torch_dtype", "dtype")}
            m = LlamaForCausalLM(LlamaConfig(**keep))
        else:
            import diffusers

            cls = {
                MODEL: diffusers.LTXVideoTransformer3DModel,
                FLUX: diffusers.FluxTransformer2DModel,
                SD3: diffusers.SD3Transformer2DModel,
            }[model]
            m = cls(**cfg)
    return sum(p.numel() for p in m.parameters())


def _config(spec: JobSpec, p: dict) -> dict:
    """The configuration the job builds (or loads), as a dict."""
    if spec.model == MODEL:
        from workers.jobs.e2e.ltx import TINY_TRANSFORMER

        if p["tiny"]:
            return dict(TINY_TRANSFORMER)
        return (p["model_path"] and _folder_config(p["model_path"], "transformer")) or {}
    if spec.model == LLAMA:
        from workers.jobs.e2e.llm import TINY_LLAMA

        if p["tiny"]:
            return dict(TINY_LLAMA)
        loaded = p["model_path"] and _folder_config(p["model_path"], None)
        return loaded or model_configs.load(str(p["config"]), LLAMA)["config"]
    from workers.jobs.e2e.image import IMAGE_MODELS

    if p["tiny"]:
        return dict(IMAGE_MODELS[spec.model].tiny)
    loaded = p["model_path"] and _folder_config(p["model_path"], "transformer")
    return loaded or model_configs.load(str(p["config"]), spec.model)["transformer"]


def work(spec: JobSpec) -> Work:
    """The work of one mode of ``spec`` (see :class:`Work`)."""
    spec = dataclasses.replace(spec, model=family_of(spec.model or ""))
    p = {**param_defaults(spec.model), **spec.params}
    cfg = _config(spec, p)
    params = _parameters(spec.model, json.dumps(cfg, sort_keys=True))
    calls = int(p["warmup"]) + int(p["repeats"]) + 1
    if spec.model == LLAMA:
        batch, prompt_len = spec.shape
        steps = int(p["new_tokens"])
        # a call's tokens: the prompt once, then one per step: as steps, prompt_len / steps more per step
        tokens = batch * (1 + max(prompt_len // steps, 1))
    elif spec.model == MODEL:
        lf, lh, lw = latent_shape(spec.shape)
        tokens, steps = 2 * (lf * lh * lw + int(p["text_len"] or 128)), int(p["steps"])
    else:
        h, w = spec.shape
        text = int(p["text_len"] or (16 if p["tiny"] else 512 if spec.model == FLUX else 333))
        tokens = (1 if spec.model == FLUX else 2) * ((h // 16) * (w // 16) + text)
        steps = int(p["steps"])
    profile = 2 * int(p["profile_steps"]) / max(steps, 1)  # two short calls of profile_steps, in calls
    return Work(params, tokens, steps, calls + int(profile + 0.999))
