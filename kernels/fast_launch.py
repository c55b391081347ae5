"""Direct launches of compiled Triton kernels for eager calls, with the compiled kernel kept per specialisation.

:class:`DirectLauncher` (one per ``@triton.jit`` kernel: :func:`direct_launcher`) skips ``JITFunction.run``'s
per-call work; while a public function's call is recorded (:mod:`kernels.launch_plans`), each launch it makes is
added to the recording so that the call can be replayed.
"""

from __future__ import annotations

import functools
import os
import threading

import torch

from kernels.arch import INTERPRETED, compiling_for

# Tensors a direct launch may take: plain tensors and module parameters (a weight is an nn.Parameter); any other
# subclass goes through the op so that its __torch_dispatch__/__torch_function__ sees the call.
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)

# Triton versions whose launch path the fast launcher was checked against (on an H200: tests/kernels/test_dispatch.py
# compares every kernel's fast launch with Triton's own).  Elsewhere every launch takes Triton's path.
FAST_LAUNCH_TRITON = ("3.6",)
FAST_LAUNCH = os.environ.get("KERNELFLEET_FAST_LAUNCH", "1") not in ("", "0")


def _fast_launch_supported() -> bool:
    try:
        import triton
        from triton import knobs  # noqa: F401  (3.4+)
    except Exception:
        return False
    return ".".join(triton.__version__.split(".")[:2]) in FAST_LAUNCH_TRITON


_FAST_SUPPORTED = _fast_launch_supported()
_I32_LO, _I32_HI = -(1 << 31), (1 << 31) - 1


def _specialise(args):
    """``(key, values)`` of a launch's runtime arguments in one pass.  The key holds what Triton specialises each
    argument on: a tensor's dtype and 16-byte alignment; an int's being 1, its divisibility by 16 and whether it
    fits int32 (one small int: bit 0, 1, 2); a float's being a float.  The values are what the launcher takes, a
    tensor as its device address (an int, which the launcher passes through as it is: a tensor would cost it a
    ``data_ptr()`` call and a driver query per pointer)."""
    key = []
    values = []
    for a in args:
        t = type(a)
        if t is int:
            key.append((a == 1) | ((a & 15 == 0) << 1) | ((not _I32_LO <= a <= _I32_HI) << 2))
            values.append(a)
        elif t in PLAIN_TENSORS or isinstance(a, torch.Tensor):
            ptr = a.data_ptr()
            key.append((a.dtype, not ptr & 15))
            values.append(ptr)
        elif t is float:
            key.append(float)
            values.append(a)
        elif a is None or t is bool:
            key.append(a)
            values.append(a)
        else:
            raise TypeError(f"fast launch: unsupported argument type {t.__name__}")
    return tuple(key), values


def _raw_launch(kernel):
    """The compiled kernel's C launch function and its leading arguments, where Triton's Python launcher would add
    nothing to them (no scratch memory to allocate, no tensor descriptors); else None."""
    run = kernel.run
    fn = getattr(run, "launch", None)
    if fn is None or getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1):
        return None
    if getattr(fn, "__name__", "") != "launch":  # wrapped (tensor descriptors): keep Triton's path
        return None
    return fn, (
        kernel.function,
        run.launch_cooperative_grid,
        run.launch_pdl,
        None,
        None,
        kernel.packed_metadata,
        None,
        None,
        None,
    )


