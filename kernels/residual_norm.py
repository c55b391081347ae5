"""LTX-Video's residual add + norm2 + modulate in one pass.

One LTX block does, after cross-attention (diffusers ``transformer_ltx.py``, ``LTXVideoTransformerBlock.forward``)::

    hidden_states = hidden_states + attn_output                                     # new residual stream
    norm_hidden_states = self.norm2(hidden_states) * (1 + scale_mlp) + shift_mlp   # input of the feed-forward

:func:`add_rms_norm_modulate` reads ``x`` (the attention output) and ``residual`` once and writes both results:
``new_residual = residual + x`` rounded to the dtype as eager's add, and ``normed`` = diffusers RMSNorm (no weight)
of it, then ``* (1 + scale) + shift`` with eager's roundings (see :mod:`kernels.adaln`).
"""

import torch
import triton
import triton.language as tl

from kernels.checks import check_eps, check_modulation, check_out, check_residual, check_rows_input
from kernels.launch import PublicKernel, launcher
from kernels.launch_table import LaunchTable
from kernels.rounding import cast_trip, fusion_options, modulate, round_code, round_to
from kernels.rows import RowLaunch, new_rows_out, out_rows_3d, row_block, row_grid, row_ptrs, strides_3d


@triton.jit
def _add_rms_norm_modulate_kernel(
    x_ptr,
    res_ptr,
    scale_ptr,
    shift_ptr,
    new_res_ptr,
    normed_ptr,
    n_rows,
    seq,
    width,
    sx_b,
    sx_s,
    sx_d,
    sr_b,
    sr_s,
    sr_d,
    sc_b,
    sc_s,
    sc_d,
    sh_b,
    sh_s,
    sh_d,
    snr_b,
    snr_s,
    snr_d,
    sn_b,
    sn_s,
    sn_d,
    eps,
    ROUND: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_D: tl.constexpr,
    INT_ROUND: tl.constexpr,
):
    b, s, cols, _, mask = row_block(n_rows, seq, width, ROWS, BLOCK_D)

    x = tl.load(row_ptrs(x_ptr, b, s, sx_b, sx_s, sx_d, cols), mask=mask, other=0.0)
    res = tl.load(row_ptrs(res_ptr, b, s, sr_b, sr_s, sr_d, cols), mask=mask, other=0.0)
    h = cast_trip(res.to(tl.float32) + x.to(tl.float32), ROUND)
    tl.store(row_ptrs(new_res_ptr, b, s, snr_b, snr_s, snr_d, cols), h.to(new_res_ptr.dtype.element_ty), mask=mask)

    rstd = tl.rsqrt((tl.sum(h * h, axis=1) / width + eps).to(tl.float32))
    normed = cast_trip(h * rstd[:, None], ROUND)
    scale = tl.load(row_ptrs(scale_ptr, b, s, sc_b, sc_s, sc_d, cols), mask=mask, other=0.0)
    shift = tl.load(row_ptrs(shift_ptr, b, s, sh_b, sh_s, sh_d, cols), mask=mask, other=0.0)
    out = modulate(normed, scale.to(tl.float32), shift.to(tl.float32), ROUND, INT_ROUND)
    tl.store(row_ptrs(normed_ptr, b, s, sn_b, sn_s, sn_d, cols), round_to(out, normed_ptr.dtype.element_ty), mask=mask)


def _check_args(x, residual, scale, shift, eps) -> None:
    check_rows_input("x", x)
    check_residual(residual, x)
    check_modulation("scale", scale, x)
    check_modulation("shift", shift, x)
    check_eps(eps)


# H200 (docs/perf/kernels-h200.md, launch knobs): at 2048-wide rows 4 warps tie with 8, as measured for the norm
# family (kernels/rmsnorm.py); at 3072 (block 4096) 8, the rule's
LAUNCH = LaunchTable(
    "add_rms_norm_modulate",
    RowLaunch(),
    # H200: 4 warps at 2048-wide rows from a hand measurement (docs/perf/kernels-h200.md, launch knobs), not a tune
    # run, so not marked measured (docs/perf/tune-h200.md: the kernels a tune run has written)
    {"sm_90": RowLaunch(warps=((2048, 4),), source="docs/perf/kernels-h200.md, launch knobs")},
)


def _launch(
    outs: tuple[torch.Tensor, torch.Tensor],
    x: torch.Tensor,
    residual: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float,
    *,
    traced: bool,
    config=None,
) -> None:
    new_residual, normed = outs
    if x.numel() == 0:
        return
    new_res3 = out_rows_3d(new_residual, x.shape)
    normed3 = out_rows_3d(normed, x.shape)
    g = row_grid(x.shape, x.device, LAUNCH, config)
    launcher(_add_rms_norm_modulate_kernel, traced)[g.grid](
        x,
        residual,
        scale,
        shift,
        new_res3,
        normed3,
        g.n_rows,
        g.seq,
        g.width,
        *strides_3d(x),
        *strides_3d(residual),
        *strides_3d(scale),
        *strides_3d(shift),
        *strides_3d(new_res3),
        *strides_3d(normed3),
        eps,
        ROUND=round_code(x.dtype),
        **g.options(),
        **fusion_options(traced),
    )


def _check_out(outs, x, *_) -> None:
    check_out(outs[0], x.shape, x.dtype, x.device, "out[0] (new_residual)")
    check_out(outs[1], x.shape, x.dtype, x.device, "out[1] (normed)")


_ADD_RMS_NORM_MODULATE = PublicKernel(
    "add_rms_norm_modulate",
    check=_check_args,
    prepare=lambda x, residual, scale, shift, eps: (x, residual, scale, shift, float(eps)),
    new_outs=lambda x, *_: (new_rows_out(x), new_rows_out(x)),
    launch=_launch,
    check_out=_check_out,
    outs=("new_residual", "normed"),
)


def add_rms_norm_modulate(
    x: torch.Tensor, residual: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(residual + x, RMSNorm(residual + x) * (1 + scale) + shift)`` with LTX-Video's eager rounding.

    ``x``, ``residual``: ``[B, S, C]`` of one dtype; ``scale``, ``shift``: ``[B, 1, C]`` or ``[B, S, C]`` in that
    dtype.  Any strides.  Returns ``(new_residual, normed)``.  Forward only.
    """
    return _ADD_RMS_NORM_MODULATE(x, residual, scale, shift, eps)


def add_rms_norm_modulate_into(
    out: tuple[torch.Tensor, torch.Tensor],
    x: torch.Tensor,
    residual: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float = 1e-6,
    *,
    _config=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`add_rms_norm_modulate` written into ``out = (new_residual, normed)``; returns ``out``."""
    return _ADD_RMS_NORM_MODULATE.into(out, (x, residual, scale, shift, eps), _config)
