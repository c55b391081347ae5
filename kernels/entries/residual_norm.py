"""Registry entry ``add_rms_norm_modulate``: LTX-Video's attn2 residual add + norm2 + modulate of one block.

Inputs ``x`` (the attention output) and ``residual`` ``[B, S, C]``, ``scale``/``shift`` ``[B, 1, C]``; outputs
``(new_residual, normed)``.
"""

from typing import Sequence

import torch

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
from kernels.metadata.residual_norm import ADD_RMS_NORM_MODULATE
from kernels.registry import KernelEntry
from kernels.residual_norm import LAUNCH, add_rms_norm_modulate, add_rms_norm_modulate_into
from kernels.rows import row_tune


def make_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    n_b, _, width = shape
    return {
        "x": randn(shape, dtype, device, gen),
        "residual": randn(shape, dtype, device, gen),
        "scale": randn((n_b, 1, width), dtype, device, gen, scale=MODULATION_STD),
        "shift": randn((n_b, 1, width), dtype, device, gen, scale=MODULATION_STD),
        "eps": 1e-6,
    }


def reference(inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    up = upcast(inputs)
    new_residual = up["residual"] + up["x"]
    normed = rms_normalised(new_residual, up["eps"]) * (1 + up["scale"]) + up["shift"]
    return new_residual, normed


def alloc_out(inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    x = inputs["x"]
    return (torch.empty(x.shape, dtype=x.dtype, device=x.device), torch.empty(x.shape, dtype=x.dtype, device=x.device))


def eager(
    x: torch.Tensor, residual: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The LTX block lines (``hidden_states + attn2(...)``, ``norm2(hidden_states) * (1 + scale_mlp) + shift_mlp``),
    with ``norm2`` (diffusers RMSNorm, no weight) written out as its forward computes it."""
    hidden_states = residual + x
    variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
    norm2 = (hidden_states * torch.rsqrt(variance + eps)).to(hidden_states.dtype)
    norm_hidden_states = norm2 * (1 + scale) + shift
    return hidden_states, norm_hidden_states


triton_add_rms_norm_modulate = triton_with_out(add_rms_norm_modulate, add_rms_norm_modulate_into)


def bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    n_b, _, width = shape
    # x and residual read, new residual and normed written, scale and shift read once
    return (4 * numel(shape) + 2 * n_b * width) * dtype.itemsize


def flops(shape: Sequence[int]) -> int:
    return 7 * numel(shape)  # add, square + sum, * rstd, 1 + scale, *, +


ENTRIES = [
    KernelEntry(
        **ADD_RMS_NORM_MODULATE.entry_fields(),
        description="LTX-Video attn2 residual add + norm2 (diffusers RMSNorm, no weight, eps 1e-6) "
        "* (1 + scale) + shift; outputs (new_residual, normed)",
        check_shape=check_shape_bsc("add_rms_norm_modulate"),
        make_inputs=make_inputs,
        reference=reference,
        alloc_out=alloc_out,
        impls={
            **standard_impls(
                triton_add_rms_norm_modulate,
                "kernels.add_rms_norm_modulate",
                eager,
                "LTX block lines: residual add, norm2, modulate",
            ),
        },
        bytes_moved=bytes_moved,
        flops=flops,
        default_impls=ADD_RMS_NORM_MODULATE.impls,
        function=add_rms_norm_modulate,
        contract=ROW_CONTRACT,
        launch_table=LAUNCH,
        tune=row_tune(triton_add_rms_norm_modulate, LAUNCH),
        activations=("x", "residual"),
    ),
]
