"""LTX-Video's gated residual add in one pass.

An LTX block adds each branch back to the residual stream through a gate (diffusers ``transformer_ltx.py``,
``LTXVideoTransformerBlock.forward``)::

    hidden_states = hidden_states + attn_hidden_states * gate_msa     # after attn1
    hidden_states = hidden_states + ff_output * gate_mlp              # after the feed-forward

Eager runs that as two kernels (the product written and read back).  :func:`gated_residual` reads the residual,
the branch output and the gate once and writes the sum, rounding where eager rounds: the product to the dtype (a
product that feeds an add: integer rounding when traced, a cast round trip with fp fusion off in direct launches,
see :func:`kernels.rounding.modulate`), then the sum.  The gate is ``[B, 1, C]`` (broadcast over tokens, text-to-video)
or ``[B, S, C]`` (per token, image-to-video / condition pipelines).
"""

import torch
import triton
import triton.language as tl

from kernels.checks import check_modulation, check_out, check_residual, check_rows_input
from kernels.launch import PublicKernel, launcher
from kernels.launch_table import LaunchTable
from kernels.rounding import fusion_options, round_before_add, round_code, round_to
from kernels.rows import RowLaunch, new_rows_out, out_rows_3d, row_block, row_grid, row_ptrs, strides_3d


@triton.jit
def _gated_residual_kernel(
    res_ptr,
    x_ptr,
    gate_ptr,
    out_ptr,
    n_rows,
    seq,
    width,
    sr_b,
    sr_s,
    sr_d,
    sx_b,
    sx_s,
    sx_d,
    sg_b,
    sg_s,
    sg_d,
    so_b,
    so_s,
    so_d,
    ROUND: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_D: tl.constexpr,
    INT_ROUND: tl.constexpr,
):
    b, s, cols, _, mask = row_block(n_rows, seq, width, ROWS, BLOCK_D)

    res = tl.load(row_ptrs(res_ptr, b, s, sr_b, sr_s, sr_d, cols), mask=mask, other=0.0)
    x = tl.load(row_ptrs(x_ptr, b, s, sx_b, sx_s, sx_d, cols), mask=mask, other=0.0)
    gate = tl.load(row_ptrs(gate_ptr, b, s, sg_b, sg_s, sg_d, cols), mask=mask, other=0.0)
    prod = round_before_add(x.to(tl.float32) * gate.to(tl.float32), ROUND, INT_ROUND)
    tl.store(
        row_ptrs(out_ptr, b, s, so_b, so_s, so_d, cols),
        round_to(res.to(tl.float32) + prod, out_ptr.dtype.element_ty),
        mask=mask,
    )


def _check_args(residual, x, gate) -> None:
    check_rows_input("x", x)
    check_residual(residual, x)
    check_modulation("gate", gate, x)


# sm_90: the norm family's measured 4 warps at 2048-wide rows (kernels/rmsnorm.py), not measured for this kernel
LAUNCH = LaunchTable("gated_residual", RowLaunch(), {"sm_90": RowLaunch(warps=((2048, 4),))})


def _launch(
    outs: tuple[torch.Tensor],
    residual: torch.Tensor,
    x: torch.Tensor,
    gate: torch.Tensor,
    *,
    traced: bool,
    config=None,
) -> None:
    (out,) = outs
    if residual.numel() == 0:
        return
    out3 = out_rows_3d(out, residual.shape)
    g = row_grid(residual.shape, residual.device, LAUNCH, config)
    launcher(_gated_residual_kernel, traced)[g.grid](
        residual,
        x,
        gate,
        out3,
        g.n_rows,
        g.seq,
        g.width,
        *strides_3d(residual),
        *strides_3d(x),
        *strides_3d(gate),
        *strides_3d(out3),
        ROUND=round_code(residual.dtype),
        **g.options(),
        **fusion_options(traced),
    )


def _check_out(outs, residual, x, gate) -> None:
    check_out(outs[0], residual.shape, residual.dtype, residual.device)


_GATED_RESIDUAL = PublicKernel(
    "gated_residual",
    check=_check_args,
    new_outs=lambda residual, x, gate: (new_rows_out(residual),),
    launch=_launch,
    check_out=_check_out,
)


def gated_residual(residual: torch.Tensor, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """``residual + x * gate`` with eager's rounding (the product, then the sum).

    ``residual``, ``x``: ``[B, S, C]`` of one dtype; ``gate``: ``[B, 1, C]`` or ``[B, S, C]`` in that dtype.  Any
    strides.  Forward only.
    """
    return _GATED_RESIDUAL(residual, x, gate)


def gated_residual_into(
    out: torch.Tensor, residual: torch.Tensor, x: torch.Tensor, gate: torch.Tensor, *, _config=None
) -> torch.Tensor:
    """:func:`gated_residual` written into ``out`` (residual's shape and dtype); returns ``out``."""
    return _GATED_RESIDUAL.into(out, (residual, x, gate), _config)
