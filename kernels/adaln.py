"""Norm + adaptive modulation in one pass: ``norm(x) * (1 + scale) + shift``.

* :func:`adaln_rms`: LTX-Video's ``norm1``/``norm2`` (diffusers ``RMSNorm`` without weight, eps 1e-6) followed by
  the block's ``* (1 + scale) + shift``.
* :func:`adaln_layer_norm`: SD3/FLUX ``AdaLayerNormZero`` (``nn.LayerNorm(eps=1e-6)`` without affine) followed by
  the same modulation.

``x`` is ``[B, S, C]``; ``scale``/``shift`` are ``[B, 1, C]`` (one row per batch element, broadcast over the
tokens) or ``[B, S, C]`` (per token, as LTX's image-to-video pipelines give).  Rounding mirrors eager exactly: the
norm rounds to ``x.dtype`` as the module does, then ``1 + scale``, the product and the sum each round, as the three
separate eager ops do, so the result equals eager bit for bit up to the order of the fp32 row sum.
"""

from typing import Optional

import torch
import triton
import triton.language as tl

from kernels.checks import check_eps, check_float, check_modulation, check_out, check_rows_input, check_same_device
from kernels.launch import PublicKernel, launcher
from kernels.launch_table import LaunchTable
from kernels.rounding import cast_trip, fusion_options, modulate, round_code, round_to
from kernels.rows import RowLaunch, new_rows_out, out_rows_3d, row_block, row_grid, row_ptrs, strides_3d


