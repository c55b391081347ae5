"""RMSNorm over the last dimension, rounding where the module it replaces rounds.

Three modules compute "RMSNorm" and differ only in where they round (see reference notes, section 1.6):

* ``numerics="torch"``: ``torch.nn.RMSNorm`` / ``F.rms_norm``: ``x * rstd * w`` in fp32, one rounding to ``x.dtype``.
* ``numerics="diffusers"``: ``diffusers.models.normalization.RMSNorm``: ``x * rstd`` in fp32; with a bf16/fp16
  weight it is rounded to the weight's dtype *before* ``* w`` (which rounds again); an fp32 weight gives an fp32
  output; without a weight one rounding to ``x.dtype``.
* ``numerics="llama"``: transformers ``LlamaRMSNorm``: ``w * (x * rstd).to(x.dtype)``; the product rounds to
  the promoted dtype of weight and input.

This module also holds what the other norm-family kernels (``kernels.adaln``, ``kernels.residual_norm``) share:
the rounding to bf16/fp16 that survives compilation (:func:`round_trip`), the row geometry (any tensor viewed as
``[B, S, D]`` rows addressed through strides, so non-contiguous inputs need no copy), the launch knobs
(:func:`norm_launch_config`) and the direct-launch path (:func:`launcher`).
"""
import functools
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
import triton
import triton.language as tl

from kernels.launch import (LaunchPlans, arch_launch, cdiv, check_device, check_float, direct_launcher, eager_call,
                            eager_direct, next_pow2, no_backward, row_num_warps)
from kernels.rounding import round_to

NUMERICS = ("torch", "diffusers", "llama")

# Codes for the dtype a kernel rounds an intermediate to (constexpr, so each choice compiles its own kernel).
ROUND_NONE = 0
ROUND_BF16 = 1
ROUND_FP16 = 2


def round_code(dtype: torch.dtype) -> int:
    """The rounding code of ``dtype``: rounding an fp32 value to fp32 is no rounding."""
    if dtype == torch.bfloat16:
        return ROUND_BF16
    if dtype == torch.float16:
        return ROUND_FP16
    return ROUND_NONE


@triton.jit
def _round_bf16_bits(y):
    """fp32 -> nearest-even bf16, kept in fp32, in integer arithmetic (add 0x7FFF + the lowest kept bit, drop the
    low 16 bits; bf16 shares fp32's exponent range, so subnormals and overflow to inf come out right too)."""
    bits = y.to(tl.int32, bitcast=True)
    mag = bits & 0x7FFFFFFF
    rounded = ((mag + 0x7FFF + ((mag >> 16) & 1)) >> 16) << 16
    return tl.where(y != y, y, (rounded | (bits ^ mag)).to(tl.float32, bitcast=True))


@triton.jit
def _round_fp16_bits(y):
    """fp32 -> nearest-even fp16, kept in fp32, in integer arithmetic.

    fp16 keeps 10 mantissa bits down to 2**-14 (drop 13 of fp32's 23); below, its subnormals are multiples of
    2**-24 (drop 126 - exponent bits, taking the round bit from the mantissa with its implicit one); values under
    2**-25 go to zero (2**-25 itself ties to the even zero) and from 65520 up to inf.
    """
    bits = y.to(tl.int32, bitcast=True)
    mag = bits & 0x7FFFFFFF
    exp = mag >> 23
    drop = tl.minimum(tl.maximum(126 - exp, 13), 23)
    lsb = (((mag & 0x7FFFFF) | 0x800000) >> drop) & 1
    rounded = ((mag + ((1 << (drop - 1)) - 1) + lsb) >> drop) << drop
    smallest = tl.where((exp == 102) & ((mag & 0x7FFFFF) != 0), 0x33800000, 0)  # (2**-25, 2**-24) -> 2**-24
    rounded = tl.where(exp <= 102, smallest, rounded)
    rounded = tl.where(rounded >= 0x47800000, 0x7F800000, rounded)  # 65536 and up: inf
    return tl.where(y != y, y, (rounded | (bits ^ mag)).to(tl.float32, bitcast=True))


