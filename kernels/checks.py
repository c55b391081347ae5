"""The argument checks every kernel wrapper shares, each written once: tensors, devices, dtypes, eps, row counts
and an ``out`` argument."""

from __future__ import annotations

import math
from typing import Sequence

import torch

from kernels.arch import compiling_for, interpreting


def check_device(name: str, t: torch.Tensor) -> None:
    """A Triton kernel runs on a GPU tensor, or on a CPU tensor under the interpreter (TRITON_INTERPRET=1)."""
    if t.device.type == "cpu" and not interpreting() and compiling_for() is None:
        raise ValueError(
            f"{name} is a CPU tensor; Triton kernels need a GPU tensor, or TRITON_INTERPRET=1 to run on the CPU"
        )
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name} is on {t.device}; expected a CUDA/ROCm (torch 'cuda') or CPU tensor")


FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def check_float(name: str, t: torch.Tensor) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} has dtype {t.dtype}; expected one of float32, bfloat16, float16")


def check_same_device(name: str, t: torch.Tensor, x: torch.Tensor) -> None:
    if t.device != x.device:
        raise ValueError(f"{name} is on {t.device} but x is on {x.device}; expected both on the same device")


def check_eps(eps) -> None:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a float, got {type(eps).__name__}")
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite float >= 0, got {eps!r}")


MAX_ROWS = 2**31 - 2**16  # rows are indexed in int32 inside the kernels


def check_row_count(x: torch.Tensor) -> None:
    rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
    if rows > MAX_ROWS:
        raise ValueError(f"x has {rows} rows (the product of its leading dimensions); at most {MAX_ROWS} supported")


# The inputs of the row kernels that modulate [B, S, C] rows (kernels.adaln, kernels.residual_norm,
# kernels.gated_residual)
def check_rows_input(name: str, x) -> None:
    check_float(name, x)
    check_device(name, x)
    if x.dim() != 3:
        raise ValueError(f"{name} has shape {list(x.shape)}; expected 3 dimensions [B, S, C]")
    check_row_count(x)


def check_residual(residual, x: torch.Tensor) -> None:
    """``residual`` must be a float tensor of x's shape and dtype on x's device."""
    check_float("residual", residual)
    check_same_device("residual", residual, x)
    if residual.dtype != x.dtype:
        raise TypeError(f"residual has dtype {residual.dtype}; expected x's dtype {x.dtype}")
    if residual.shape != x.shape:
        raise ValueError(f"residual has shape {list(residual.shape)}; expected x's shape {list(x.shape)}")


def check_modulation(name: str, t, x: torch.Tensor) -> None:
    """``t`` (scale or shift) must be ``[B, 1, C]`` or ``[B, S, C]`` for x ``[B, S, C]``, in x's dtype."""
    check_float(name, t)
    check_same_device(name, t, x)
    n_b, seq, width = x.shape
    if t.dtype != x.dtype:
        raise TypeError(f"{name} has dtype {t.dtype}; expected x's dtype {x.dtype}")
    if t.dim() != 3 or t.shape[0] not in (1, n_b) or t.shape[1] not in (1, seq) or t.shape[2] != width:
        raise ValueError(
            f"{name} has shape {list(t.shape)}; expected [B, 1, C] = {[n_b, 1, width]} "
            f"or [B, S, C] = {[n_b, seq, width]}"
        )


def check_out(
    out, shape: Sequence[int], dtype: torch.dtype, device: torch.device, name: str = "out", unit_last: bool = False
) -> None:
    """``out`` (an output the caller passed) must be a tensor of ``shape``, ``dtype`` and ``device``; with
    ``unit_last``, unit-stride in its last dimension (what kernels that address rows directly need)."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {list(out.shape)}; expected {list(shape)}")
    if out.dtype != dtype:
        raise TypeError(f"{name} has dtype {out.dtype}; expected {dtype}")
    if out.device != device:
        raise ValueError(f"{name} is on {out.device}; expected {device}")
    if unit_last and out.numel() and out.stride(-1) != 1:
        raise ValueError(f"{name} must have a unit stride in its last dim; got strides {list(out.stride())}")
