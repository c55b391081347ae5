"""Where the time of one LTX-Video denoising step goes, per mode: a ``torch.profiler`` capture of one short
pipeline call, reduced to device time per step by kernel class.

The e2e job (``params.profile_steps`` > 0) calls :func:`profile_call` inside each mode, after the timed calls.  The
capture runs ``profile_steps`` denoising steps (the pipeline's own set-up amortised over them) and reports, per
step:

* ``gpu_busy_ms``: the union of the device kernels' intervals (overlap counted once) -- the device-side work; set
  against the unprofiled ``ms_per_step`` it says whether the step is bound by the device or by the host (the rest
  of the step the device sits idle, waiting for launches);
* ``kernels``: device kernel launches per step;
* ``classes``: ms and launches per step for ``gemm`` (cuBLAS/CUTLASS matrix products), ``attention`` (SDPA /
  flash kernels), ``kernelfleet`` (this project's Triton kernels, by their ``@triton.jit`` names), ``inductor``
  (torch.compile's generated Triton kernels), ``elementwise`` (PyTorch's own elementwise, reduction, softmax and
  norm kernels), ``other``;
* ``top``: the longest kernels by total time;
* ``ours``: this project's kernels by the module that defines them, each with the registry kernels of that module,
  ms and launches per step: what the Amdahl reconciliation (orchestrator.stats.e2e_amdahl) weighs the kernels'
  micro speed-ups by.

On the CPU there are no device kernels: the capture then lists host ops by self time and ``gpu_busy_ms`` is absent.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Collection, Mapping
from typing import Any, Callable, Iterable

import torch

from workers.device.parsers import torch_profiler

TOP_ROWS = 15
_GEMM = re.compile(r"gemm|cutlass|xmma|nvjet|cublas|wgmma|sm90_.*(tn|nt|nn|tt)|matmul", re.I)
_ATTENTION = re.compile(r"flash|fmha|attention|attn|sdpa|mha_", re.I)
_PYTORCH = re.compile(r"at::native|elementwise|reduce_kernel|softmax|norm_kernel|CatArrayBatched", re.I)


def kernelfleet_kernel_modules() -> dict[str, str]:
    """The ``@triton.jit`` kernels of the ``kernels`` package by name (as a profiler shows them), each with the
    module that defines it (``kernels.rmsnorm``)."""
    import importlib
    import pkgutil

    import kernels

    names: dict[str, str] = {}
    for info in pkgutil.iter_modules(kernels.__path__):
        if info.ispkg:
            continue
        mod = importlib.import_module(f"kernels.{info.name}")
        for value in vars(mod).values():
            fn = getattr(value, "fn", None)  # a @triton.jit object wraps the Python function as .fn
            if callable(fn) and type(value).__name__ in ("JITFunction", "InterpretedFunction"):
                names.setdefault(fn.__name__, fn.__module__)
    return names


def kernelfleet_kernel_names() -> frozenset[str]:
    """The names of the ``@triton.jit`` kernels in the ``kernels`` package (as a profiler shows them)."""
    return frozenset(kernelfleet_kernel_modules())


def registry_kernels_by_module() -> dict[str, list[str]]:
    """The registry's kernels by the module of their public function (``kernels.adaln``: adaln, adaln_layer_norm)."""
    from kernels import registry

    out: dict[str, list[str]] = {}
    for name in registry.kernel_names():
        fn = registry.get(name).function
        if fn is not None:
            out.setdefault(fn.__module__, []).append(name)
    return out


def ours_by_module(
    kernels: Iterable, steps: int, modules: Mapping[str, str], registry_of: Mapping[str, list[str]]
) -> list[dict[str, Any]]:
    """Our kernels' device time and launches per step, by defining module (``kernels``: the trace's device kernels;
    ``modules``: jit name -> module; ``registry_of``: module -> registry kernel names)."""
    by: dict[str, dict[str, Any]] = {}
    for k in kernels:
        mod = modules.get(k.name)
        if mod is None:
            continue
        row = by.setdefault(mod, {"module": mod, "kernels": list(registry_of.get(mod, [])), "ms": 0.0, "launches": 0.0})
        row["ms"] += k.dur_us / 1e3 / steps
        row["launches"] += 1.0 / steps
    return [
        {**r, "ms": round(r["ms"], 5), "launches": round(r["launches"], 2)}
        for r in sorted(by.values(), key=lambda r: -r["ms"])
    ]


