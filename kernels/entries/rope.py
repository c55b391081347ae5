"""Registry entries ``rope`` (LTX-Video interleaved RoPE) and ``rope_rotate_half`` (transformers/Llama).

``rope``: x ``[B, S, C]`` (LTX applies RoPE before the head split) with per-batch fp32 cos/sin ``[B, S, C]``
built the way ``LTXVideoRotaryPosEmbed`` builds them (frequency table ``theta ** linspace(0, 1, C // 6)``,
``* pi/2 * (2*coord - 1)``, interleaved over (frame, height, width), ``repeat_interleave(2)``, the first
``C % 6`` channels padded with cos = 1, sin = 0).  Tokens walk a 22-wide, 15-high latent grid (480x704 video)
frame after frame; each batch element starts at a random frame, so the rows of the table differ per batch.
The eager implementation is diffusers' ``apply_rotary_emb`` from ``transformer_ltx.py``, line for line.

``rope_rotate_half``: x ``[B, S, H, D]`` (the layout of the ROCm kernels guidance document the project started from)
with cos/sin ``[S, D]`` built like ``LlamaRotaryEmbedding`` (``1/10000**(arange(0, D, 2)/D)``, ``cat(freqs,
freqs)``) and cast to x's dtype, as transformers hands them to ``apply_rotary_pos_emb``; positions start at a random
offset.  The eager implementation is transformers' ``q * cos + rotate_half(q) * sin`` (``unsqueeze_dim=2`` for
this layout).
"""

from __future__ import annotations

from typing import Sequence

import torch

from kernels.entries.common import numel, randn, standard_impls, triton_with_out, upcast
from kernels.entries.ltx_rope import interleaved_reference, ltx_apply_rotary_emb, ltx_inputs_tables, ltx_shape_check
from kernels.metadata.rope import ROPE, ROPE_ROTATE_HALF
from kernels.registry import Contract, KernelEntry
from kernels.rope import (
    ROPE_LAUNCH,
    ROTATE_HALF_LAUNCH,
    rope_interleaved,
    rope_interleaved_into,
    rope_rotate_half,
    rope_rotate_half_into,
    rope_tune,
)

LLAMA_THETA = 10000.0


def llama_rope_tables(positions: torch.Tensor, dim: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin [S, dim] as ``LlamaRotaryEmbedding`` computes them (fp32), cast to ``dtype``."""
    inv_freq = 1.0 / (LLAMA_THETA ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float32) / dim))
    freqs = positions.to(torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


# --------------------------------------------------------------------------------------------------------------
# The model code paths (eager) and their float64 references


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``rotate_half``."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def llama_apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' ``apply_rotary_pos_emb`` for one tensor in the [B, S, H, D] layout (cos/sin [S, D])."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    return (x * cos) + (rotate_half(x) * sin)


# --------------------------------------------------------------------------------------------------------------
# rope (LTX)


check_ltx_shape = ltx_shape_check("rope expects x [B, S, C] (LTX, before the head split)")


def make_ltx_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    cos, sin = ltx_inputs_tables(shape, device, gen)
    return {"x": randn(shape, dtype, device, gen), "cos": cos, "sin": sin}


def ltx_reference(inputs: dict) -> torch.Tensor:
    up = upcast(inputs)
    return interleaved_reference(up["x"], up["cos"], up["sin"])


triton_rope = triton_with_out(rope_interleaved, rope_interleaved_into)


def ltx_bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    return 2 * numel(shape) * dtype.itemsize + 2 * numel(shape) * 4  # x read, out written; fp32 cos, sin read


def rope_flops(shape: Sequence[int]) -> int:
    return 3 * numel(shape)  # x*cos, x_rot*sin, add


# --------------------------------------------------------------------------------------------------------------
# rope_rotate_half (transformers / seed)


def check_rotate_half_shape(shape: Sequence[int]) -> None:
    if len(shape) != 4 or any(not isinstance(s, int) or s < 1 for s in shape) or shape[-1] % 2:
        raise ValueError(f"rope_rotate_half expects x [B, S, H, D] with an even head dim D; got {list(shape)}")


def make_rotate_half_inputs(
    shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator
) -> dict:
    _, seq, _, dim = shape
    start = int(torch.randint(0, 4096, (1,), generator=gen))
    cos, sin = llama_rope_tables(torch.arange(start, start + seq), dim, dtype)
    return {"x": randn(shape, dtype, device, gen), "cos": cos.to(device), "sin": sin.to(device)}


def rotate_half_reference(inputs: dict) -> torch.Tensor:
    up = upcast(inputs)
    return llama_apply_rotary(up["x"], up["cos"], up["sin"])


triton_rope_rotate_half = triton_with_out(rope_rotate_half, rope_rotate_half_into)


def rotate_half_bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    _, seq, _, dim = shape
    return (2 * numel(shape) + 2 * seq * dim) * dtype.itemsize  # x read, out written; cos, sin [S, D] read


def alloc_like_x(inputs: dict) -> torch.Tensor:
    return torch.empty_like(inputs["x"])


ENTRIES = [
    KernelEntry(
        **ROPE.entry_fields(),
        description="LTX-Video RoPE: interleaved pairs over x [B,S,C], per-batch fp32 cos/sin [B,S,C] (fp32 math)",
        check_shape=check_ltx_shape,
        make_inputs=make_ltx_inputs,
        reference=ltx_reference,
        alloc_out=alloc_like_x,
        impls={
            **standard_impls(
                triton_rope,
                "kernels.rope_interleaved",
                ltx_apply_rotary_emb,
                "diffusers transformer_ltx.apply_rotary_emb",
            ),
        },
        bytes_moved=ltx_bytes_moved,
        flops=rope_flops,
        default_impls=ROPE.impls,
        function=rope_interleaved,
        contract=Contract(small_shape=(2, 12, 64), launch_shapes=((1, 16, 512), (1, 16, 4096))),
        launch_table=ROPE_LAUNCH,
        tune=rope_tune(triton_rope, interleaved=True),
    ),
    KernelEntry(
        **ROPE_ROTATE_HALF.entry_fields(),
        description="rotate-half RoPE (transformers/Llama numerics) on x [B,S,H,D], cos/sin [S,D] in x's dtype",
        check_shape=check_rotate_half_shape,
        make_inputs=make_rotate_half_inputs,
        reference=rotate_half_reference,
        alloc_out=alloc_like_x,
        impls={
            **standard_impls(
                triton_rope_rotate_half,
                "kernels.rope_rotate_half",
                llama_apply_rotary,
                "transformers apply_rotary_pos_emb (q*cos + rotate_half(q)*sin)",
            ),
        },
        bytes_moved=rotate_half_bytes_moved,
        flops=rope_flops,
        default_impls=ROPE_ROTATE_HALF.impls,
        function=rope_rotate_half,
        contract=Contract(small_shape=(2, 12, 4, 16), launch_shapes=((1, 16, 8, 32), (1, 16, 4, 256))),
        launch_table=ROTATE_HALF_LAUNCH,
        tune=rope_tune(triton_rope_rotate_half, interleaved=False),
    ),
]
