"""Rounding an fp32 value to a kernel's output dtype, the same on a GPU and under the Triton interpreter.

On a GPU, ``x.to(tl.bfloat16)`` rounds to nearest even (what torch does).  The Triton interpreter (CPU,
TRITON_INTERPRET=1, triton 3.x) truncates fp32 -> bf16 instead, and its explicit "rtne" mode rounds ties away
from zero; fp16 goes through numpy and is correct (bf16 subnormals, below 1.2e-38, still flush to zero there).
Kernels that must be bit-exact with torch call
:func:`round_to` for every rounding; under the interpreter it rounds bf16 to nearest even with integer bit
arithmetic, on a GPU it is the plain cast.  The choice is made when this module is imported, like the choice
between compiling and interpreting that ``triton.jit`` makes.

Also here: rounding an fp32 intermediate to bf16/fp16 and back where eager code stores it (:func:`round_trip`,
:func:`cast_trip`, :func:`round_before_add`, by the codes of :func:`round_code`), so that a fused kernel rounds
where the eager chain it replaces rounds, and the modulate ``* (1 + scale) + shift`` the modulating row kernels
(:mod:`kernels.adaln`, :mod:`kernels.residual_norm`) round that way (:func:`modulate`).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.arch import interpreting

EMULATE_BF16_RTNE = tl.constexpr(interpreting())


@triton.jit
def round_to(x, dtype: tl.constexpr):
    """fp32 ``x`` rounded to nearest even in ``dtype`` (returned in ``dtype``)."""
    if EMULATE_BF16_RTNE:
        if dtype == tl.bfloat16:
            bits = x.to(tl.uint32, bitcast=True)
            rounded = (bits + (((bits >> 16) & 1) + 0x7FFF)) & 0xFFFF0000
            exact = tl.where(x != x, x, rounded.to(tl.float32, bitcast=True))
            return exact.to(dtype)
        else:
            return x.to(dtype)
    else:
        return x.to(dtype)


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


def fusion_options(traced: bool) -> dict:
    """Launch keywords for the row kernels that round before an add (``INT_ROUND``): a direct launch turns fp
    fusion off and rounds with casts; a traced launch (Inductor compiles it with Triton's default, fusion on)
    rounds in integer arithmetic, which fusion cannot contract."""
    return {"INT_ROUND": True} if traced else {"INT_ROUND": False, "enable_fp_fusion": False}


@triton.jit
def modulate(normed, scale, shift, CODE: tl.constexpr, INT_ROUND: tl.constexpr):
    """``normed * (1 + scale) + shift`` rounding after each of the first two eager ops (``CODE``: the dtype's
    code); the caller's store rounds the sum (:func:`kernels.rounding.round_to`).  The product feeds an add: with
    fp fusion on (any launch traced by torch.compile: Inductor compiles with Triton's default) a cast round trip
    there would be contracted away, so ``INT_ROUND`` rounds it in integer arithmetic; direct launches turn fp
    fusion off and use the cheaper cast round trip."""
    one_plus_scale = cast_trip(1.0 + scale, CODE)
    return round_before_add(normed * one_plus_scale, CODE, INT_ROUND) + shift
