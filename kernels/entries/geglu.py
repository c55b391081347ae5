"""Registry entries ``geglu`` and ``gelu_tanh``.

``geglu``: the shape is the OUTPUT ``[..., H]``; the input is ``x [..., 2H]`` with the gate in the first half
(the convention of the ROCm kernels guidance document the project started from; the baseline's byte counts use
this shape).  Eager is
``F.gelu(x[..., :H], approximate="tanh") * x[..., H:]``.  liger-kernel's ``LigerGELUMulFunction(a, b)`` computes
``gelu_tanh(a).to(b.dtype) * b`` (the same rounding points), so with ``a, b`` = the two halves it is the same
operator; it makes the halves contiguous first (that copy is part of what it costs).

``gelu_tanh``: ``F.gelu(x, approximate="tanh")`` on x of the given shape (LTX's FF hidden is [2, 1320, 8192]).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from kernels.entries.common import (
    liger_unavailable,
    numel,
    randn,
    standard_impls,
    triton_with_out,
    upcast,
)
from kernels.geglu import GEGLU_LAUNCH, GELU_LAUNCH, elementwise_tune, geglu, geglu_into, gelu_tanh, gelu_tanh_into
from kernels.metadata.geglu import GEGLU, GELU_TANH
from kernels.registry import Contract, Impl, KernelEntry


def _gelu_tanh64(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _check_positive(name: str, shape: Sequence[int], layout: str) -> None:
    if len(shape) < 1 or any(not isinstance(s, int) or s < 1 for s in shape):
        raise ValueError(f"{name} expects a shape {layout} of positive ints; got {list(shape)}")


# --------------------------------------------------------------------------------------------------------------
# geglu


def check_geglu_shape(shape: Sequence[int]) -> None:
    _check_positive("geglu", shape, "[..., H] (the output; the input is [..., 2H])")


def make_geglu_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    return {"x": randn((*shape[:-1], 2 * shape[-1]), dtype, device, gen, scale=2.0)}


def geglu_reference(inputs: dict) -> torch.Tensor:
    x = upcast(inputs)["x"]
    half = x.shape[-1] // 2
    return _gelu_tanh64(x[..., :half]) * x[..., half:]


def eager_geglu(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return F.gelu(x[..., :half], approximate="tanh") * x[..., half:]


triton_geglu = triton_with_out(geglu, geglu_into)


def _make_liger_geglu():
    from liger_kernel.ops.geglu import LigerGELUMulFunction

    def run(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return LigerGELUMulFunction.apply(x[..., :half], x[..., half:])

    return run


def alloc_geglu_out(inputs: dict) -> torch.Tensor:
    x = inputs["x"]
    return torch.empty((*x.shape[:-1], x.shape[-1] // 2), dtype=x.dtype, device=x.device)


def geglu_bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    return 3 * numel(shape) * dtype.itemsize  # x [..., 2H] read, out [..., H] written


def geglu_flops(shape: Sequence[int]) -> int:
    return 10 * numel(shape)  # x^3 (2), fma, scale, exp, add, divide, * value: about 10 per output


# --------------------------------------------------------------------------------------------------------------
# gelu_tanh


def check_gelu_shape(shape: Sequence[int]) -> None:
    _check_positive("gelu_tanh", shape, "[...]")


def make_gelu_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    return {"x": randn(shape, dtype, device, gen, scale=2.0)}


def gelu_reference(inputs: dict) -> torch.Tensor:
    return _gelu_tanh64(upcast(inputs)["x"])


def eager_gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


triton_gelu = triton_with_out(gelu_tanh, gelu_tanh_into)


def alloc_gelu_out(inputs: dict) -> torch.Tensor:
    return torch.empty_like(inputs["x"])


def gelu_bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    return 2 * numel(shape) * dtype.itemsize


def gelu_flops(shape: Sequence[int]) -> int:
    return 9 * numel(shape)


ENTRIES = [
    KernelEntry(
        **GEGLU.entry_fields(),
        description="GEGLU (tanh GELU of the first half times the second half); shape = output [..., H]",
        check_shape=check_geglu_shape,
        make_inputs=make_geglu_inputs,
        reference=geglu_reference,
        alloc_out=alloc_geglu_out,
        impls={
            **standard_impls(
                triton_geglu, "kernels.geglu", eager_geglu, "F.gelu(x[..., :H], approximate='tanh') * x[..., H:]"
            ),
            "liger": Impl(
                "liger",
                _make_liger_geglu,
                liger_unavailable,
                description="liger_kernel LigerGELUMulFunction on the two halves",
            ),
        },
        bytes_moved=geglu_bytes_moved,
        flops=geglu_flops,
        default_impls=GEGLU.impls,
        function=geglu,
        contract=Contract(small_shape=(2, 12, 64), launch_shapes=((1, 16, 256), (1, 16, 1024))),
        launch_table=GEGLU_LAUNCH,
        tune=elementwise_tune(triton_geglu, gated=True),
        not_injected=(
            "LTX-Video, SD3 and FLUX have no GEGLU feed-forward, and transformers' gated MLPs compute "
            "gate and up in two projections rounding after each op, which geglu (one [..., 2H] input, "
            "one rounding) does not reproduce"
        ),
    ),
    KernelEntry(
        **GELU_TANH.entry_fields(),
        description="GELU, tanh approximation (F.gelu(x, approximate='tanh')); LTX/SD3/FLUX feed-forward",
        check_shape=check_gelu_shape,
        make_inputs=make_gelu_inputs,
        reference=gelu_reference,
        alloc_out=alloc_gelu_out,
        impls={
            **standard_impls(triton_gelu, "kernels.gelu_tanh", eager_gelu, "F.gelu(x, approximate='tanh')"),
        },
        bytes_moved=gelu_bytes_moved,
        flops=gelu_flops,
        default_impls=GELU_TANH.impls,
        function=gelu_tanh,
        contract=Contract(small_shape=(2, 12, 64), launch_shapes=((1, 16, 256), (1, 16, 1024))),
        launch_table=GELU_LAUNCH,
        tune=elementwise_tune(triton_gelu, gated=False),
        not_injected=(
            "GELU-tanh is one PyTorch kernel already; a standalone Triton GELU saves no memory traffic in "
            "these models (the gain needs a GEMM epilogue: the linear_gelu rewrite), so no module is "
            "replaced by it"
        ),
    ),
]
