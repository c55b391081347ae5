"""LTX-Video in the e2e job (workers.jobs.e2e.job): the model, its inputs and one timed call of its denoising loop.

The loop is diffusers' own ``LTXPipeline`` with its ``FlowMatchEulerDiscreteScheduler``, classifier-free guidance on
(transformer batch 2), the text encoder skipped (precomputed random T5-sized embeddings, padded masks) and, unless
``pipeline`` is set, no VAE (``output_type="latent"``); with ``pipeline`` the VAE decodes the video at the end.  The
transformer comes from ``model_path`` (a local diffusers folder: a pipeline or a transformer; never a download) or is
LTX-Video's default configuration built on the device with random weights (``tiny``: a small configuration for CPU
tests, with a VAE of the real 32x/8x compression).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from workers.jobs.e2e.spec import SPATIAL, TEMPORAL, latent_shape
from workers.jobs.e2e.steps import Call, Setup, pipeline_call
from workers.spec import JobSpec

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
    folder = transformer_folder(path)
    transformer = LTXVideoTransformer3DModel.from_pretrained(folder, torch_dtype=dtype, local_files_only=True)
    vae = None
    if pipeline:
        with torch.device(device):
            vae = AutoencoderKLLTXVideo()
        vae = vae.to(dtype)
    pipe = LTXPipeline(scheduler=_scheduler(), vae=vae, text_encoder=None, tokenizer=None, transformer=transformer)
    return pipe.to(device), f"transformer {folder}" + (" + default VAE (random weights)" if pipeline else "")


def transformer_folder(path: Path) -> Path:
    """The transformer's folder of a local diffusers folder: ``path`` itself (a ``config.json``) or its
    ``transformer/``; ValueError when it is neither."""
    folder = path if (path / "config.json").exists() else path / "transformer"
    if not (folder / "config.json").exists():
        raise ValueError(
            f"model_path {str(path)!r}: neither a diffusers pipeline (model_index.json) nor a "
            f"transformer folder (config.json)"
        )
    return folder


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


def setup(spec: JobSpec, device: torch.device, p: dict, dtype: torch.dtype) -> Setup:
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
    config = {
        "source": source,
        "latent": [lf, lh, lw],
        "tokens": int(latents.shape[1]),
        "batch": 2,
        "text_len": text_len,
        "steps": int(p["steps"]),
        "layers": int(cfg.num_layers),
        "pipeline": bool(p["pipeline"]),
    }
    return Setup(pipe.transformer, source, latents, embeds, config, pipe)


def run_call(s: Setup, spec: JobSpec, p: dict, device: torch.device, host_probe: bool = False) -> Call:
    """One timed call of the pipeline (workers.jobs.e2e.steps.pipeline_call)."""
    frames, height, width = spec.shape
    kwargs: dict[str, Any] = dict(
        **s.inputs,
        height=height,
        width=width,
        num_frames=frames,
        guidance_scale=float(p["guidance_scale"]),
        frame_rate=int(p["frame_rate"]),
        latents=s.start.clone(),
        output_type="pt" if p["pipeline"] else "latent",
    )
    return pipeline_call(s.pipe, kwargs, int(p["steps"]), int(p["seed"]), device, host_probe)
