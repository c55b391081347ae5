"""What an injected model does when autograd wants a gradient through one of its kernels.

The kernels are forward-only.  Every place where injected code would call one (a kernel, the fused q/k/v GEMM, the
GELU-epilogue GEMM) first asks, with autograd recording (``torch.is_grad_enabled()``), whether a tensor it would
hand the kernel (an input or a weight) requires grad.  If one does, that call takes the model's own PyTorch code
instead, so training, gradient checkpointing and ``retain_grad`` work on an injected model; with
``inject(model, grad="error")`` it raises :class:`GradNotSupported` instead, in one line naming the module.  Under
``torch.no_grad()``/``torch.inference_mode()`` the only cost is the one call of :data:`grad_enabled` (a C function,
no Python frame): the call sites read

    if kernel_ok(...) and not (grad_enabled() and stock_for_grad(module, "kernel", x, weight)):
        ...the kernel...
    else:
        ...the model's own code...

``benchmarks/grad_check_overhead.py`` measures that check per call.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn as nn

MODES = ("fallback", "error")
DEFAULT_MODE = "fallback"

# torch.is_grad_enabled itself (a builtin): False under no_grad and inference_mode
grad_enabled = torch.is_grad_enabled


class GradNotSupported(RuntimeError):
    """An injected kernel was asked for a gradient by a model injected with ``grad="error"``."""


_ERROR_PATHS: weakref.WeakKeyDictionary[nn.Module, str] = weakref.WeakKeyDictionary()  # module -> its path
_live_errors = 0  # injections with grad="error" not yet undone; while 0, a fallback never looks a module up


def check_mode(grad: object) -> str:
    """``grad`` if it is one of :data:`MODES`, else ValueError naming them."""
    if not isinstance(grad, str) or grad not in MODES:
        raise ValueError(f"grad={grad!r} is not supported; allowed: {', '.join(map(repr, MODES))}")
    return grad


def refuse_grad(paths: dict[nn.Module, str]):
    """Make the modules of one injection (module -> path) raise instead of falling back; returns the undo."""
    global _live_errors
    _ERROR_PATHS.update(paths)
    _live_errors += 1

    def undo() -> None:
        global _live_errors
        for m in paths:
            _ERROR_PATHS.pop(m, None)
        _live_errors -= 1

    return undo


def refusing() -> bool:
    """Whether some live injection was made with ``grad="error"`` (then :func:`stock_for_grad` needs the module)."""
    return _live_errors > 0


def stock_for_grad(module: nn.Module | None, kernel: str, *tensors: torch.Tensor | None) -> bool:
    """With autograd recording (the caller checked :data:`grad_enabled`): whether one of ``tensors`` requires grad,
    so that this call of ``kernel`` must take the model's own code.  For a module injected with ``grad="error"``
    it raises :class:`GradNotSupported` instead."""
    for t in tensors:
        if t is not None and t.requires_grad:
            if _live_errors and module is not None:
                path = _ERROR_PATHS.get(module)
                if path is not None:
                    raise GradNotSupported(
                        f"{path} ({type(module).__name__}): kernelfleet's {kernel} was asked for a gradient (autograd "
                        f"recording, a tensor that requires grad) and the model was injected with grad='error'; use "
                        f"grad='fallback' (the default) to compute such calls with the model's own code, or call it "
                        f"under torch.no_grad()/torch.inference_mode()"
                    )
            return True
    return False


def wants_grad(module: nn.Module, tensors) -> bool:
    """Whether autograd records and one of ``tensors`` or of ``module``'s parameters requires grad (for wrappers
    of a whole module's call, :mod:`kernels.inject.graphs`)."""
    if not grad_enabled():
        return False
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors) or any(
        p.requires_grad for p in module.parameters()
    )
