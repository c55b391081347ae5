"""RMSNorm over the last dimension, rounding where the module it replaces rounds.

Three modules compute "RMSNorm" and differ only in where they round (their sources in torch, diffusers and
transformers):

* ``numerics="torch"``: ``torch.nn.RMSNorm`` / ``F.rms_norm``: ``x * rstd * w`` in fp32, one rounding to ``x.dtype``.
* ``numerics="diffusers"``: ``diffusers.models.normalization.RMSNorm``: ``x * rstd`` in fp32; with a bf16/fp16
  weight it is rounded to the weight's dtype *before* ``* w`` (which rounds again); an fp32 weight gives an fp32
  output; without a weight one rounding to ``x.dtype``.
* ``numerics="llama"``: transformers ``LlamaRMSNorm``: ``w * (x * rstd).to(x.dtype)``; the product rounds to
  the promoted dtype of weight and input.

The row geometry, prologue and launch knobs it shares with the other row kernels are in :mod:`kernels.rows`, the
argument checks in :mod:`kernels.checks`, the rounding helpers in :mod:`kernels.rounding`.
"""

from typing import Optional

import torch
import triton
import triton.language as tl

from kernels.checks import check_device, check_eps, check_float, check_out, check_row_count, check_same_device
from kernels.launch import PublicKernel, launcher
from kernels.launch_table import LaunchTable
from kernels.rounding import ROUND_NONE, cast_trip, round_code, round_to
from kernels.rows import RowLaunch, out_rows_3d, row_block, row_grid, row_ptrs, rows_3d, strides_3d

NUMERICS = ("torch", "diffusers", "llama")


# ----------------------------------------------------------------------------------------------------------------
# The kernel
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _rms_norm_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    n_rows,
    seq,
    width,
    sx_b,
    sx_s,
    sx_d,
    so_b,
    so_s,
    so_d,
    sw,
    eps,
    HAS_WEIGHT: tl.constexpr,
    ROUND_NORMED: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    b, s, cols, col_ok, mask = row_block(n_rows, seq, width, ROWS, BLOCK_D)

    x = tl.load(row_ptrs(x_ptr, b, s, sx_b, sx_s, sx_d, cols), mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=1) / width
    rstd = tl.rsqrt((mean_sq + eps).to(tl.float32))
    y = cast_trip(x * rstd[:, None], ROUND_NORMED)
    if HAS_WEIGHT:
        w = tl.load(w_ptr + cols * sw, mask=col_ok, other=0.0).to(tl.float32)
        y = y * w[None, :]
    tl.store(row_ptrs(out_ptr, b, s, so_b, so_s, so_d, cols), round_to(y, out_ptr.dtype.element_ty), mask=mask)


# ----------------------------------------------------------------------------------------------------------------
# Numerics: output dtype and where to round
# ----------------------------------------------------------------------------------------------------------------
def rms_norm_out_dtype(x_dtype: torch.dtype, weight_dtype: Optional[torch.dtype], numerics: str) -> torch.dtype:
    if weight_dtype is None or numerics == "torch":
        return x_dtype
    if numerics == "diffusers":
        return weight_dtype  # a half weight: rounded to it; an fp32 weight: the fp32 product
    return torch.promote_types(weight_dtype, x_dtype)  # llama


def _normed_round_code(x_dtype: torch.dtype, weight_dtype: Optional[torch.dtype], numerics: str) -> int:
    """Where ``x * rstd`` is rounded before the weight multiply (the final store rounds to the output dtype)."""
    if weight_dtype is None or numerics == "torch":
        return ROUND_NONE
    if numerics == "diffusers":
        return round_code(weight_dtype)
    return round_code(x_dtype)  # llama: (x * rstd).to(input_dtype)