@triton.jit
def _adaln_kernel(
    x_ptr,
    scale_ptr,
    shift_ptr,
    w_ptr,
    bias_ptr,
    out_ptr,
    n_rows,
    seq,
    width,
    sx_b,
    sx_s,
    sx_d,
    sc_b,
    sc_s,
    sc_d,
    sh_b,
    sh_s,
    sh_d,
    so_b,
    so_s,
    so_d,
    sw,
    sbias,
    eps,
    LAYER_NORM: tl.constexpr,
    HAS_WEIGHT: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    ROUND: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_D: tl.constexpr,
    INT_ROUND: tl.constexpr,
):
    b, s, cols, col_ok, mask = row_block(n_rows, seq, width, ROWS, BLOCK_D)

    x = tl.load(row_ptrs(x_ptr, b, s, sx_b, sx_s, sx_d, cols), mask=mask, other=0.0).to(tl.float32)
    if LAYER_NORM:
        # nn.LayerNorm: biased variance, (x - mean) * rstd [* w] [+ b] in fp32, one rounding
        mean = tl.sum(x, axis=1) / width
        centred = tl.where(mask, x - mean[:, None], 0.0)
        rstd = tl.rsqrt((tl.sum(centred * centred, axis=1) / width + eps).to(tl.float32))
        y = centred * rstd[:, None]
        if HAS_WEIGHT:
            y = y * tl.load(w_ptr + cols * sw, mask=col_ok, other=0.0).to(tl.float32)[None, :]
        if HAS_BIAS:
            y = y + tl.load(bias_ptr + cols * sbias, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    else:
        # diffusers RMSNorm: x * rstd in fp32; with a weight (same dtype as x) round, then multiply
        rstd = tl.rsqrt((tl.sum(x * x, axis=1) / width + eps).to(tl.float32))
        y = x * rstd[:, None]
        if HAS_WEIGHT:
            w = tl.load(w_ptr + cols * sw, mask=col_ok, other=0.0).to(tl.float32)
            y = cast_trip(y, ROUND) * w[None, :]
    normed = cast_trip(y, ROUND)

    scale = tl.load(row_ptrs(scale_ptr, b, s, sc_b, sc_s, sc_d, cols), mask=mask, other=0.0)
    shift = tl.load(row_ptrs(shift_ptr, b, s, sh_b, sh_s, sh_d, cols), mask=mask, other=0.0)
    out = modulate(normed, scale.to(tl.float32), shift.to(tl.float32), ROUND, INT_ROUND)
    tl.store(row_ptrs(out_ptr, b, s, so_b, so_s, so_d, cols), round_to(out, out_ptr.dtype.element_ty), mask=mask)


# ----------------------------------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------------------------------
def check_affine(name: str, t, x: torch.Tensor) -> None:
    if t is None:
        return
    check_float(name, t)
    check_same_device(name, t, x)
    if t.dtype != x.dtype:
        raise TypeError(f"{name} has dtype {t.dtype}; expected x's dtype {x.dtype}")
    if t.dim() != 1 or t.shape[0] != x.shape[-1]:
        raise ValueError(f"{name} has shape {list(t.shape)}; expected [{x.shape[-1]}] (x's last dimension)")


def _check_adaln_args(x, scale, shift, weight, bias, eps) -> None:
    check_rows_input("x", x)
    check_modulation("scale", scale, x)
    check_modulation("shift", shift, x)
    check_affine("weight", weight, x)
    check_affine("bias", bias, x)
    check_eps(eps)


# ----------------------------------------------------------------------------------------------------------------
# Launch
# ----------------------------------------------------------------------------------------------------------------
# H200 (docs/perf/kernels-h200.md, launch knobs; confirmed by a tune run, docs/perf/tune-h200.md): at 2048-wide rows
# 4 warps beat 8 for adaln_rms by 5-25 % launch-free at 22-104 MB; at 3072 (block 4096) 8, the rule's, stays best
ADALN_LAUNCH = LaunchTable(
    "adaln",
    RowLaunch(),
    {
        "sm_90": RowLaunch(
            measured=True,
            source="docs/perf/tune-h200.md, runs 1, 3 (2026-12-02, NVIDIA H200, b8cd78b8bb)",
            warps=((2048, 4), (4096, 8)),
        )
    },
)
# H200 (docs/perf/kernels-h200.md, launch knobs; confirmed by a tune run, docs/perf/tune-h200.md): adaln_layer_norm
# (two row reductions, mean then variance) at 1536-3072 wide rows, per call: 2 warps at block 2048 (17.1 against
# 18.5 us with 4), 4 at block 4096 (16.9 against 19.3 with 8; 26.0 against 33.2 at 2432)
ADALN_LAYER_NORM_LAUNCH = LaunchTable(
    "adaln_layer_norm",
    RowLaunch(),
    {
        "sm_90": RowLaunch(
            measured=True,
            source="docs/perf/tune-h200.md, runs 1, 3 (2026-12-02, NVIDIA H200, b8cd78b8bb)",
            warps=((2048, 2), (4096, 4)),
        )
    },
)


def _launch(outs, x, scale, shift, weight, bias, eps, layer_norm: bool, traced: bool, config) -> None:
    (out,) = outs
    if x.numel() == 0:
        return
    out3 = out_rows_3d(out, x.shape)
    g = row_grid(x.shape, x.device, ADALN_LAYER_NORM_LAUNCH if layer_norm else ADALN_LAUNCH, config)
    launcher(_adaln_kernel, traced)[g.grid](
        x,
        scale,
        shift,
        x if weight is None else weight,
        x if bias is None else bias,
        out3,
        g.n_rows,
        g.seq,
        g.width,
        *strides_3d(x),
        *strides_3d(scale),
        *strides_3d(shift),
        *strides_3d(out3),
        0 if weight is None else weight.stride(0),
        0 if bias is None else bias.stride(0),
        eps,
        LAYER_NORM=layer_norm,
        HAS_WEIGHT=weight is not None,
        HAS_BIAS=bias is not None,
        ROUND=round_code(x.dtype),
        **g.options(),
        **fusion_options(traced),
    )


def _launch_rms(
    outs: tuple[torch.Tensor],
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    weight: Optional[torch.Tensor],
    eps: float,
    *,
    traced: bool,
    config=None,
) -> None:
    _launch(outs, x, scale, shift, weight, None, eps, False, traced, config)


def _launch_layer_norm(
    outs: tuple[torch.Tensor],
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    weight: Optional[torch.Tensor],
    bias: Optional[torch.Tensor],
    eps: float,
    *,
    traced: bool,
    config=None,
) -> None:
    _launch(outs, x, scale, shift, weight, bias, eps, True, traced, config)


def _new_outs(x, *_) -> tuple[torch.Tensor]:
    return (new_rows_out(x),)


def _check_out(outs, x, *_) -> None:
    check_out(outs[0], x.shape, x.dtype, x.device)


_ADALN_RMS = PublicKernel(
    "adaln_rms",
    check=lambda x, scale, shift, weight, eps: _check_adaln_args(x, scale, shift, weight, None, eps),
    prepare=lambda x, scale, shift, weight, eps: (x, scale, shift, weight, float(eps)),
    new_outs=_new_outs,
    launch=_launch_rms,
    check_out=_check_out,
)
_ADALN_LAYER_NORM = PublicKernel(
    "adaln_layer_norm",
    check=_check_adaln_args,
    prepare=lambda x, scale, shift, weight, bias, eps: (x, scale, shift, weight, bias, float(eps)),
    new_outs=_new_outs,
    launch=_launch_layer_norm,
    check_out=_check_out,
)


# ----------------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------------
def adaln_rms(
    x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6
) -> torch.Tensor:
    """``RMSNorm(x) * (1 + scale) + shift`` with LTX-Video's rounding (diffusers RMSNorm, then eager modulate).

    ``x``: ``[B, S, C]``; ``scale``, ``shift``: ``[B, 1, C]`` or ``[B, S, C]`` in x's dtype; ``weight``: ``[C]``
    (x's dtype) or None.  Any strides.  Forward only.
    """
    return _ADALN_RMS(x, scale, shift, weight, eps)


def adaln_layer_norm(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    weight: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
) -> torch.Tensor:
    """``LayerNorm(x) * (1 + scale) + shift`` with SD3/FLUX ``AdaLayerNormZero``'s rounding.

    Shapes as :func:`adaln_rms`; ``weight``/``bias``: the LayerNorm's affine ``[C]`` or None.  Forward only.
    """
    return _ADALN_LAYER_NORM(x, scale, shift, weight, bias, eps)


def adaln_rms_into(
    out: torch.Tensor,
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    weight: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    *,
    _config=None,
) -> torch.Tensor:
    """:func:`adaln_rms` written into ``out`` (x's shape and dtype); returns ``out``."""
    return _ADALN_RMS.into(out, (x, scale, shift, weight, eps), _config)


def adaln_layer_norm_into(
    out: torch.Tensor,
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    weight: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    *,
    _config=None,
) -> torch.Tensor:
    """:func:`adaln_layer_norm` written into ``out`` (x's shape and dtype); returns ``out``."""
    return _ADALN_LAYER_NORM.into(out, (x, scale, shift, weight, bias, eps), _config)