@triton.jit
def round_trip(y, CODE: tl.constexpr):
    """fp32 ``y`` rounded to bf16/fp16 (nearest even) and back, as storing an eager intermediate does.

    Integer arithmetic on the bits, not ``.to(bf16).to(fp32)``: with FMA contraction on (Triton's default on
    NVIDIA) a cast round trip between a multiply and an add is contracted away (measured on an H200: 30 % of
    ``round(a * b) + c`` results differed from eager), and the interpreter's fp32 -> bf16 cast truncates.
    Integer operations are never contracted, so this rounds where eager rounds on every backend.  The final
    conversion of a value rounded this way to bf16/fp16 is exact.
    """
    if CODE == 1:
        y = _round_bf16_bits(y)
    elif CODE == 2:
        y = _round_fp16_bits(y)
    return y


@triton.jit
def cast_trip(y, CODE: tl.constexpr):
    """fp32 ``y`` rounded to bf16/fp16 (nearest even) and back by two casts (:func:`round_to` under the
    interpreter).  About ten times fewer instructions than :func:`round_trip`, whose integer arithmetic made the
    row kernels ALU-bound on an H200 (half the copy bandwidth, docs/perf/kernels-h200.md); exact wherever the
    rounded value feeds only multiplies, reductions or a store, since fp fusion contracts only a multiply into an
    add.  A rounded product that feeds an add needs :func:`round_trip`."""
    if CODE == 1:
        y = round_to(y, tl.bfloat16).to(tl.float32)
    elif CODE == 2:
        y = round_to(y, tl.float16).to(tl.float32)
    return y


@triton.jit
def round_before_add(y, CODE: tl.constexpr, INT_ROUND: tl.constexpr):
    """fp32 ``y`` (a product eager rounds before it feeds an add) rounded as :func:`round_trip` does when
    ``INT_ROUND`` (a launch traced by torch.compile: Inductor compiles with fp fusion on, which would contract a cast
    round trip away), else as :func:`cast_trip` (a direct launch, fp fusion off; see :func:`fusion_options`)."""
    if INT_ROUND:
        y = round_trip(y, CODE)
    else:
        y = cast_trip(y, CODE)
    return y


@triton.jit
def row_offsets(pid, seq, ROWS: tl.constexpr):
    """The row indices a program owns and their (batch, token) coordinates in a ``[B, S, D]`` geometry.

    The division runs in int32 (rows < 2**31, checked by the wrappers: see :func:`check_row_count`); the
    coordinates are widened to int64 so that offsets into tensors of 2**31 elements and more do not overflow.
    """
    rows = pid * ROWS + tl.arange(0, ROWS)
    b = rows // seq
    s = rows - b * seq
    return rows, b.to(tl.int64), s.to(tl.int64)


@triton.jit
def row_ptrs(ptr, b, s, stride_b, stride_s, stride_d, cols):
    """Pointers to the ``[ROWS, BLOCK_D]`` block of a ``[B, S, D]`` tensor at rows (``b``, ``s``) (from
    :func:`row_offsets`) and columns ``cols``, through the tensor's strides."""
    return ptr + (b * stride_b + s * stride_s)[:, None] + cols[None, :] * stride_d


