"""Test-only: slow one implementation down by a set fraction of its own time, for the A/A test of the regression
rule (benchmarks/aa_check.py).  Never part of the product: it is loaded only as a plugin,

    KERNELFLEET_PLUGINS=tests.support.slow_kernel KERNELFLEET_SLOW=rmsnorm:triton:0.10 python -m workers run ...

``KERNELFLEET_SLOW`` is ``KERNEL:IMPL:FRACTION[,KERNEL:IMPL:FRACTION...]``.  The implementation keeps its name,
its output and its correctness; each call then does extra work that lasts FRACTION of the call's own time, measured
once per input shape on the first call: on a GPU a ``torch.cuda._sleep`` spin on the same stream (so event timing,
graph replay and the profiler's kernel time all see it), on a CPU a busy wait.  The module adds no kernel of its own.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable

import torch

from kernels import registry
from kernels.registry import Impl

ENV = "KERNELFLEET_SLOW"
ENTRIES: list = []  # it changes an existing entry, it adds none
CALIBRATION_CALLS = 20


def parse(text: str) -> list[tuple[str, str, float]]:
    out = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        parts = item.split(":")
        try:
            kernel, impl, fraction = parts[0], parts[1], float(parts[2])
            if len(parts) != 3 or not 0 < fraction < 10:
                raise ValueError
        except (IndexError, ValueError):
            raise ValueError(f"{ENV}={text!r}: expected KERNEL:IMPL:FRACTION, e.g. rmsnorm:triton:0.10") from None
        out.append((kernel, impl, fraction))
    return out


def _device_of(kwargs: dict[str, Any]) -> torch.device:
    for v in kwargs.values():
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device("cpu")


def _time_per_call(fn: Callable[[], Any], device: torch.device) -> float:
    """Seconds per call (median of a few)."""
    fn()
    samples = []
    for _ in range(CALIBRATION_CALLS):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e-3)
        else:
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


class Slowed:
    """``fn`` plus extra work lasting ``fraction`` of its own time per call."""

    def __init__(self, fn: Callable[..., Any], fraction: float):
        self.fn, self.fraction = fn, fraction
        self.extra: dict[tuple, float] = {}  # input shapes -> extra seconds (CPU) or spin cycles (GPU)
        self.base_s: dict[tuple, float] = {}

    def _calibrate(self, key: tuple, kwargs: dict[str, Any]) -> None:
        device = _device_of(kwargs)
        base = _time_per_call(lambda: self.fn(**kwargs), device)
        self.base_s[key] = base
        if device.type == "cuda":
            # a spin kernel costs a fixed launch time plus its cycles: the slope from two lengths, then the cycles
            # that add the wanted time on top of that fixed cost (at least one: a call whose wanted extra is under
            # one launch, a few µs, is slowed by more than ``fraction``)
            short, probe = 1_000, 1_000_000
            t_short = _time_per_call(lambda: torch.cuda._sleep(short), device)
            per_cycle = (_time_per_call(lambda: torch.cuda._sleep(probe), device) - t_short) / (probe - short)
            fixed = max(t_short - short * per_cycle, 0.0)
            self.extra[key] = max(int((base * self.fraction - fixed) / per_cycle), 1)
        else:
            self.extra[key] = base * self.fraction

    def __call__(self, **kwargs):
        key = tuple(
            (k, tuple(v.shape), v.device.type) for k, v in sorted(kwargs.items()) if isinstance(v, torch.Tensor)
        )
        if key not in self.extra:
            self._calibrate(key, kwargs)
        out = self.fn(**kwargs)
        extra = self.extra[key]
        if isinstance(extra, int):
            torch.cuda._sleep(extra)
        else:
            until = time.perf_counter() + extra
            while time.perf_counter() < until:
                pass
        return out


def _slowed_impl(impl: Impl, fraction: float) -> Impl:
    return Impl(
        impl.name,
        lambda: Slowed(impl.make(), fraction),
        impl.unavailable,
        impl.accepts_out,
        f"{impl.description} (slowed by {fraction:.0%} for the A/A test)",
    )


def apply(text: str) -> list[str]:
    """Replace each named implementation with its slowed form; returns what was slowed."""
    done = []
    for kernel, impl_name, fraction in parse(text):
        entry = _entry(kernel)
        if impl_name not in entry.impls:
            raise ValueError(
                f"{ENV}: kernel {kernel!r} has no implementation {impl_name!r}; it has {', '.join(entry.impls)}"
            )
        entry.impls[impl_name] = _slowed_impl(entry.impls[impl_name], fraction)
        done.append(f"{kernel}:{impl_name}:{fraction:g}")
    return done


def _entry(kernel: str):
    """The registry's entry object (plugins load after the built-in kernels, so those are complete here)."""
    entry = registry.builtin().get(kernel)
    if entry is None:
        raise ValueError(f"{ENV}: unknown kernel {kernel!r}")
    return entry


SLOWED = apply(os.environ.get(ENV, ""))
