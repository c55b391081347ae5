"""FLUX.1 and SD3/SD3.5 in the e2e job (workers.jobs.e2e.job): the transformer, its inputs and one timed call of the
denoising loop.

The loop is diffusers' own pipeline (``FluxPipeline``, ``StableDiffusion3Pipeline``) with the model's
``FlowMatchEulerDiscreteScheduler`` (its published configuration: FLUX's resolution-dependent shift, SD3.5's
shift 3), the text encoders skipped (random embeddings of the encoders' sizes: T5's 512 tokens for FLUX; the
joint 77 CLIP + 256 T5 tokens and the pooled CLIP vector for SD3) and no VAE (``output_type="latent"``).  Guidance
as each pipeline does it: FLUX.1-dev's guidance is an input of the transformer (batch 1, ``true_cfg_scale`` 1), SD3's
is classifier-free (positive and negative embeddings: transformer batch 2).

The transformer is the configuration ``params.config`` (workers.jobs.e2e.model_configs: ``flux.1-dev``,
``sd3.5-medium``,
``sd3.5-large``) built on the device with random weights, or comes from ``model_path`` (a local diffusers folder, a
pipeline or a transformer; never a download); ``tiny`` builds a small one for CPU tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from workers.jobs.e2e import model_configs
from workers.jobs.e2e.ltx import transformer_folder
from workers.jobs.e2e.spec import FLUX, SD3
from workers.jobs.e2e.steps import Call, Setup, pipeline_call
from workers.spec import JobSpec

VAE_SCALE = 8  # both pipelines' latents: the VAE's 8x compression (no VAE is built: the pipelines' default)
TINY_FLUX = dict(
    patch_size=1,
    in_channels=16,
    num_layers=1,
    num_single_layers=1,
    attention_head_dim=16,
    num_attention_heads=2,
    joint_attention_dim=32,
    pooled_projection_dim=32,
    guidance_embeds=True,
    axes_dims_rope=(4, 6, 6),
)
TINY_SD3 = dict(
    sample_size=8,
    patch_size=2,
    in_channels=4,
    num_layers=2,
    attention_head_dim=8,
    num_attention_heads=2,
    joint_attention_dim=32,
    caption_projection_dim=16,
    pooled_projection_dim=32,
    out_channels=4,
    pos_embed_max_size=16,
    qk_norm="rms_norm",
    dual_attention_layers=(0,),
)


@dataclass(frozen=True)
class ImageModel:
    """What differs between FLUX and SD3 here: the classes, the tiny configuration, the text length and the blocks
    torch.compile compiles one by one (None: the transformer's own ``compile_repeated_blocks``)."""

    name: str
    title: str
    tiny: dict[str, Any]
    text_len: int
    blocks: tuple[str, ...] | None

    def classes(self):
        import diffusers

        if self.name == FLUX:
            return diffusers.FluxTransformer2DModel, diffusers.FluxPipeline
        return diffusers.SD3Transformer2DModel, diffusers.StableDiffusion3Pipeline


IMAGE_MODELS = {
    FLUX: ImageModel(FLUX, "FLUX.1", TINY_FLUX, 512, None),
    # SD3Transformer2DModel declares no repeated blocks: its JointTransformerBlocks are compiled one by one
    SD3: ImageModel(SD3, "SD3.5", TINY_SD3, 333, ("JointTransformerBlock",)),
}


def _scheduler(cfg: dict[str, Any], folder: Path | None):
    from diffusers import FlowMatchEulerDiscreteScheduler

    if folder is not None and (folder / "scheduler_config.json").exists():
        return FlowMatchEulerDiscreteScheduler.from_pretrained(folder, local_files_only=True)
    return FlowMatchEulerDiscreteScheduler.from_config(cfg)


def _pipeline(m: ImageModel, transformer, scheduler):
    _, pipe_cls = m.classes()
    if m.name == FLUX:
        return pipe_cls(
            scheduler=scheduler,
            vae=None,
            text_encoder=None,
            tokenizer=None,
            text_encoder_2=None,
            tokenizer_2=None,
            transformer=transformer,
        )
    return pipe_cls(
        transformer=transformer,
        scheduler=scheduler,
        vae=None,
        text_encoder=None,
        tokenizer=None,
        text_encoder_2=None,
        tokenizer_2=None,
        text_encoder_3=None,
        tokenizer_3=None,
    )


def _transformer(m: ImageModel, p: dict, dtype: torch.dtype, device: torch.device):
    """The transformer, the scheduler and where they came from."""
    model_cls, _ = m.classes()
    if p["model_path"]:
        path = Path(str(p["model_path"])).expanduser()
        if not path.is_dir():
            raise ValueError(f"model_path {str(path)!r} is not a directory (a local diffusers folder)")
        folder = transformer_folder(path)
        transformer = model_cls.from_pretrained(folder, torch_dtype=dtype, local_files_only=True)
        conf = model_configs.load(str(p["config"]), m.name)  # the scheduler, unless the folder has its own
        return transformer.to(device).eval(), _scheduler(conf["scheduler"], path / "scheduler"), f"transformer {folder}"
    conf = model_configs.load(str(p["config"]), m.name)
    torch.manual_seed(int(p["seed"]))
    with torch.device(device):
        transformer = model_cls(**(m.tiny if p["tiny"] else conf["transformer"]))
    what = "tiny config" if p["tiny"] else f"{p['config']} config"
    return transformer.to(dtype).eval(), _scheduler(conf["scheduler"], None), f"{what}, random weights"


def setup(spec: JobSpec, device: torch.device, p: dict, dtype: torch.dtype) -> Setup:
    m = IMAGE_MODELS[spec.model]
    transformer, scheduler, source = _transformer(m, p, dtype, device)
    pipe = _pipeline(m, transformer, scheduler)
    pipe.set_progress_bar_config(disable=True)
    cfg = transformer.config
    height, width = spec.shape
    lh, lw = height // VAE_SCALE, width // VAE_SCALE
    text_len = int(p["text_len"] or (16 if p["tiny"] else m.text_len))
    g = torch.Generator("cpu").manual_seed(int(p["seed"]))
    if m.name == FLUX:  # packed latents: 2x2 patches of the 8x latents, in_channels = 4 x latent channels
        latents = torch.randn(1, (lh // 2) * (lw // 2), cfg.in_channels, generator=g)
    else:
        latents = torch.randn(1, cfg.in_channels, lh, lw, generator=g)
    inputs: dict[str, Any] = {}
    prompts = ("prompt",) if m.name == FLUX else ("prompt", "negative_prompt")
    for name in prompts:
        e = torch.randn(1, text_len, cfg.joint_attention_dim, generator=g)
        pooled = torch.randn(1, cfg.pooled_projection_dim, generator=g)
        inputs[f"{name}_embeds"] = e.to(device=device, dtype=dtype)
        inputs[name.replace("prompt", "pooled_prompt") + "_embeds"] = pooled.to(device=device, dtype=dtype)
    layers = int(cfg.num_layers) + int(getattr(cfg, "num_single_layers", 0) or 0)
    config = {
        "source": source,
        "config": None if p["model_path"] or p["tiny"] else str(p["config"]),
        "latent": [lh, lw],
        "tokens": (lh // 2) * (lw // 2),
        "batch": 1 if m.name == FLUX else 2,
        "text_len": text_len,
        "steps": int(p["steps"]),
        "layers": layers,
    }
    return Setup(transformer, source, latents.to(device), inputs, config, pipe)


def run_call(s: Setup, spec: JobSpec, p: dict, device: torch.device, host_probe: bool = False) -> Call:
    """One timed call of the pipeline (workers.jobs.e2e.steps.pipeline_call)."""
    height, width = spec.shape
    kwargs: dict[str, Any] = dict(
        **s.inputs,
        height=height,
        width=width,
        guidance_scale=float(p["guidance_scale"]),
        latents=s.start.clone(),
        output_type="latent",
    )
    if spec.model == FLUX:
        kwargs["max_sequence_length"] = int(s.config["text_len"])
    return pipeline_call(s.pipe, kwargs, int(p["steps"]), int(p["seed"]), device, host_probe)