# ----------------------------------------------------------------------------------------------------------------
# Launch knobs
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormLaunch:
    """Per-launch knobs of the norm-family kernels: how many rows one program normalises, and its warps."""

    rows_per_program: int
    num_warps: int

    def __post_init__(self):
        for name in ("rows_per_program", "num_warps"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1 or (v & (v - 1)) != 0:
                raise ValueError(f"NormLaunch.{name} must be a power of two >= 1, got {v!r}")


# Elements one program should hold when rows are narrow: several narrow rows per program keep the loads wide.
_ELEMENTS_PER_PROGRAM = 2048
_MAX_ROWS_PER_PROGRAM = 32


@functools.lru_cache(maxsize=None)
def norm_launch_config(block_d: int, device: Optional[torch.device] = None, layer_norm: bool = False) -> NormLaunch:
    """Rows per program and num_warps for rows of padded width ``block_d`` (the one place to tune them);
    ``layer_norm``: for the LayerNorm variant, which has its own measured warps.

    It depends on the row width only, not on the number of rows, so that a dynamic row count stays symbolic
    under torch.compile.
    """
    rows = max(1, min(_MAX_ROWS_PER_PROGRAM, _ELEMENTS_PER_PROGRAM // block_d))
    table = arch_launch(device)
    measured = dict(table.layer_norm_warps if layer_norm else table.norm_warps).get(block_d) if rows == 1 else None
    return NormLaunch(rows, measured or row_num_warps(rows * block_d, device))


def resolve_config(config, block_d: int, device: torch.device, layer_norm: bool = False) -> NormLaunch:
    """``config`` (a private tuning override: NormLaunch, ``(rows, warps)`` or a dict) or the default."""
    if config is None:
        return norm_launch_config(block_d, device, layer_norm)
    if isinstance(config, NormLaunch):
        return config
    if isinstance(config, dict):
        return NormLaunch(**config)
    if isinstance(config, (tuple, list)) and len(config) == 2:
        return NormLaunch(int(config[0]), int(config[1]))
    raise TypeError(f"_config must be a NormLaunch, a (rows_per_program, num_warps) pair or a dict, got {config!r}")


# ----------------------------------------------------------------------------------------------------------------
# Row geometry: any [..., D] tensor as [B, S, D] rows
# ----------------------------------------------------------------------------------------------------------------
def rows_3d(t: torch.Tensor) -> torch.Tensor:
    """A ``[B, S, D]`` view of ``t`` (no copy where the strides allow one; a contiguous copy otherwise).

    1-D and 2-D tensors get leading unit dimensions; 3-D tensors are used as they are (any strides); more leading
    dimensions are merged into B (or into S) when their strides allow it.
    """
    if t.dim() == 1:
        return t.view(1, 1, t.shape[0])
    if t.dim() == 2:
        return t.unsqueeze(0)
    if t.dim() == 3:
        return t
    d = t.shape[-1]
    for shape in ((-1, t.shape[-2], d), (1, -1, d)):
        try:
            return t.view(shape)
        except RuntimeError:
            pass
    return t.contiguous().view(-1, t.shape[-2], d)


MAX_ROWS = 2**31 - 2**16  # rows are indexed in int32 inside the kernels


def check_row_count(x: torch.Tensor) -> None:
    rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
    if rows > MAX_ROWS:
        raise ValueError(f"x has {rows} rows (the product of its leading dimensions); at most {MAX_ROWS} supported")


def strides_3d(t: torch.Tensor) -> tuple[int, int, int]:
    """Strides of a ``[B, S, D]`` view, with 0 for a batch or token dimension of size 1 (so it broadcasts)."""
    (n_b, seq, _), (s_b, s_s, s_d) = t.shape, t.stride()
    return (0 if n_b == 1 else s_b, 0 if seq == 1 else s_s, s_d)


def check_eps(eps) -> None:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a float, got {type(eps).__name__}")
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite float >= 0, got {eps!r}")


def check_same_device(name: str, t: torch.Tensor, x: torch.Tensor) -> None:
    if t.device != x.device:
        raise ValueError(f"{name} is on {t.device} but x is on {x.device}; expected both on the same device")


def check_out(out, shape: Sequence[int], dtype: torch.dtype, device: torch.device, name: str = "out") -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {list(out.shape)}; expected {list(shape)}")
    if out.dtype != dtype:
        raise TypeError(f"{name} has dtype {out.dtype}; expected {dtype}")
    if out.device != device:
        raise ValueError(f"{name} is on {out.device}; expected {device}")


def out_rows_3d(out: torch.Tensor, shape3: Sequence[int]) -> torch.Tensor:
    try:
        return out.view(tuple(shape3))
    except RuntimeError:
        raise ValueError(
            f"out (shape {list(out.shape)}, strides {list(out.stride())}) cannot be viewed as rows "
            f"{list(shape3)}; pass a contiguous out") from None


# ----------------------------------------------------------------------------------------------------------------
# Launch path: through the op, or straight to the kernel in plain eager code (kernels.launch.eager_direct)
# ----------------------------------------------------------------------------------------------------------------
def fusion_options(traced: bool) -> dict:
    """Launch keywords for the row kernels that round before an add (``INT_ROUND``): a direct launch turns fp
    fusion off and rounds with casts; a traced launch (Inductor compiles it with Triton's default, fusion on)
    rounds in integer arithmetic, which fusion cannot contract."""
    return {"INT_ROUND": True} if traced else {"INT_ROUND": False, "enable_fp_fusion": False}


def launcher(kernel, traced: bool):
    """``wrap_triton(kernel)`` inside an op body (so tracing sees the launch); the kernel itself for direct eager
    launches, where wrap_triton's higher-order-op dispatch would cost far more than the kernel at small sizes."""
    return torch.library.wrap_triton(kernel) if traced else direct_launcher(kernel)


# ----------------------------------------------------------------------------------------------------------------
# The kernel
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _rms_norm_kernel(
    x_ptr, w_ptr, out_ptr,
    n_rows, seq, width,
    sx_b, sx_s, sx_d,
    so_b, so_s, so_d,
    sw,
    eps,
    HAS_WEIGHT: tl.constexpr,
    ROUND_NORMED: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    rows, b, s = row_offsets(tl.program_id(0), seq, ROWS)
    cols = tl.arange(0, BLOCK_D)
    col_ok = cols < width
    mask = (rows < n_rows)[:, None] & col_ok[None, :]

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


def _launch(out: torch.Tensor, x: torch.Tensor, weight: Optional[torch.Tensor], eps: float, numerics: str,
            config=None, traced: bool = True) -> torch.Tensor:
    if x.numel() == 0:
        return out
    x3 = rows_3d(x)
    out3 = out_rows_3d(out, x3.shape)
    n_b, seq, width = x3.shape
    n_rows = n_b * seq
    block_d = next_pow2(int(width))  # a compile-time block: the row width is specialised
    cfg = resolve_config(config, block_d, x.device)
    w_dtype = None if weight is None else weight.dtype
    grid = (cdiv(n_rows, cfg.rows_per_program),)
    launcher(_rms_norm_kernel, traced)[grid](
        x3, x3 if weight is None else weight, out3,
        n_rows, seq, width,
        *strides_3d(x3), *strides_3d(out3),
        0 if weight is None else weight.stride(0),
        eps,
        HAS_WEIGHT=weight is not None,
        ROUND_NORMED=_normed_round_code(x.dtype, w_dtype, numerics),
        ROWS=cfg.rows_per_program,
        BLOCK_D=block_d,
        num_warps=cfg.num_warps,
    )
    return out


def _new_out(x: torch.Tensor, weight: Optional[torch.Tensor], numerics: str) -> torch.Tensor:
    dtype = rms_norm_out_dtype(x.dtype, None if weight is None else weight.dtype, numerics)
    return torch.empty(x.shape, dtype=dtype, device=x.device)


@torch.library.triton_op("kernelfleet::rms_norm", mutates_args=())
def _rms_norm_op(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float, numerics: str) -> torch.Tensor:
    return _launch(_new_out(x, weight, numerics), x, weight, eps, numerics)


_backward, _setup_context = no_backward("kernelfleet::rms_norm")
torch.library.register_autograd("kernelfleet::rms_norm", _backward, setup_context=_setup_context)


_PLANS = LaunchPlans("rms_norm")  # eager calls' launches, per argument geometry


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6, *,
             numerics: str = "torch") -> torch.Tensor:
    """RMSNorm of ``x`` over its last dimension, times ``weight`` when given; rounding as ``numerics`` says.

    ``x``: ``[..., D]`` float32/bfloat16/float16, any strides; ``weight``: ``[D]`` or None; ``numerics``: one of
    ``"torch"``, ``"diffusers"``, ``"llama"`` (the module whose rounding is mirrored; see the module docstring).
    Forward only.
    """
    if eager_direct(x, weight):
        return eager_call(_PLANS, (x, weight, eps, numerics), lambda: _check_rms_args(x, weight, eps, numerics),
                          lambda: (_new_out(x, weight, numerics),),
                          lambda out: _launch(out, x, weight, float(eps), numerics, traced=False))[0]
    _check_rms_args(x, weight, eps, numerics)
    return torch.ops.kernelfleet.rms_norm(x, weight, float(eps), numerics)


def rms_norm_into(out: torch.Tensor, x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6,
                  *, numerics: str = "torch", _config=None) -> torch.Tensor:
    """:func:`rms_norm` written into ``out`` (shape of x, the output dtype of ``numerics``); returns ``out``.

    ``_config`` overrides the launch knobs (a :class:`NormLaunch` or ``(rows_per_program, num_warps)``).
    """
    _check_rms_args(x, weight, eps, numerics)
    check_out(out, x.shape, rms_norm_out_dtype(x.dtype, None if weight is None else weight.dtype, numerics),
              x.device)
    return _launch(out, x, weight, float(eps), numerics, _config, traced=False)
