"""The ``isa`` job: compile a kernel as its own wrapper launches it on a target architecture, and read the machine code.

No GPU is needed.  The registry's ``triton`` implementation is called on CPU tensors of the job's shape and dtype
inside :func:`kernels.arch.compile_target` (the wrapper picks the target's launch table: block sizes, warps, rows
per program) with Triton's ``JITFunction.run`` intercepted (:func:`captured_launches`): every launch the call makes
is kept with its bound arguments instead of running.  Each launch is then specialised as Triton specialises it at a
real launch, with the target's backend (integers divisible by 16 or equal to 1, pointers 16-byte aligned, and on
AMD tensors under 2 GB addressed by buffer instructions), and compiled with ``triton.compile(ASTSource(...),
target=GPUTarget(...))``.  On AMD the AMDGCN assembly is read (workers/device/parsers/amdgcn.py); on sm_90 the ptxas log
and the SASS (workers/device/parsers/sass.py, ``cuobjdump`` ships in Triton's wheel).

Measurements (implementation ``triton``): registers, spills, scratch and LDS bytes, occupancy, code size, global
loads and stores by width, transcendental and conversion instructions, compile time, and ``est_min_time_us``: the
byte model over the target's published memory bandwidth, an estimate (a lower bound), never a timing.  The job's
device is the compile target (``DeviceInfo.runtime == "compile target"``, ``extra.compile_target``), not a measured
GPU; the assembly is kept as an artifact.  A launch the target would refuse (shared memory/LDS or registers beyond
what one program may hold there: :func:`workers.jobs.isa_targets.cannot_run`) makes the job an ``error`` naming the
launch and the limit, its figures still stored: the kernel would fail on that GPU.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from workers import metrics
from workers.device.parsers import amdgcn, sass
from workers.jobs import isa_targets
from workers.jobs.isa_targets import CompileTarget
from workers.kinds.isa import NAME as ISA
from workers.spec import STATUS_ERROR, STATUS_OK, DeviceInfo, JobResult, JobSpec, Measurement

RUNTIME = "compile target"  # DeviceInfo.runtime of a compile target: no device ran anything
WIDTHS = (128, 96, 64, 32, 16, 8)  # access widths reported, bits


@dataclass
class Launch:
    """One kernel launch a wrapper made: the @triton.jit function, its grid and what it was called with."""

    fn: Any
    grid: tuple
    args: tuple
    kwargs: dict


@contextlib.contextmanager
def captured_launches() -> Iterator[list[Launch]]:
    """Every ``JITFunction.run`` (a launch through Triton's path) inside the block is recorded, not run."""
    from triton.runtime.jit import JITFunction

    launches: list[Launch] = []
    real = JITFunction.run

    def record(self, *args, grid, warmup, **kwargs):
        launches.append(Launch(self, tuple(grid) if not callable(grid) else grid, args, dict(kwargs)))
        return None

    JITFunction.run = record
    try:
        yield launches
    finally:
        JITFunction.run = real


def wrapper_launches(
    kernel: str, shape: list[int], dtype: str, arch: str, seed: int = 0, call: Callable[..., Any] | None = None
) -> list[Launch]:
    """The launches the registry's ``triton`` implementation of ``kernel`` makes for (shape, dtype) on ``arch``; with
    ``call``, those ``call(**inputs)`` makes instead (a tune candidate's launch, workers/jobs/tune_filter.py)."""
    from kernels import arch as kernel_arch
    from kernels import registry

    if kernel_arch.INTERPRETED:
        raise RuntimeError(
            "the kernels were imported under Triton's interpreter (TRITON_INTERPRET=1); an isa job "
            "compiles them: run it in a compile-only sandbox (workers.runtime.runner does so)"
        )
    entry = registry.get(kernel)
    if "triton" not in entry.impls:
        raise ValueError(f"{kernel} has no triton implementation; it has {', '.join(entry.impl_names())}")
    if dtype not in entry.dtypes:
        raise ValueError(f"{kernel} does not support dtype {dtype}; allowed: {', '.join(entry.dtypes)}")
    entry.check_shape(tuple(shape))
    gen = torch.Generator().manual_seed(seed)
    inputs = entry.make_inputs(tuple(shape), registry.dtype_of(dtype), torch.device("cpu"), gen)
    with kernel_arch.compile_target(arch), captured_launches() as launches:
        (call or entry.impls["triton"].make())(**inputs)
    if not launches:
        what = "the call" if call else "the triton implementation"
        raise RuntimeError(f"{kernel} {shape} {dtype}: {what} launched no kernel")
    return launches


@dataclass
class Compiled:
    """A launch compiled for a target: what Triton was given, and what came out."""

    name: str
    grid: tuple
    num_warps: int
    signature: dict
    constexprs: dict
    attrs: dict
    asm: dict  # stage -> text (amdgcn / ptx / sass)
    shared: int  # LDS / shared memory the launch allocates (Triton's metadata), bytes
    compile_s: float
    ptxas_log: str = ""
    cached: bool = False
    notes: list[str] = field(default_factory=list)


_CACHE: dict[tuple, Compiled] = {}  # one compile per (target, kernel, specialisation, options) in a process


def _specialise(launch: Launch, target: CompileTarget):
    """What ``JITFunction.run`` computes before compiling, with the target's backend in place of the device's."""
    from triton import knobs
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    fn = launch.fn
    if not hasattr(fn, "_pack_args"):
        import triton

        raise RuntimeError(
            f"the isa job specialises launches as Triton's JITFunction.run does (its _pack_args, "
            f"Triton 3.4 and later); this is triton {triton.__version__}"
        )
    kwargs = dict(launch.kwargs)
    kwargs["debug"] = kwargs.get("debug", fn.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    if hasattr(knobs.compilation, "fpsan_homomorphic_casts"):  # JITFunction.run passes it from Triton 3.9 on
        kwargs["fpsan_homomorphic_casts"] = knobs.compilation.fpsan_homomorphic_casts
    backend = make_backend(target.gpu_target())
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(*launch.args, **kwargs)
    return fn._pack_args(backend, kwargs, bound, specialization, options)


def compile_launch(launch: Launch, target: CompileTarget) -> Compiled:
    """Compile one launch for ``target`` (cached in this process by its specialisation)."""
    import triton
    from triton import knobs
    from triton.compiler import ASTSource

    options, signature, constexprs, attrs = _specialise(launch, target)
    key = (
        target.arch,
        launch.fn.cache_key,
        repr(sorted(signature.items())),
        repr(sorted(constexprs.items())),
        repr(sorted(attrs.items())),
        options.hash(),
    )
    hit = _CACHE.get(key)
    if hit is not None:
        return Compiled(**{**hit.__dict__, "grid": launch.grid, "cached": True})
    log = io.StringIO()
    old_always, old_dump = knobs.compilation.always_compile, knobs.nvidia.dump_ptxas_log
    knobs.compilation.always_compile = True  # a fresh compile: its time is the metric, and ptxas prints its log
    knobs.nvidia.dump_ptxas_log = target.backend == "cuda"
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(log):
            kernel = triton.compile(
                ASTSource(launch.fn, signature, constexprs, attrs), target=target.gpu_target(), options=options.__dict__
            )
    finally:
        knobs.compilation.always_compile, knobs.nvidia.dump_ptxas_log = old_always, old_dump
    compile_s = time.perf_counter() - t0
    asm = {k: v for k, v in kernel.asm.items() if k in ("amdgcn", "ptx") and isinstance(v, str)}
    notes = []
    if target.backend == "cuda":
        text, note = _sass(kernel.asm.get("cubin"))
        if text:
            asm["sass"] = text
        if note:
            notes.append(note)
    compiled = Compiled(
        kernel.name,
        launch.grid,
        int(options.num_warps),
        dict(signature),
        {str(k): v for k, v in constexprs.items()},
        {str(k): v for k, v in attrs.items()},
        asm,
        int(getattr(kernel.metadata, "shared", 0) or 0),
        compile_s,
        log.getvalue(),
        notes=notes,
    )
    _CACHE[key] = compiled
    return compiled


def _sass(cubin: bytes | None) -> tuple[str, str]:
    """The SASS listing of a cubin from the ``cuobjdump`` in Triton's wheel (or on PATH), or why there is none."""
    if not cubin:
        return "", "no cubin"
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    tool = tool if os.path.exists(tool) else shutil.which("cuobjdump")
    if not tool:
        return "", "cuobjdump not found: no SASS instruction mix"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return "", f"cuobjdump -sass failed: {out.stderr.strip()[:300]}"
    return out.stdout, ""


# ---------------------------------------------------------------------------------------------------- analysis


def analyse(compiled: Compiled, target: CompileTarget) -> dict[str, Any]:
    """The figures of one compiled launch: resources, memory accesses by width, instruction classes."""
    out: dict[str, Any] = {
        "kernel": compiled.name,
        "grid": list(compiled.grid),
        "num_warps": compiled.num_warps,
        "compile_s": compiled.compile_s,
    }
    if target.backend == "hip":
        kernels = [k for k in amdgcn.parse(compiled.asm["amdgcn"]) if k.name == compiled.name]
        if len(kernels) != 1:
            raise RuntimeError(f"{compiled.name}: the AMDGCN assembly holds {len(kernels)} kernels of that name")
        k = mix = kernels[0]
        out.update(
            vgprs=k.vgprs,
            agprs=k.agprs,
            sgprs=k.sgprs,
            vgpr_spills=k.vgpr_spills,
            sgpr_spills=k.sgpr_spills,
            scratch_bytes=k.scratch_bytes,
            lds_bytes=max(k.lds_bytes or 0, compiled.shared),
            occupancy_waves=k.occupancy,
            code_bytes=k.code_bytes,
            wavefront_size=k.wavefront_size,
            workgroup_size=k.max_workgroup_size,
        )
        out["memory_instructions"] = {m: n for m, n in sorted(k.instructions.items()) if amdgcn.memory_width(m)}
        unknown = k.unknown_memory_ops()
        if unknown:
            out["unread_memory_ops"] = unknown
    else:
        reports = [r for r in sass.parse_ptxas_log(compiled.ptxas_log) if r.name == compiled.name]
        r = reports[-1] if reports else sass.PtxasReport(compiled.name)
        mix = sass.parse_sass(compiled.asm.get("sass", ""))
        out.update(
            registers=r.registers,
            spill_store_bytes=r.spill_store_bytes,
            spill_load_bytes=r.spill_load_bytes,
            scratch_bytes=r.stack_bytes,
            lds_bytes=compiled.shared,
            wavefront_size=target.warp_size,
            workgroup_size=compiled.num_warps * target.warp_size,
        )
        out["memory_instructions"] = {m: n for m, n in sorted(mix.instructions.items()) if sass.memory_width(m)}
        if "sass" in compiled.asm:
            code = compiled.asm["sass"].count("/*") // 2  # two comments per instruction: address and encoding
            out["code_bytes"] = 16 * code  # Hopper instructions are 16 bytes
    ops = mix.memory_ops()
    for direction in ("load", "store"):
        widths = ops[direction]
        for bits in WIDTHS:
            out[f"{direction}s_b{bits}"] = widths.get(bits, 0)
        out[f"{direction}_min_bits"] = min(widths) if widths else None
    out["transcendentals"] = mix.transcendentals()
    out["conversions"] = mix.conversions()
    out["instructions"] = mix.instruction_count()
    return out


# Per-call figures from the launches' figures: registers and LDS are the largest launch's, occupancy the smallest,
# counts and times add up, the narrowest access is the narrowest of any launch.
_MAX = ("vgprs", "agprs", "sgprs", "registers", "lds_bytes", "scratch_bytes")
_MIN = ("occupancy_waves", "load_min_bits", "store_min_bits")
UNITS = {name: metrics.get(name).unit for name in metrics.of_kind(ISA)}


def combine(per_launch: list[dict[str, Any]]) -> dict[str, float]:
    """One value per metric for the whole call (see _MAX/_MIN; everything else is summed)."""
    out: dict[str, float] = {"launches": len(per_launch)}
    names = [n for n in UNITS if n not in ("isa_compile_s", "launches") and not n.startswith("est_")]
    for name in names:
        values = [p[name] for p in per_launch if p.get(name) is not None]
        if not values:
            continue
        out[name] = max(values) if name in _MAX else min(values) if name in _MIN else sum(values)
    out["isa_compile_s"] = sum(p["compile_s"] for p in per_launch)
    return out


def estimate_us(nbytes: int, gbs: float) -> float:
    """Microseconds to move ``nbytes`` at ``gbs`` GB/s: the bandwidth bound, a lower bound on the kernel's time."""
    return nbytes / (gbs * 1e9) * 1e6


def target_device(target: CompileTarget) -> DeviceInfo:
    """The device a compile-only result is recorded against: the target architecture, marked as such."""
    import triton

    return DeviceInfo(
        vendor=target.vendor,
        name=f"{target.full_name} (compile target)",
        arch=target.arch,
        warp_size=target.warp_size,
        runtime=RUNTIME,
        torch=torch.__version__,
        triton=triton.__version__,
        gpu_type=target.gpu_type,
        extra={"compile_target": True, "measured": False, "peak_gbs": target.peak_gbs, "memory": target.memory},
    )


def _artifact_name(kernel: str, compiled: Compiled, target: CompileTarget, stage: str, i: int) -> str:
    ext = {"amdgcn": "s", "ptx": "ptx", "sass": "sass"}[stage]
    return f"{kernel}.{i}.{compiled.name}.{target.arch}.{ext}.gz"


def run(spec: JobSpec, device: torch.device | None = None) -> JobResult:
    """Compile the job's kernel for ``params.arch`` and report what the machine code says."""
    from kernels import registry
    from workers.jobs.profile import artifact

    arch = str(spec.params.get("arch", ""))
    target = isa_targets.get(arch)
    launches = wrapper_launches(
        spec.kernel or "", list(spec.shape), spec.dtype, arch, int(spec.params.get("seed") or 0)
    )
    per_launch, artifacts = [], []
    for i, launch in enumerate(launches):
        compiled = compile_launch(launch, target)
        figures = analyse(compiled, target)
        names = list(compiled.signature)
        figures.update(
            signature=compiled.signature,
            constexprs={names[_index(path)]: v for path, v in compiled.constexprs.items()},
            divisibility=_divisibility(compiled),
            cached=compiled.cached,
            notes=compiled.notes,
        )
        refused = isa_targets.cannot_run(figures, target)
        if refused:
            figures["cannot_run"] = refused
        per_launch.append(figures)
        for stage in ("amdgcn", "ptx", "sass"):
            if stage in compiled.asm:
                artifacts.append(
                    artifact(
                        stage, _artifact_name(spec.kernel, compiled, target, stage, i), compiled.asm[stage].encode()
                    )
                )
    del launches
    figures = combine(per_launch)
    entry = registry.get(spec.kernel or "")
    nbytes = int(entry.bytes_moved(tuple(spec.shape), registry.dtype_of(spec.dtype)))
    figures["est_min_time_us"] = estimate_us(nbytes, target.peak_gbs)
    if target.copy_gbs:
        figures["est_min_time_copy_us"] = estimate_us(nbytes, target.copy_gbs)
    measurements = [Measurement("triton", name, float(value), UNITS[name]) for name, value in figures.items()]
    details = {
        "arch": arch,
        "backend": target.backend,
        "warp_size": target.warp_size,
        "launches": per_launch,
        "bytes": nbytes,
        "artifacts": artifacts,
        "estimate": {
            "est_min_time_us": f"an estimate, not a measurement: {nbytes} bytes (the registry's byte "
            f"model) at {target.peak_gbs:g} GB/s ({target.full_name}, {target.memory})",
            **(
                {
                    "est_min_time_copy_us": f"an estimate: {nbytes} bytes at the measured copy ceiling "
                    f"{target.copy_gbs:g} GB/s ({target.copy_source})"
                }
                if target.copy_gbs
                else {}
            ),
        },
    }
    refused = [f"launch {i} ({p['kernel']}): {p['cannot_run']}" for i, p in enumerate(per_launch) if "cannot_run" in p]
    if refused:
        # the wrapper launches something the target refuses: a kernel that would fail on that GPU, not a figure
        error = f"cannot run on {target.arch}: " + "; ".join(refused)
        return JobResult(
            spec.key, STATUS_ERROR, measurements, error=error, device=target_device(target), details=details
        )
    return JobResult(spec.key, STATUS_OK, measurements, device=target_device(target), details=details)


def _divisibility(compiled: Compiled) -> dict[str, list]:
    """The specialisation Triton applied, by argument name: ``tt.divisibility`` 16 and AMD's ``tt.pointer_range``."""
    names = list(compiled.signature)
    return {names[_index(path)]: [list(a) for a in attrs] for path, attrs in compiled.attrs.items() if attrs}


def _index(path: str) -> int:
    """The argument index of a Triton argument path (``"(3,)"``, as the keys of constexprs and attrs print)."""
    return int(str(path).strip("(),").split(",")[0])
