"""LTX-Video's RoPE as the entries of ``rope`` and ``qk_norm_rope`` draw and compute it: its per-batch fp32 cos/sin
tables ``[B, S, C]`` (built as ``LTXVideoRotaryPosEmbed`` builds them), diffusers' ``apply_rotary_emb`` (the eager
code path), the float64 interleaved-pair reference, and the shape check of a kernel on those rows.

A helper of kernels/entries/ (declares no kernel): the two entries share it instead of one importing the other, so a
change to either kernel's entry re-keys that kernel's jobs only.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

# LTXPipeline's RoPE setting: rope_interpolation_scale = (8 / frame_rate, 32, 32) at 25 fps, patch 1x1,
# base (frames, height, width) = (20, 2048, 2048), theta = 10000; latent 15 x 22 for a 480x704 video.
LTX_THETA = 10000.0
LTX_BASE = (20.0, 2048.0, 2048.0)
LTX_SCALE = (8.0 / 25.0, 32.0, 32.0)
LTX_LATENT_HW = (15, 22)


def ltx_rope_tables(
    frame_starts: torch.Tensor, seq_len: int, dim: int, latent_hw: tuple[int, int] = LTX_LATENT_HW
) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 cos/sin [B, S, dim] as ``LTXVideoRotaryPosEmbed`` computes them for tokens in (frame, h, w) order.

    ``frame_starts`` [B]: the frame index each batch element's first token sits at.
    """
    height, width = latent_hw
    token = torch.arange(seq_len, dtype=torch.int64)
    coords = torch.stack([token // (height * width), (token // width) % height, token % width], dim=-1)
    grid = coords.to(torch.float32).unsqueeze(0).repeat(frame_starts.shape[0], 1, 1)  # [B, S, 3]
    grid[..., 0] = grid[..., 0] + frame_starts.to(torch.float32)[:, None]
    for axis in range(3):
        grid[..., axis] = grid[..., axis] * LTX_SCALE[axis] / LTX_BASE[axis]
    freqs = LTX_THETA ** torch.linspace(
        math.log(1.0, LTX_THETA), math.log(LTX_THETA, LTX_THETA), dim // 6, dtype=torch.float32
    )
    freqs = freqs * math.pi / 2.0
    freqs = freqs * (grid.unsqueeze(-1) * 2 - 1)  # [B, S, 3, dim // 6]
    freqs = freqs.transpose(-1, -2).flatten(2)  # interleave the three axes
    cos = freqs.cos().repeat_interleave(2, dim=-1)
    sin = freqs.sin().repeat_interleave(2, dim=-1)
    pad = dim % 6
    if pad:  # (diffusers slices the padding off cos itself, which is too short when dim < 6)
        cos = torch.cat([torch.ones(*cos.shape[:-1], pad), cos], dim=-1)
        sin = torch.cat([torch.zeros(*sin.shape[:-1], pad), sin], dim=-1)
    return cos, sin


def ltx_apply_rotary_emb(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """diffusers ``transformer_ltx.apply_rotary_emb(x, (cos, sin))`` for x [B, S, C]."""
    x_real, x_imag = x.unflatten(2, (-1, 2)).unbind(-1)
    x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(2)
    return (x.float() * cos + x_rotated.float() * sin).to(x.dtype)


def interleaved_reference(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Interleaved-pair RoPE in the inputs' dtype (float64 for a reference), no rounding in between."""
    pairs = x.unflatten(-1, (-1, 2))
    rotated = torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)
    return x * cos + rotated * sin


def ltx_shape_check(expects: str):
    """The shape check of a kernel on LTX's ``[B, S, C]`` rows with interleaved RoPE pairs (an even C); ``expects``
    begins its error (``rope expects x [B, S, C] (...)``)."""

    def check(shape: Sequence[int]) -> None:
        if len(shape) != 3 or any(not isinstance(s, int) or s < 1 for s in shape) or shape[-1] % 2:
            raise ValueError(f"{expects} with an even C >= 2; got {list(shape)}")

    return check


def ltx_inputs_tables(
    shape: Sequence[int], device: torch.device, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """LTX's fp32 cos/sin ``[B, S, C]`` for a ``[B, S, C]`` input, each batch element at its own random position
    offset, on ``device`` (drawn before the entry's other inputs)."""
    batch, seq, dim = shape
    cos, sin = ltx_rope_tables(torch.randint(0, 16, (batch,), generator=gen), seq, dim)
    return cos.to(device), sin.to(device)
