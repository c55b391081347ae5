"""Test-only: make one implementation return a wrong result (its output scaled by 1 + ERROR), for the tests that
check every surface marks an incorrect implementation.  Never part of the product: loaded only as a plugin,

    KERNELFLEET_PLUGINS=tests.support.wrong_kernel KERNELFLEET_WRONG=rmsnorm:triton:0.3 python -m orchestrator ...

``KERNELFLEET_WRONG`` is ``KERNEL:IMPL:ERROR[,...]``.  The implementation keeps its name and its speed; with
``out=`` it writes the wrong values there too.  The module adds no kernel of its own.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import torch

from kernels.registry import Impl
from tests.support.slow_kernel import _entry

ENV = "KERNELFLEET_WRONG"
ENTRIES: list = []  # it changes an existing entry, it adds none


class Wrong:
    """``fn`` whose output (or every output) is scaled by ``1 + error``."""

    def __init__(self, fn: Callable[..., Any], error: float):
        self.fn, self.error = fn, error

    def __call__(self, **kwargs):
        out = self.fn(**kwargs)
        for t in out if isinstance(out, tuple) else (out,):
            if isinstance(t, torch.Tensor):
                t.mul_(1.0 + self.error)
        return out


def apply(text: str) -> list[str]:
    done = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        kernel, impl_name, error = item.split(":")
        entry = _entry(kernel)
        impl = entry.impls[impl_name]
        entry.impls[impl_name] = Impl(
            impl.name,
            lambda impl=impl, error=float(error): Wrong(impl.make(), error),
            impl.unavailable,
            impl.accepts_out,
            f"{impl.description} (planted wrong by {error})",
        )
        done.append(item)
    return done


WRONG = apply(os.environ.get(ENV, ""))