class DirectLauncher:
    """``kernel[grid](*args, **constexprs_and_options)`` for eager calls, without ``JITFunction.run``'s per-call
    work (argument binding, cache-key hashing, launch metadata): its first launch of a specialisation goes through
    Triton (compiling if needed) and keeps the compiled kernel; later launches of that specialisation call the
    compiled kernel's C launch function directly, with tensors passed as device addresses.  The specialisation key
    covers what Triton specialises on (see :func:`_specialise`), the constexprs, the launch options and the device, so
    a launch never reuses a binary compiled for other alignment or dtypes.  Used only for plain eager launches
    (``eager_direct``, whose callers have checked that every tensor is on the GPU) with runtime arguments
    positional and constexprs by keyword; Triton's own path is taken under the interpreter, with launch hooks set
    (e.g. Proton), on a Triton version the fast path was not checked on, or with ``KERNELFLEET_FAST_LAUNCH=0``."""

    __slots__ = ("fn", "cache")

    def __init__(self, fn):
        self.fn = fn
        self.cache: dict = {}

    def __getitem__(self, grid):
        return functools.partial(self._launch, grid)

    def _launch(self, grid, *args, **kwargs):
        if not fast_launch_active():
            _RECORDING.launches = None  # a launch through Triton's path cannot be replayed
            return self.fn[grid](*args, **kwargs)
        device = _current_device()
        arg_key, values = _specialise(args)
        key = (device, arg_key, tuple(kwargs.items()))
        hit = self.cache.get(key)
        if hit is None:
            kernel = self.fn[grid](*args, **kwargs)
            names = self.fn.arg_names
            if len(args) + sum(n in kwargs for n in names[len(args) :]) == len(names):
                self.cache[key] = (kernel, tuple(kwargs[n] for n in names[len(args) :]), _raw_launch(kernel))
            _record(self.cache.get(key), grid, args, values)
            return kernel
        kernel, constexprs, raw = hit
        g0, g1, g2 = _grid3(grid)
        stream = _current_stream(device)
        if raw is None:
            kernel.run(
                g0, g1, g2, stream, kernel.function, kernel.packed_metadata, None, None, None, *values, *constexprs
            )
        else:
            raw[0](g0, g1, g2, stream, *raw[1], *values, *constexprs)
        if _RECORDING.launches is not None:
            _record(hit, grid, args, values)
        return kernel


def _grid3(grid) -> tuple:
    return grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1


def _current_device() -> int:
    return torch._C._cuda_getDevice()


def _current_stream(device: int) -> int:
    """The raw handle of the device's current stream (what Triton launches on)."""
    return torch._C._cuda_getCurrentRawStream(device)


def fast_launch_active() -> bool:
    return FAST_LAUNCH and _FAST_SUPPORTED and not INTERPRETED and compiling_for() is None and not _launch_hooks_set()


def _launch_hooks_set() -> bool:
    """Whether a launch hook is installed (None, or an empty ``HookChain`` in newer Triton, means none)."""
    runtime = _triton_runtime_knobs()
    return _hook_set(runtime.launch_enter_hook) or _hook_set(runtime.launch_exit_hook)


@functools.lru_cache(maxsize=None)
def _triton_runtime_knobs():
    from triton import knobs

    return knobs.runtime


def _hook_set(hook) -> bool:
    return hook is not None and bool(getattr(hook, "calls", True))


_DIRECT: dict = {}


# ----------------------------------------------------------------------------------------------------------------
# Recording: the launches of the call being recorded (kernels.launch_plans replays them)
# ----------------------------------------------------------------------------------------------------------------
class _Recording(threading.local):
    launches: list | None = None  # while a call is recorded: its launches; None when not recording (or failed)


_RECORDING = _Recording()


def _record(entry, grid, args, values) -> None:
    """Add a launch to the call being recorded, if any; a launch that the replay could not repeat (no C launch
    function, or not cached) spoils the recording."""
    rec = _RECORDING.launches
    if rec is None:
        return
    if entry is None or entry[2] is None:
        _RECORDING.launches = None
        return
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    rec.append((entry[2], _grid3(grid), list(values), tensors, entry[1]))


_DIRECT: dict = {}


def direct_launcher(fn) -> DirectLauncher:
    """The (shared) :class:`DirectLauncher` of a ``@triton.jit`` kernel."""
    launcher = _DIRECT.get(fn)
    if launcher is None:
        launcher = _DIRECT[fn] = DirectLauncher(fn)
    return launcher
