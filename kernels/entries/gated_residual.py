"""Registry entry ``gated_residual``: LTX-Video's gated residual add (``hidden_states + branch_output * gate``), run
twice per block (after attn1 with ``gate_msa``, after the feed-forward with ``gate_mlp``).

Inputs ``residual`` and ``x`` (the branch output) ``[B, S, C]``, ``gate`` ``[B, 1, C]`` (text-to-video).
"""

from typing import Sequence

import torch

from kernels.entries.common import (
    MODULATION_STD,
    ROW_CONTRACT,
    check_shape_bsc,
    numel,
    randn,
    standard_impls,
    triton_with_out,
    upcast,
)
from kernels.gated_residual import LAUNCH, gated_residual, gated_residual_into
from kernels.metadata.gated_residual import GATED_RESIDUAL
from kernels.registry import KernelEntry
from kernels.rows import row_tune


def make_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    n_b, _, width = shape
    return {
        "residual": randn(shape, dtype, device, gen),
        "x": randn(shape, dtype, device, gen),
        "gate": randn((n_b, 1, width), dtype, device, gen, scale=MODULATION_STD),
    }


def reference(inputs: dict) -> torch.Tensor:
    up = upcast(inputs)
    return up["residual"] + up["x"] * up["gate"]


def alloc_out(inputs: dict) -> torch.Tensor:
    return torch.empty_like(inputs["residual"], memory_format=torch.contiguous_format)


def eager(residual: torch.Tensor, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """The LTX block line ``hidden_states = hidden_states + attn_hidden_states * gate_msa``."""
    return residual + x * gate


triton_gated_residual = triton_with_out(gated_residual, gated_residual_into)


def bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    n_b, _, width = shape
    return (3 * numel(shape) + n_b * width) * dtype.itemsize  # residual, x read, out written, gate read once


def flops(shape: Sequence[int]) -> int:
    return 2 * numel(shape)  # *, +


ENTRIES = [
    KernelEntry(
        **GATED_RESIDUAL.entry_fields(),
        description="LTX-Video gated residual add: residual + x * gate, gate [B,1,C]",
        check_shape=check_shape_bsc("gated_residual"),
        make_inputs=make_inputs,
        reference=reference,
        alloc_out=alloc_out,
        impls={
            **standard_impls(
                triton_gated_residual,
                "kernels.gated_residual",
                eager,
                "LTX block line: hidden_states + branch_output * gate",
            ),
        },
        bytes_moved=bytes_moved,
        flops=flops,
        default_impls=GATED_RESIDUAL.impls,
        function=gated_residual,
        contract=ROW_CONTRACT,
        activations=("residual", "x"),
        launch_table=LAUNCH,
        tune=row_tune(triton_gated_residual, LAUNCH),
    ),
]
