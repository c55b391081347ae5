"""Direct launches of compiled Triton kernels for eager calls, with the compiled kernel kept per specialisation.

:class:`DirectLauncher` (one per ``@triton.jit`` kernel: :func:`direct_launcher`) skips ``JITFunction.run``'s
per-call work; while a public function's call is recorded (:mod:`kernels.launch_plans`), each launch it makes is
added to the recording so that the call can be replayed.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import dataclass

import torch

from kernels.arch import INTERPRETED, compiling_for

# Tensors a direct launch may take: plain tensors and module parameters (a weight is an nn.Parameter); any other
# subclass goes through the op so that its __torch_dispatch__/__torch_function__ sees the call.
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)

# The Triton builds whose launch internals the fast launcher was checked against, as (distribution, version
# prefix, backend): each on a GPU of that backend, where tests/kernels/test_dispatch.py compares every kernel's fast
# launch with Triton's own bit for bit.  triton 3.6.0 and 3.7.1 (Triton 3.7's shared C launcher: _raw_launch below):
# on an H200 with torch 2.11, per-call figures of both paths in docs/perf/kernels-h200.md ("Launch paths").  ROCm's
# pytorch-triton-rocm has run on no AMD GPU: none of its versions is checked.  Anything else takes Triton's own
# launch path; tests/kernels/test_launch_gate.py fails when the lock's Triton is outside this table.
CHECKED_TRITON = (
    ("triton", "3.6", "cuda"),
    ("triton", "3.7", "cuda"),
)
# KERNELFLEET_FAST_LAUNCH=0 forces Triton's own launch path (for comparing the two paths: benchmarks/launch_paths.py)
FAST_LAUNCH = os.environ.get("KERNELFLEET_FAST_LAUNCH", "1") not in ("", "0")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LaunchPath:
    """Which launch path eager calls take in this process, and why."""

    fast: bool
    reason: str

    @property
    def name(self) -> str:
        return "fast" if self.fast else "triton"


def _backend() -> str:
    """``hip`` or ``cuda`` where torch sees a GPU of that kind, else ``cpu``."""
    if not torch.cuda.is_available():
        return "cpu"
    return "hip" if torch.version.hip else "cuda"


def checked(dist: str, version: str, backend: str) -> bool:
    """Whether Triton ``dist`` at ``version`` on ``backend`` is one the fast launcher was checked against."""
    return any(
        dist == d and (version == prefix or version.startswith(prefix + ".")) and backend == b
        for d, prefix, b in CHECKED_TRITON
    )


def decide_path(dist: str, version: str, backend: str, has_knobs: bool = True) -> LaunchPath:
    """The launch path for a Triton build (pure: the gate's rule, tested without the build)."""
    if not version:
        return LaunchPath(False, "triton is not importable")
    if backend == "cpu":
        return LaunchPath(False, f"{dist} {version}, no GPU: Triton's interpreter runs the kernels")
    if not has_knobs:
        return LaunchPath(False, f"{dist} {version} has no triton.knobs (older than 3.4)")
    if not checked(dist, version, backend):
        return LaunchPath(
            False,
            f"{dist} {version} on {backend} is not among the builds the fast launch was checked on "
            f"({', '.join(f'{d} {p}.x on {b}' for d, p, b in CHECKED_TRITON)}): Triton's own launch path",
        )
    return LaunchPath(True, f"{dist} {version} on {backend} was checked against the fast launch")


def _this_path() -> LaunchPath:
    from kernels.triton_dist import triton_distribution

    dist = triton_distribution()
    try:
        from triton import knobs  # noqa: F401  (3.4+)

        has_knobs = True
    except Exception:  # noqa: BLE001 - a broken or old triton takes Triton's own path (or none)
        has_knobs = False
    return decide_path(dist.name, dist.version, _backend(), has_knobs)


_BUILD: LaunchPath | None = None  # this Triton build's verdict, decided once (on the first launch or question)
_FAST_SUPPORTED = False  # _BUILD.fast, for the per-launch check


def _build_path() -> LaunchPath:
    global _BUILD, _FAST_SUPPORTED
    if _BUILD is None:
        _BUILD = _this_path()
        _FAST_SUPPORTED = _BUILD.fast
        path = launch_path()
        (log.info if _BUILD.fast or not _BUILD.reason.endswith("own launch path") else log.warning)(
            "launch path: %s (%s)", path.name, path.reason
        )
    return _BUILD


def launch_path() -> LaunchPath:
    """The launch path eager calls take in this process, and why: this Triton build's verdict (decided once, and
    logged once per process, a warning where the build is unchecked), unless the fast path is switched off
    (``KERNELFLEET_FAST_LAUNCH=0``) or the interpreter runs the kernels."""
    build = _build_path()
    if not build.fast:
        return build
    if not FAST_LAUNCH:
        return LaunchPath(False, "KERNELFLEET_FAST_LAUNCH=0")
    if INTERPRETED:
        return LaunchPath(False, "TRITON_INTERPRET=1: the interpreter runs every launch")
    return build


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
    """``(fn, leading, packed)``: the compiled kernel's C launch function, the arguments that lead the kernel's own,
    and whether the kernel's arguments go as one sequence (``packed``) or spread; None where Triton's Python launcher
    would add something to them (scratch memory to allocate, tensor descriptors to build) or where its layout is not
    one of the two below.  Read from Triton's ``backends/nvidia/driver.py`` (``CudaLauncher``):

    - 3.6: a C module compiled per signature, ``launch(gx, gy, gz, stream, function, cooperative, pdl,
      global_scratch, profile_scratch, packed_metadata, launch_metadata, enter_hook, exit_hook, *args)``;
    - 3.7: one shared ``cuda_utils.launch(gx, gy, gz, stream, function, cooperative, pdl, packed_metadata,
      launch_metadata, enter_hook, exit_hook, global_scratch, profile_scratch, arg_annotations, kernel_signature,
      args)``, the launcher's ``arg_annotations`` telling it which of ``args`` are constexprs to skip.

    Both take a pointer argument as a plain int.  ROCm's ``HIPLauncher`` (another layout: cooperative first, a warp
    size, no global scratch) has no ``global_scratch_size`` and so gets None here: its launches go through the
    launcher object (``kernel.run``), whose call is the same in 3.6 and 3.7."""
    run = kernel.run
    fn = getattr(run, "launch", None)
    if fn is None or getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1):
        return None
    if getattr(fn, "__name__", "") != "launch":  # wrapped (tensor descriptors): keep Triton's path
        return None
    coop, pdl, meta = run.launch_cooperative_grid, run.launch_pdl, kernel.packed_metadata
    annotations = getattr(run, "arg_annotations", None)
    signature = getattr(run, "kernel_signature", None)
    if annotations is None and signature is None:  # 3.6
        return fn, (kernel.function, coop, pdl, None, None, meta, None, None, None), False
    if annotations is not None and signature is not None:  # 3.7
        return fn, (kernel.function, coop, pdl, meta, None, None, None, None, None, annotations, signature), True
    return None


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
        device = current_device()
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
        stream = current_stream(device)
        if raw is None:
            kernel.run(
                g0, g1, g2, stream, kernel.function, kernel.packed_metadata, None, None, None, *values, *constexprs
            )
        elif raw[2]:
            raw[0](g0, g1, g2, stream, *raw[1], (*values, *constexprs))
        else:
            raw[0](g0, g1, g2, stream, *raw[1], *values, *constexprs)
        if _RECORDING.launches is not None:
            _record(hit, grid, args, values)
        return kernel


