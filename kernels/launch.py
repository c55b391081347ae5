"""Per-architecture launch parameters and the checks every Triton wrapper shares.

One table, keyed by the architecture the device reports (``sm_90``, ``gfx950``, ``gfx1201``...), gives the warp
(wavefront) size and the warps per program for a row of a given width.  On sm_90 (H200) the norm-family kernels'
warps at their widths come from launch-knob sweeps (``norm_warps``, ``layer_norm_warps``; docs/perf/kernels-h200.md);
the rest of the sm_90 row table is the generic rule.  The AMD entries follow the ROCm guidance the project started
from (wave64 on CDNA with 2/4/8 warps, wave32 on RDNA with 4/8/16, by row width) and have NOT run on AMD hardware;
their machine code is checked without it (:func:`compile_target`, workers/isa.py, docs/perf/amd-isa.md).  ``measured``
says whether a whole entry comes from a tuning sweep on that architecture (none does yet).

Also here: the direct launch path of eager calls (:func:`eager_direct`, :class:`DirectLauncher`).
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode


@dataclass(frozen=True)
class ArchLaunch:
    arch: str
    warp_size: int
    # (max BLOCK width, num_warps) for row kernels, ascending by width; the last entry covers anything wider
    row_warps: tuple[tuple[int, int], ...]
    # elements per program for purely elementwise kernels
    elementwise_block: int
    measured: bool  # whether these numbers come from a measurement on this architecture
    # (row width, num_warps) for the norm-family row kernels (rms_norm, adaln_*, add_rms_norm_modulate) at one row per
    # program, measured on this architecture; these override row_warps at those widths
    norm_warps: tuple[tuple[int, int], ...] = ()
    # the same for the LayerNorm variant (adaln_layer_norm: two row reductions, mean then variance), by padded width
    layer_norm_warps: tuple[tuple[int, int], ...] = ()
    # kernels that reproduce PyTorch's per-op rounding in bf16/fp16 (rope_rotate_half with half tables) may multiply
    # and add in the half dtype itself, one correctly rounded op each, instead of in fp32 with a cast per op; only
    # where a GPU run compared the result with PyTorch's bit for bit and timed it
    native_half_math: bool = False


_TABLE: dict[str, ArchLaunch] = {
    # NVIDIA Hopper (H100/H200).
    "sm_90": ArchLaunch("sm_90", 32, ((512, 2), (1024, 4), (2048, 8), (4096, 8), (1 << 30, 16)), 2048, False,
                        # H200, 2026-11-30 (docs/perf/h200-2026-11-30/launch_knobs.py): at 2048-wide rows 4 warps
                        # beat 8 for rms_norm/adaln_rms by 5-25 % launch-free at 22-104 MB, tie for
                        # add_rms_norm_modulate; at 3072 (block 4096) 8 stays best
                        norm_warps=((2048, 4),),
                        # H200, 2026-11-30 (docs/perf/h200-2026-11-30d/launch_knobs_2.py): adaln_layer_norm at
                        # 1536-3072 wide rows, per call: 2 warps at block 2048 (17.1 against 18.5 us with 4),
                        # 4 at block 4096 (16.9 against 19.3 with 8; 26.0 against 33.2 at 2432)
                        layer_norm_warps=((2048, 2), (4096, 4)),
                        # H200, 2026-11-30 (docs/perf/h200-2026-11-30j/rope_half_math.py): rope_rotate_half with
                        # bf16 tables equal to transformers' bit for bit at the five grid shapes, 2-5 % faster per
                        # call at 69-105 MB than with a cast per op
                        native_half_math=True),
    # AMD CDNA3+/4 (MI300X gfx942, MI355X gfx950): wave64, so half the warps cover the same row (the generic rule's
    # lanes per row): 8 16-bit elements per lane, so rows load and store 128 bits a lane (dwordx4), where the
    # generic warps on wave64 gave 4 elements and 64-bit accesses (docs/perf/amd-isa.md).
    "gfx950": ArchLaunch("gfx950", 64, ((1024, 2), (4096, 4), (1 << 30, 8)), 2048, False),
    "gfx942": ArchLaunch("gfx942", 64, ((1024, 2), (4096, 4), (1 << 30, 8)), 2048, False),
    # AMD RDNA4 (R9700 gfx1201) and RDNA3 (gfx1100): wave32; nw=32 measured worst in the seed, so cap at 16.
    "gfx1201": ArchLaunch("gfx1201", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False),
    "gfx1100": ArchLaunch("gfx1100", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False),
}
# Anything else (other NVIDIA generations, the CPU interpreter): the generic row heuristic.
_GENERIC = ArchLaunch("generic", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False)


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.lru_cache(maxsize=None)
def device_arch(index: int = 0) -> str:
    """sm_XY on CUDA, the gfx name (without feature suffixes) on ROCm, 'cpu' without a GPU."""
    if not torch.cuda.is_available():
        return "cpu"
    props = torch.cuda.get_device_properties(index)
    gcn = getattr(props, "gcnArchName", "") or ""
    if torch.version.hip is not None and gcn:
        return gcn.split(":")[0]
    return f"sm_{props.major}{props.minor}"


def arch_launch(device: torch.device | None = None) -> ArchLaunch:
    if _COMPILE_TARGET.arch is not None:
        return _TABLE[_COMPILE_TARGET.arch]
    if device is None or device.type != "cuda":
        return _GENERIC
    arch = device_arch(device.index or 0)
    return _TABLE.get(arch, _GENERIC)


class _CompileTarget(threading.local):
    arch: str | None = None  # inside compile_target(): the architecture whose launches are being compiled


_COMPILE_TARGET = _CompileTarget()


@contextlib.contextmanager
def compile_target(arch: str):
    """Launch as on a GPU of ``arch`` without one (workers/isa.py compiles what the wrappers launch): inside, every
    wrapper picks that architecture's launch table whatever its tensors' device, CPU tensors are accepted and the
    fast launch path is off, so each launch reaches Triton's ``JITFunction.run`` (which the caller intercepts; no
    kernel runs).  The launch-config caches are keyed by device, so they are cleared on entry and exit."""
    if arch not in _TABLE:
        raise ValueError(f"no launch table for {arch!r}; known: {', '.join(sorted(_TABLE))}")
    previous = _COMPILE_TARGET.arch
    _COMPILE_TARGET.arch = arch
    _forget_launch_configs()
    try:
        yield _TABLE[arch]
    finally:
        _COMPILE_TARGET.arch = previous
        _forget_launch_configs()


def _forget_launch_configs() -> None:
    """Clear the kernel modules' cached launch configs (``functools`` caches of functions taking a ``device``) and
    the direct launches."""
    import inspect
    import sys

    forget_launches()
    for name, module in list(sys.modules.items()):
        if name == "kernels" or name.startswith("kernels."):
            for value in list(vars(module).values()):
                wrapped = getattr(value, "__wrapped__", None)
                if (callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name
                        and wrapped is not None and "device" in inspect.signature(wrapped).parameters):
                    value.cache_clear()


def row_num_warps(block: int, device: torch.device | None = None) -> int:
    for width, warps in arch_launch(device).row_warps:
        if block <= width:
            return warps
    return arch_launch(device).row_warps[-1][1]


def check_device(name: str, t: torch.Tensor) -> None:
    """A Triton kernel runs on a GPU tensor, or on a CPU tensor under the interpreter (TRITON_INTERPRET=1)."""
    if t.device.type == "cpu" and not interpreting() and _COMPILE_TARGET.arch is None:
        raise ValueError(
            f"{name} is a CPU tensor; Triton kernels need a GPU tensor, or TRITON_INTERPRET=1 to run on the CPU")
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name} is on {t.device}; expected a CUDA/ROCm (torch 'cuda') or CPU tensor")


FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def check_float(name: str, t: torch.Tensor) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} has dtype {t.dtype}; expected one of float32, bfloat16, float16")


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
        if t is not None and (type(t) not in _PLAIN or (grad and t.requires_grad)):
            return False
    return True


# Tensors a direct launch may take: plain tensors and module parameters (a weight is an nn.Parameter); any other
# subclass goes through the op so that its __torch_dispatch__/__torch_function__ sees the call.
_PLAIN = (torch.Tensor, torch.nn.Parameter)


# ----------------------------------------------------------------------------------------------------------------
# Direct launches with the compiled kernel cached per specialisation
# ----------------------------------------------------------------------------------------------------------------
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
        elif t in _PLAIN or isinstance(a, torch.Tensor):
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
    return fn, (kernel.function, run.launch_cooperative_grid, run.launch_pdl, None, None, kernel.packed_metadata,
                None, None, None)


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
            if len(args) + sum(n in kwargs for n in names[len(args):]) == len(names):
                self.cache[key] = (kernel, tuple(kwargs[n] for n in names[len(args):]), _raw_launch(kernel))
            _record(self.cache.get(key), grid, args, values)
            return kernel
        kernel, constexprs, raw = hit
        g0, g1, g2 = _grid3(grid)
        stream = _current_stream(device)
        if raw is None:
            kernel.run(g0, g1, g2, stream, kernel.function, kernel.packed_metadata, None, None, None,
                       *values, *constexprs)
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


# Whether the kernels were made interpreted: triton.jit decides when a kernel module is imported, so the fast path
# (compiled kernels only) and the injection's per-call checks go by the setting at import, read once (os.environ
# costs ~1 us a call).
INTERPRETED = interpreting()


def fast_launch_active() -> bool:
    return (FAST_LAUNCH and _FAST_SUPPORTED and not INTERPRETED and _COMPILE_TARGET.arch is None
            and not _launch_hooks_set())


# ----------------------------------------------------------------------------------------------------------------
# Launch plans: an eager call's launches, recorded once per argument geometry and replayed
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


def plan_key(*items) -> tuple:
    """What a recorded launch depends on, besides the tensors' addresses: each tensor's shape, strides, dtype,
    device and 16-byte alignment (Triton specialises on it), the type and value of everything else, and the
    current device."""
    return (_current_device(),) + tuple([
        (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15) if isinstance(t, torch.Tensor) else (type(t), t)
        for t in items])


class _Plan:
    """The launches of one call: for each, the C launch function and its leading arguments, the grid, the argument
    values with the tensors' addresses left to fill in (slot -> index of the call's tensor), and the constexprs."""

    __slots__ = ("launches",)

    def __init__(self, launches):
        self.launches = launches

    def __call__(self, tensors) -> None:
        stream = _current_stream(_current_device())
        for (fn, prefix), (g0, g1, g2), values, slots, constexprs in self.launches:
            values = values.copy()
            for slot, i in slots:
                values[slot] = tensors[i].data_ptr()
            fn(g0, g1, g2, stream, *prefix, *values, *constexprs)


MAX_PLANS = 1024  # per function
_UNPLANNABLE = object()  # a key whose launches cannot be replayed from the call's tensors
PLANS: dict[str, "LaunchPlans"] = {}  # every public function's plans, by the function's name


class LaunchPlans:
    """Per public kernel function: ``plan_key`` -> the call's launches, so that a repeated eager call (the same
    shapes, strides, dtypes, devices, alignment and scalars: every call of a model's layer) skips the argument
    checks and the launch set-up, both already done for that key, and only allocates its outputs and launches.

    Without a plan (``find``), the caller runs its full path (checks included) inside ``record``, which keeps the
    launches if each one can be repeated from the call's tensors alone: every tensor the kernel takes must be one of
    the call's own tensors (inputs and outputs) at its address.  A view at an offset, a copy, or two of the call's
    tensors at one address leave the key unrecorded, and each such call takes the full path."""

    def __init__(self, name: str):
        self.plans: dict = {}
        PLANS[name] = self

    def find(self, *items) -> tuple[tuple | None, _Plan | None]:
        """``(key, plan)`` of a call on ``items`` (its tensors and scalars, in a fixed order); ``(None, None)``
        when the fast launch is not in use, ``(key, None)`` when nothing is recorded for the key."""
        if not fast_launch_active():
            return None, None
        key = plan_key(*items)
        try:
            plan = self.plans.get(key)
        except TypeError:  # an unhashable scalar: the full path's checks reject it
            return None, None
        if plan is _UNPLANNABLE:
            return None, None  # known not to replay: the full path, without recording again
        return key, plan

    @contextlib.contextmanager
    def record(self, key, tensors):
        if key is None:
            yield
            return
        _RECORDING.launches = []
        try:
            yield
            launches = _RECORDING.launches
        finally:
            _RECORDING.launches = None
        if launches is None:
            self._keep(key, _UNPLANNABLE)
            return
        addresses = [t.data_ptr() if isinstance(t, torch.Tensor) else None for t in tensors]
        plan = []
        for raw, grid3, values, tensor_slots, constexprs in launches:
            slots = []
            for slot in tensor_slots:
                at = [i for i, a in enumerate(addresses) if a == values[slot]]
                if len(at) != 1:
                    self._keep(key, _UNPLANNABLE)
                    return
                slots.append((slot, at[0]))
            plan.append((raw, grid3, values, tuple(slots), constexprs))
        self._keep(key, _Plan(tuple(plan)))

    def _keep(self, key, plan) -> None:
        if len(self.plans) >= MAX_PLANS:  # shapes that never repeat (e.g. a growing sequence): start over
            self.plans.clear()
        self.plans[key] = plan


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


def forget_launches() -> None:
    """Drop every direct launcher's kept kernels and every public function's launch plans (they hold the
    constexprs a launch was recorded with), so the next calls take the full path again: after a change to what
    the launch table says, e.g."""
    for launcher in _DIRECT.values():
        launcher.cache.clear()
    for plans in PLANS.values():
        plans.plans.clear()


def direct_launcher(fn) -> DirectLauncher:
    """The (shared) :class:`DirectLauncher` of a ``@triton.jit`` kernel."""
    launcher = _DIRECT.get(fn)
    if launcher is None:
        launcher = _DIRECT[fn] = DirectLauncher(fn)
    return launcher


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


def eager_call(plans: LaunchPlans, items: tuple, check, new_outs, launch) -> tuple:
    """The eager (direct) path of a public kernel function: with a plan for ``items`` (the call's tensors and
    scalars, in a fixed order), allocate the outputs (``new_outs()``, a tuple) and replay it; without one, run
    ``check()`` (which raises on bad input), allocate, ``launch(*outs)`` and record the launches.  Returns the
    outputs."""
    key, plan = plans.find(*items)
    if plan is None:
        check()
    outs = new_outs()
    if plan is not None:
        plan(items + outs)
    else:
        with plans.record(key, items + outs):
            launch(*outs)
    return outs
