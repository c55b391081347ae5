"""How a public kernel function launches its kernel: through its torch op (traced, or whenever the op must be seen)
or straight to the kernel in plain eager code, and the small helpers every wrapper's launch shares.

Where the rest lives: the per-architecture launch table in :mod:`kernels.arch`, the argument checks in
:mod:`kernels.checks`, the direct launcher in :mod:`kernels.fast_launch` and the replay of an eager call's launches
in :mod:`kernels.launch_plans`.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

# The launch table and the interpreter check stay importable from here, where they lived before kernels.arch.
from kernels.arch import (  # noqa: F401
    ArchLaunch,
    arch_launch,
    compile_target,
    device_arch,
    for_arch,
    interpreting,
    row_num_warps,
)
from kernels.fast_launch import PLAIN_TENSORS, direct_launcher


def no_backward(op_name: str):
    """A setup_context/backward pair for torch.library ops that are inference-only."""

    def backward(ctx, *grads):
        raise RuntimeError(f"{op_name} is forward-only (inference); backward is not implemented")

    def setup_context(ctx, inputs, output):
        return None

    return backward, setup_context


def eager_direct(*tensors: torch.Tensor | None) -> bool:
    """Whether a public kernel function may launch its kernel directly instead of calling its torch op.

    The op's dispatch costs tens of microseconds of host time per call, which is the whole runtime of a small
    kernel.  A direct launch computes the same thing, so it is taken in plain eager calls; the op is used while
    torch.compile traces (so it sees the op), for tensor subclasses and fake tensors, and when autograd has to
    record the op (so that backward raises its forward-only error).
    """
    if torch.compiler.is_compiling() or torch.jit.is_tracing() or _get_current_dispatch_mode() is not None:
        return False  # traced (torch.compile, jit.trace, make_fx, export, fake tensors): the op must be seen
    grad = torch.is_grad_enabled()
    for t in tensors:
        if t is not None and (type(t) not in PLAIN_TENSORS or (grad and t.requires_grad)):
            return False
    return True


def launcher(kernel, traced: bool):
    """``wrap_triton(kernel)`` inside an op body (so tracing sees the launch); the kernel itself for direct eager
    launches, where wrap_triton's higher-order-op dispatch would cost far more than the kernel at small sizes."""
    return torch.library.wrap_triton(kernel) if traced else direct_launcher(kernel)


def unit_last(t: torch.Tensor | None) -> torch.Tensor | None:
    """``t`` itself when its last dim is unit-stride (what the kernels address), else a contiguous copy."""
    return t if t is None or t.stride(-1) == 1 else t.contiguous()


def out_like(t: torch.Tensor) -> torch.Tensor:
    """An output for ``t``: laid out like ``t`` where its last dim is unit-stride, else contiguous (as for the
    contiguous copy that :func:`unit_last` makes)."""
    return torch.empty_like(t) if t.stride(-1) == 1 else torch.empty(t.shape, dtype=t.dtype, device=t.device)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): ``triton.next_power_of_2`` without its per-call cost
    (a @jit function called from Python); for plain ints only."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def cdiv(a, b):
    """Ceiling division for ints and SymInts (``triton.cdiv`` without its per-call cost)."""
    return (a + b - 1) // b
