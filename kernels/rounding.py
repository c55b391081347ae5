"""Rounding an fp32 value to a kernel's output dtype, the same on a GPU and under the Triton interpreter.

On a GPU, ``x.to(tl.bfloat16)`` rounds to nearest even (what torch does).  The Triton interpreter (CPU,
TRITON_INTERPRET=1, triton 3.x) truncates fp32 -> bf16 instead, and its explicit "rtne" mode rounds ties away
from zero; fp16 goes through numpy and is correct (bf16 subnormals, below 1.2e-38, still flush to zero there).  Kernels that must be bit-exact with torch call
:func:`round_to` for every rounding; under the interpreter it rounds bf16 to nearest even with integer bit
arithmetic, on a GPU it is the plain cast.  The choice is made when this module is imported, like the choice
between compiling and interpreting that ``triton.jit`` makes.
"""
from __future__ import annotations

import triton
import triton.language as tl

from kernels.launch import interpreting

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