def kernel_class(name: str, ours: Collection[str]) -> str:
    """The class of a device kernel by its name: gemm, attention, kernelfleet, inductor, elementwise or other."""
    if name in ours:
        return "kernelfleet"
    if name.startswith("triton_"):  # Inductor names its kernels triton_{poi,red,per,tem}_...
        return "inductor"
    if _ATTENTION.search(name):  # before gemm: cuDNN's flash attention kernels are named ..._wgmma_...
        return "attention"
    if _GEMM.search(name):
        return "gemm"
    if _PYTORCH.search(name):
        return "elementwise"
    return "other"


def busy_ms(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length (ms) of the union of ``(start_us, duration_us)`` intervals."""
    total = 0.0
    end = None
    start = None
    for ts, dur in sorted(intervals):
        if end is None or ts > end:
            if end is not None:
                total += end - start
            start, end = ts, ts + dur
        else:
            end = max(end, ts + dur)
    if end is not None:
        total += end - start
    return total / 1e3


def summarize(
    trace: torch_profiler.ChromeTrace,
    steps: int,
    ours: Mapping[str, str] | frozenset[str],
    registry_of: Mapping[str, list[str]] | None = None,
) -> dict[str, Any]:
    """The per-step breakdown of one capture (see the module docstring); ``ours``: our kernels' names (with their
    modules, for ``ours`` by module)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    kernels = trace.kernels()
    if not kernels:
        rows = torch_profiler.cpu_op_rows(trace)
        return {
            "steps": steps,
            "source": "host ops (no device kernels)",
            "top": [_row(r, steps, None) for r in rows[:TOP_ROWS]],
        }
    classes: dict[str, dict[str, float]] = {}
    for k in kernels:
        c = classes.setdefault(kernel_class(k.name, ours), {"ms": 0.0, "kernels": 0.0})
        c["ms"] += k.dur_us / 1e3 / steps
        c["kernels"] += 1.0 / steps
    rows = torch_profiler.kernel_rows(trace)
    return {
        "steps": steps,
        "source": "device kernels",
        "gpu_busy_ms": busy_ms((k.ts_us, k.dur_us) for k in kernels) / steps,
        "kernel_ms": sum(k.dur_us for k in kernels) / 1e3 / steps,
        "kernels": len(kernels) / steps,
        "classes": {
            name: {"ms": round(v["ms"], 4), "kernels": round(v["kernels"], 2)}
            for name, v in sorted(classes.items(), key=lambda kv: -kv[1]["ms"])
        },
        "top": [_row(r, steps, kernel_class(r.name, ours)) for r in rows[:TOP_ROWS]],
        "ours": ours_by_module(kernels, steps, ours, registry_of or {}) if isinstance(ours, Mapping) else [],
    }


def _row(r, steps: int, cls: str | None) -> dict[str, Any]:
    out = {
        "name": r.name[:160],
        "calls_per_step": round(r.calls / steps, 2),
        "ms_per_step": round(r.total_ns / 1e6 / steps, 4),
        "avg_us": round(r.avg_ns / 1e3, 2),
        "pct": round(r.pct, 2),
    }
    if cls is not None:
        out["class"] = cls
    return out


def profile_call(call: Callable[..., Any], steps: int, device: torch.device, deferred: bool = False) -> dict[str, Any]:
    """Run ``call()`` (one pipeline call of ``steps`` denoising steps) under torch.profiler; its breakdown.  With
    ``deferred`` the capture begins inside the call: ``call(start)``, which calls ``start()`` where its ``steps``
    steps begin (the decoder's decode steps, after its prefill)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    prof = profile(activities=activities)

    def start() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # what was issued before the window runs outside it
        prof.start()

    started = False
    try:
        if deferred:
            call(start)
        else:
            start()
            call()
        started = prof.profiler is not None
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    finally:
        if prof.profiler is not None:
            prof.stop()
    if not started:
        raise RuntimeError("the profiled call never began its profiled steps")
    fd, path = tempfile.mkstemp(suffix=".json", prefix="kf_e2e_trace_")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, "rb") as f:
            trace = torch_profiler.parse_chrome_trace(f.read())
    finally:
        os.unlink(path)
    return summarize(trace, steps, kernelfleet_kernel_modules(), registry_kernels_by_module())
