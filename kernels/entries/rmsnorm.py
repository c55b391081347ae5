"""Registry entry ``rmsnorm``: RMSNorm with a weight over the last dimension of ``[..., D]``.

The eager baseline is diffusers' ``RMSNorm`` forward (fp32 statistics, ``x * rsqrt`` in fp32, cast to the weight's
dtype, then ``* weight``), so the Triton implementation runs with ``numerics="diffusers"``.
"""

from typing import Sequence

import torch
import torch.nn.functional as F

from kernels.entries.common import (
    ROW_CONTRACT,
    liger_unavailable,
    numel,
    randn,
    standard_impls,
    triton_with_out,
    upcast,
)
from kernels.metadata.rmsnorm import RMSNORM
from kernels.registry import Impl, KernelEntry
from kernels.rmsnorm import LAUNCH, rms_norm, rms_norm_into, rms_norm_out_dtype
from kernels.rows import row_tune

NUMERICS = "diffusers"


def check_shape(shape: Sequence[int]) -> None:
    if len(shape) < 1 or any(not isinstance(s, int) or s < 1 for s in shape):
        raise ValueError(
            f"rmsnorm expects a shape [..., D] of positive ints (the last dimension is normalised); got {list(shape)}"
        )


def make_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    return {
        "x": randn(shape, dtype, device, gen),
        "weight": randn((shape[-1],), dtype, device, gen, scale=0.1, offset=1.0),
        "eps": 1e-6,
    }


def reference(inputs: dict) -> torch.Tensor:
    up = upcast(inputs)
    x = up["x"]
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + up["eps"]) * up["weight"]


def alloc_out(inputs: dict) -> torch.Tensor:
    x, w = inputs["x"], inputs["weight"]
    return torch.empty(x.shape, dtype=rms_norm_out_dtype(x.dtype, w.dtype, NUMERICS), device=x.device)


def eager(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """diffusers ``RMSNorm.forward`` with a weight (``models/normalization.py``), as plain torch ops."""
    variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    hidden_states = x * torch.rsqrt(variance + eps)
    if weight.dtype in (torch.float16, torch.bfloat16):
        hidden_states = hidden_states.to(weight.dtype)
    return hidden_states * weight


triton_rms_norm = triton_with_out(rms_norm, rms_norm_into, numerics=NUMERICS)


def functional_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def _make_liger():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    def run(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return LigerRMSNormFunction.apply(x, weight, eps)

    return run


def bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    return (2 * numel(shape) + shape[-1]) * dtype.itemsize  # x read, out written, weight read


def flops(shape: Sequence[int]) -> int:
    return 4 * numel(shape)  # square + sum, * rstd, * weight


ENTRIES = [
    KernelEntry(
        **RMSNORM.entry_fields(),
        description="RMSNorm with weight over the last dim (diffusers RMSNorm numerics; eps 1e-6)",
        check_shape=check_shape,
        make_inputs=make_inputs,
        reference=reference,
        alloc_out=alloc_out,
        impls={
            **standard_impls(
                triton_rms_norm,
                "kernels.rms_norm(numerics='diffusers')",
                eager,
                "diffusers RMSNorm forward (fp32 upcast composite)",
            ),
            "F.rms_norm": Impl(
                "F.rms_norm",
                lambda: functional_rms_norm,
                description="torch.nn.functional.rms_norm (torch.nn.RMSNorm numerics)",
            ),
            "liger": Impl(
                "liger", _make_liger, liger_unavailable, description="liger_kernel LigerRMSNormFunction (llama casting)"
            ),
        },
        bytes_moved=bytes_moved,
        flops=flops,
        default_impls=RMSNORM.impls,
        function=rms_norm,
        contract=ROW_CONTRACT,
        launch_table=LAUNCH,
        tune=row_tune(triton_rms_norm, LAUNCH),
    ),
]
