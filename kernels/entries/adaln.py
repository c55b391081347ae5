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
from kernels.entries.common import (
    MODULATION_STD,
    ROW_CONTRACT,
    check_shape_bsc,
    numel,
    randn,
    rms_normalised,
    standard_impls,
    triton_with_out,
    upcast,
)
from kernels.metadata import KernelMeta
from kernels.metadata.adaln import ADALN, ADALN_LAYER_NORM
from kernels.registry import KernelEntry
from kernels.rows import row_tune


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


def modulated_entry(
    meta: KernelMeta,
    description: str,
    function,
    into,
    reference,
    eager,
    eager_description: str,
    flops,
    launch_table,
) -> KernelEntry:
    """An entry of a norm ``* (1 + scale) + shift`` kernel over x ``[B, S, C]`` with scale/shift ``[B, 1, C]``: the
    two adaln kernels differ only in the norm (its reference, eager code, FLOPs), their declaration
    (kernels/metadata/adaln.py: name, grid) and their launch table."""
    triton = triton_with_out(function, into)
    return KernelEntry(
        **meta.entry_fields(),
        description=description,
        check_shape=check_shape_bsc(meta.name),
        make_inputs=make_modulated_inputs,
        reference=reference,
        alloc_out=alloc_like_x,
        impls=standard_impls(triton, f"kernels.{function.__name__}", eager, eager_description),
        bytes_moved=bytes_moved,
        flops=flops,
        default_impls=meta.impls,
        function=function,
        contract=ROW_CONTRACT,
        launch_table=launch_table,
        tune=row_tune(triton, launch_table),
    )


ENTRIES = [
    modulated_entry(
        ADALN,
        "LTX-Video norm1/norm2: diffusers RMSNorm (no weight, eps 1e-6) * (1 + scale) + shift, scale/shift [B,1,C]",
        adaln_rms,
        adaln_rms_into,
        reference_rms,
        eager_rms,
        "LTX block lines: norm1(x) * (1 + scale) + shift",
        flops_rms,
        ADALN_LAUNCH,
    ),
    modulated_entry(
        ADALN_LAYER_NORM,
        "SD3/FLUX AdaLayerNormZero: LayerNorm (no affine, eps 1e-6) * (1 + scale) + shift, scale/shift [B,1,C]",
        adaln_layer_norm,
        adaln_layer_norm_into,
        reference_layer_norm,
        eager_layer_norm,
        "F.layer_norm(x) * (1 + scale) + shift (AdaLayerNormZero)",
        flops_layer_norm,
        ADALN_LAYER_NORM_LAUNCH,
    ),
]
