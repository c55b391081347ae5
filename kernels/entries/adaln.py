"""Registry entries ``adaln`` (RMSNorm + modulate, LTX-Video norm1) and ``adaln_layer_norm`` (LayerNorm +
modulate, SD3/FLUX AdaLayerNormZero).

Shape ``[B, S, C]``; ``scale``/``shift`` are ``[B, 1, C]`` (one modulation row per batch element, as LTXPipeline's
text-to-video gives).  The per-token ``[B, S, C]`` case is covered by the kernel tests.
"""

from typing import Sequence

import torch
import torch.nn.functional as F

from kernels.adaln import (
    ADALN_LAUNCH,
    ADALN_LAYER_NORM_LAUNCH,
    adaln_layer_norm,
    adaln_layer_norm_into,
    adaln_rms,
    adaln_rms_into,
)
from kernels.entries.common import ROW_CONTRACT, STANDARD_IMPLS, numel, randn, standard_impls, triton_with_out, upcast
from kernels.registry import Grid, KernelEntry
from kernels.rows import row_tune

MODULATION_STD = 0.25  # scale/shift ~ N(0, 0.25^2): 1 + scale stays positive almost always, as in the models


def check_shape_bsc(name: str):
    def check(shape: Sequence[int]) -> None:
        if len(shape) != 3 or any(not isinstance(s, int) or s < 1 for s in shape):
            raise ValueError(f"{name} expects a shape [B, S, C] of 3 positive ints; got {list(shape)}")

    return check


def make_modulated_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    n_b, _, width = shape
    return {
        "x": randn(shape, dtype, device, gen),
        "scale": randn((n_b, 1, width), dtype, device, gen, scale=MODULATION_STD),
        "shift": randn((n_b, 1, width), dtype, device, gen, scale=MODULATION_STD),
        "eps": 1e-6,
    }


def alloc_like_x(inputs: dict) -> torch.Tensor:
    return torch.empty_like(inputs["x"], memory_format=torch.contiguous_format)


def rms_normalised(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def reference_rms(inputs: dict) -> torch.Tensor:
    up = upcast(inputs)
    return rms_normalised(up["x"], up["eps"]) * (1 + up["scale"]) + up["shift"]


def reference_layer_norm(inputs: dict) -> torch.Tensor:
    up = upcast(inputs)
    x = up["x"]
    centred = x - x.mean(-1, keepdim=True)
    normed = centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + up["eps"])
    return normed * (1 + up["scale"]) + up["shift"]


def eager_rms(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, eps: float) -> torch.Tensor:
    """LTX-Video block: ``norm1`` (diffusers RMSNorm, no weight) then ``* (1 + scale_msa) + shift_msa``."""
    variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    norm_hidden_states = (x * torch.rsqrt(variance + eps)).to(x.dtype)
    return norm_hidden_states * (1 + scale) + shift


def eager_layer_norm(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, eps: float) -> torch.Tensor:
    """AdaLayerNormZero: ``nn.LayerNorm(C, eps, elementwise_affine=False)(x) * (1 + scale) + shift``."""
    return F.layer_norm(x, (x.shape[-1],), None, None, eps) * (1 + scale) + shift


def bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    n_b, _, width = shape
    return (2 * numel(shape) + 2 * n_b * width) * dtype.itemsize  # x read, out written, scale + shift read


def flops_rms(shape: Sequence[int]) -> int:
    return 6 * numel(shape)  # square + sum, * rstd, 1 + scale, *, +


def flops_layer_norm(shape: Sequence[int]) -> int:
    return 8 * numel(shape)  # sum, - mean, square + sum, * rstd, 1 + scale, *, +


TOLERANCES = {"fp32": (1e-5, 1e-4), "bf16": (1e-2, 0.125), "fp16": (2e-3, 2e-2)}

# LTX-Video's norm rows at its real token counts and widths (2048: LTX-Video 2B, 3072: 13B): the grid of the LTX norm
# kernels (adaln and rmsnorm).
LTX_NORM_SHAPES = (
    (1, 1024, 2048),
    (2, 1024, 2048),
    (4, 1024, 2048),
    (1, 4096, 2048),
    (2, 4096, 3072),
    (1, 8192, 2048),
    (4, 4096, 3072),
    (2, 1320, 2048),
    (2, 6336, 2048),
)
# The element-wise block lines around them (gated residual, residual add + norm2) at LTX-Video 2B's token counts.
LTX_BLOCK_LINE_SHAPES = ((1, 256, 2048), (2, 1320, 2048), (2, 6336, 2048))


def modulated_entry(
    name: str,
    description: str,
    function,
    into,
    reference,
    eager,
    eager_description: str,
    flops,
    shapes: tuple,
    launch_table,
) -> KernelEntry:
    """An entry of a norm ``* (1 + scale) + shift`` kernel over x ``[B, S, C]`` with scale/shift ``[B, 1, C]``: the
    two adaln kernels differ only in the norm (its reference, eager code, FLOPs) and their grid and table."""
    triton = triton_with_out(function, into)
    return KernelEntry(
        name=name,
        description=description,
        check_shape=check_shape_bsc(name),
        make_inputs=make_modulated_inputs,
        reference=reference,
        alloc_out=alloc_like_x,
        impls=standard_impls(triton, f"kernels.{function.__name__}", eager, eager_description),
        bytes_moved=bytes_moved,
        flops=flops,
        tolerances=TOLERANCES,
        default_impls=STANDARD_IMPLS,
        function=function,
        grid=Grid(shapes=shapes),
        contract=ROW_CONTRACT,
        launch_table=launch_table,
        tune=row_tune(triton, launch_table),
    )


ENTRIES = [
    modulated_entry(
        "adaln",
        "LTX-Video norm1/norm2: diffusers RMSNorm (no weight, eps 1e-6) * (1 + scale) + shift, scale/shift [B,1,C]",
        adaln_rms,
        adaln_rms_into,
        reference_rms,
        eager_rms,
        "LTX block lines: norm1(x) * (1 + scale) + shift",
        flops_rms,
        LTX_NORM_SHAPES,
        ADALN_LAUNCH,
    ),
    modulated_entry(
        "adaln_layer_norm",
        "SD3/FLUX AdaLayerNormZero: LayerNorm (no affine, eps 1e-6) * (1 + scale) + shift, scale/shift [B,1,C]",
        adaln_layer_norm,
        adaln_layer_norm_into,
        reference_layer_norm,
        eager_layer_norm,
        "F.layer_norm(x) * (1 + scale) + shift (AdaLayerNormZero)",
        flops_layer_norm,
        ((2, 1024, 1536), (2, 4096, 1536), (2, 4096, 2432), (1, 512, 3072), (1, 4096, 3072), (2, 1024, 3072)),
        ADALN_LAYER_NORM_LAUNCH,
    ),
]