def _check_rms_args(x, weight, eps, numerics) -> None:
    check_float("x", x)
    check_device("x", x)
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension [..., D]; got a 0-d tensor")
    check_row_count(x)
    if weight is not None:
        check_float("weight", weight)
        check_same_device("weight", weight, x)
        if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
            raise ValueError(f"weight has shape {list(weight.shape)}; expected [{x.shape[-1]}] (x's last dimension)")
    check_eps(eps)
    if not isinstance(numerics, str) or numerics not in NUMERICS:
        raise ValueError(f"numerics={numerics!r} is not supported; allowed: {', '.join(map(repr, NUMERICS))}")


# ----------------------------------------------------------------------------------------------------------------
# Launch
# ----------------------------------------------------------------------------------------------------------------
LAUNCH = LaunchTable(
    "rmsnorm",
    RowLaunch(),
    {
        # H200 (docs/perf/tune-h200.md): at 2048-wide rows 1 warp a row, 12 % faster launch-free than 4 at
        # 2x1320x2048 and within noise of it at the grid's other shapes; at 3072 (block 4096) 8, the rule's, stays best
        "sm_90": RowLaunch(
            measured=True,
            source="docs/perf/tune-h200.md, runs 1, 3 (2026-12-02, NVIDIA H200, b8cd78b8bb)",
            warps=((2048, 1), (4096, 8)),
        ),
    },
)


def _launch(
    outs: tuple[torch.Tensor],
    x: torch.Tensor,
    weight: Optional[torch.Tensor],
    eps: float,
    numerics: str,
    *,
    traced: bool,
    config=None,
) -> None:
    (out,) = outs
    if x.numel() == 0:
        return
    x3 = rows_3d(x)
    out3 = out_rows_3d(out, x3.shape)
    g = row_grid(x3.shape, x.device, LAUNCH, config)
    w_dtype = None if weight is None else weight.dtype
    launcher(_rms_norm_kernel, traced)[g.grid](
        x3,
        x3 if weight is None else weight,
        out3,
        g.n_rows,
        g.seq,
        g.width,
        *strides_3d(x3),
        *strides_3d(out3),
        0 if weight is None else weight.stride(0),
        eps,
        HAS_WEIGHT=weight is not None,
        ROUND_NORMED=_normed_round_code(x.dtype, w_dtype, numerics),
        **g.options(),
    )


def _out_dtype(x: torch.Tensor, weight: Optional[torch.Tensor], numerics: str) -> torch.dtype:
    return rms_norm_out_dtype(x.dtype, None if weight is None else weight.dtype, numerics)


def _new_outs(x, weight, eps, numerics) -> tuple[torch.Tensor]:
    return (torch.empty(x.shape, dtype=_out_dtype(x, weight, numerics), device=x.device),)


def _check_out(outs, x, weight, eps, numerics) -> None:
    check_out(outs[0], x.shape, _out_dtype(x, weight, numerics), x.device)


_RMS_NORM = PublicKernel(
    "rms_norm",
    check=_check_rms_args,
    prepare=lambda x, weight, eps, numerics: (x, weight, float(eps), numerics),
    new_outs=_new_outs,
    launch=_launch,
    check_out=_check_out,
)


def rms_norm(
    x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6, *, numerics: str = "torch"
) -> torch.Tensor:
    """RMSNorm of ``x`` over its last dimension, times ``weight`` when given; rounding as ``numerics`` says.

    ``x``: ``[..., D]`` float32/bfloat16/float16, any strides; ``weight``: ``[D]`` or None; ``numerics``: one of
    ``"torch"``, ``"diffusers"``, ``"llama"`` (the module whose rounding is mirrored; see the module docstring).
    Forward only.
    """
    return _RMS_NORM(x, weight, eps, numerics)


def rms_norm_into(
    out: torch.Tensor,
    x: torch.Tensor,
    weight: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    *,
    numerics: str = "torch",
    _config=None,
) -> torch.Tensor:
    """:func:`rms_norm` written into ``out`` (shape of x, the output dtype of ``numerics``); returns ``out``.

    ``_config`` overrides the launch knobs (a :class:`NormLaunch` or ``(rows_per_program, num_warps)``).
    """
    return _RMS_NORM.into(out, (x, weight, eps, numerics), _config)