def _grid3(grid) -> tuple:
    return grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1


def current_device() -> int:
    return torch._C._cuda_getDevice()


def current_stream(device: int) -> int:
    """The raw handle of the device's current stream (what Triton launches on)."""
    return torch._C._cuda_getCurrentRawStream(device)


def fast_launch_active() -> bool:
    return (
        (_FAST_SUPPORTED if _BUILD is not None else _build_path().fast)
        and FAST_LAUNCH
        and not INTERPRETED
        and compiling_for() is None
        and not _launch_hooks_set()
    )


def _launch_hooks_set() -> bool:
    """Whether a launch hook (or a pipeline-stages hook) is installed (None, or an empty ``HookChain`` in newer
    Triton, means none)."""
    runtime = _triton_runtime_knobs()
    return (
        _hook_set(runtime.launch_enter_hook)
        or _hook_set(runtime.launch_exit_hook)
        # 3.7's JITFunction.run adds the hook's pipeline hash to the kernel's cache key, which ours does not hold
        or getattr(runtime, "add_stages_inspection_hook", None) is not None
    )


@functools.lru_cache(maxsize=None)
def _triton_runtime_knobs():
    from triton import knobs

    return knobs.runtime


def _hook_set(hook) -> bool:
    return hook is not None and bool(getattr(hook, "calls", True))


# ----------------------------------------------------------------------------------------------------------------
# Recording: the launches of the call being recorded (kernels.launch_plans replays them)
# ----------------------------------------------------------------------------------------------------------------
class _Recording(threading.local):
    launches: list | None = None  # while a call is recorded: its launches; None when not recording (or failed)


_RECORDING = _Recording()


def start_recording() -> None:
    """Record the direct launches this thread makes from now on (:func:`stop_recording` gives them)."""
    _RECORDING.launches = []


def stop_recording() -> list | None:
    """Stop recording; the launches made since :func:`start_recording`, each ``(launch, grid3, values, tensor
    slots, constexprs)`` (``launch``: :func:`_raw_launch`'s triple), or None when one of them could not be replayed
    (it went through Triton's own path, or has no C launch function)."""
    launches, _RECORDING.launches = _RECORDING.launches, None
    return launches


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


_DIRECT: dict = {}  # @triton.jit kernel -> its DirectLauncher


def direct_launcher(fn) -> DirectLauncher:
    """The (shared) :class:`DirectLauncher` of a ``@triton.jit`` kernel."""
    launcher = _DIRECT.get(fn)
    if launcher is None:
        launcher = _DIRECT[fn] = DirectLauncher(fn)
    return launcher


def direct_launchers() -> list[DirectLauncher]:
    """Every kernel's DirectLauncher made so far in this process."""
    return list(_DIRECT.values())


def forget_direct_launches() -> None:
    """Drop the compiled kernels every DirectLauncher keeps: the next launch of each goes through Triton again."""
    for launcher in _DIRECT.values():
        launcher.cache.clear()
