"""The architecture a launch is for, and the launch parameters every kernel shares there.

One table, keyed by the architecture the device reports (``sm_90``, ``gfx950``, ``gfx1201``...), gives the warp
(wavefront) size, the warps per program for a row of a given width and the elements per program of a purely
elementwise kernel.  The sm_90 row table and the AMD entries are rules, not measurements: the AMD entries follow the
ROCm guidance for row kernels (wave64 on CDNA with 2/4/8 warps, wave32 on RDNA with 4/8/16, by row width), have NOT
run on AMD hardware, and their machine code is checked without it (:func:`compile_target`, workers/jobs/isa.py,
docs/perf/amd-isa.md).  What one kernel tunes for itself (measured warps at some widths, attention tiles, native
half-precision math) is in that kernel's own launch table (:mod:`kernels.launch_table`), keyed by the same names.

:func:`launch_arch` gives the architecture whose tables a launch on a device uses, :func:`for_arch` this table's
entry for an architecture name, :func:`arch_launch` the entry of a torch device.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ArchLaunch:
    arch: str
    warp_size: int
    # (max BLOCK width, num_warps) for row kernels, ascending by width; the last entry covers anything wider
    row_warps: tuple[tuple[int, int], ...]
    # elements per program for purely elementwise kernels
    elementwise_block: int
    measured: bool  # whether these numbers come from a measurement on this architecture
    # the most shared memory (LDS on AMD) one program may allocate, bytes: Hopper 227 KiB of opt-in shared memory a
    # block, CDNA4 160 KiB and CDNA3/RDNA 64 KiB of LDS a workgroup (vendors' ISA and tuning guides).  0: unknown
    # here; :func:`shared_memory_limit` asks the device.  A launch over it does not run (workers/jobs/isa.py marks it).
    shared_memory: int = 0

    @property
    def elementwise_warps(self) -> int:
        """num_warps for a block of ``elementwise_block`` elements: each lane moves at least 8 16-bit elements (128
        bits, one dwordx4 on AMD) on every architecture of the table (wave64 and wave32)."""
        return max(1, self.elementwise_block // 512)

    def warps_for(self, block: int) -> int:
        """num_warps for a row kernel's block of ``block`` elements."""
        for width, warps in self.row_warps:
            if block <= width:
                return warps
        return self.row_warps[-1][1]


_TABLE: dict[str, ArchLaunch] = {
    # NVIDIA Hopper (H100/H200).
    "sm_90": ArchLaunch(
        "sm_90", 32, ((512, 2), (1024, 4), (2048, 8), (4096, 8), (1 << 30, 16)), 2048, False, shared_memory=227 * 1024
    ),
    # AMD CDNA3+/4 (MI300X gfx942, MI355X gfx950): wave64, so half the warps cover the same row (the generic rule's
    # lanes per row): 8 16-bit elements per lane, so rows load and store 128 bits a lane (dwordx4), where the
    # generic warps on wave64 gave 4 elements and 64-bit accesses (docs/perf/amd-isa.md).
    "gfx950": ArchLaunch("gfx950", 64, ((1024, 2), (4096, 4), (1 << 30, 8)), 2048, False, shared_memory=160 * 1024),
    "gfx942": ArchLaunch("gfx942", 64, ((1024, 2), (4096, 4), (1 << 30, 8)), 2048, False, shared_memory=64 * 1024),
    # AMD RDNA4 (R9700 gfx1201) and RDNA3 (gfx1100): wave32, at most 16 warps a program: the ROCm guidance these
    # entries follow measured 32 warps (one 1024-thread workgroup per row) slowest on RDNA.
    "gfx1201": ArchLaunch("gfx1201", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False, shared_memory=64 * 1024),
    "gfx1100": ArchLaunch("gfx1100", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False, shared_memory=64 * 1024),
}
# Anything else (other NVIDIA generations, the CPU interpreter): the generic row heuristic.
_GENERIC = ArchLaunch("generic", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False)

ARCHS = tuple(_TABLE)  # the architectures with an entry of their own (what compile_target accepts)


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# Whether the kernels were made interpreted: triton.jit decides when a kernel module is imported, so the fast path
# (compiled kernels only) and the injection's per-call checks go by the setting at import, read once (os.environ
# costs ~1 us a call).
INTERPRETED = interpreting()


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


def for_arch(arch: str) -> ArchLaunch:
    """The table's entry for an architecture name (``sm_90``, ``gfx950``...; the generic entry for any other)."""
    return _TABLE.get(arch, _GENERIC)


class _CompileTarget(threading.local):
    arch: str | None = None  # inside compile_target(): the architecture whose launches are being compiled


_COMPILE_TARGET = _CompileTarget()


def launch_arch(device: torch.device | None = None) -> str:
    """The architecture whose launch tables a launch on ``device`` uses: the compile target inside
    :func:`compile_target`, the GPU's architecture for a CUDA/ROCm device, else ``cpu`` (which no table names: the
    generic entries)."""
    if _COMPILE_TARGET.arch is not None:
        return _COMPILE_TARGET.arch
    if device is None or device.type != "cuda":
        return "cpu"
    return device_arch(device.index or 0)


def arch_launch(device: torch.device | None = None) -> ArchLaunch:
    """The shared launch parameters of a launch on ``device`` (:func:`launch_arch`)."""
    return for_arch(launch_arch(device))


# Without a table entry and without a GPU to ask: the shared memory every CUDA GPU since Volta and every AMD GPU gives a
# block without opting in.
_SAFE_SHARED_MEMORY = 48 * 1024


def shared_memory_limit(device: torch.device | None = None) -> int | None:
    """The most shared memory / LDS one program of a launch on ``device`` may allocate, bytes: the architecture's
    table entry, else what the GPU reports (its opt-in limit), else a limit every GPU meets.  None under Triton's
    interpreter on the CPU, where no launch is bounded."""
    arch = launch_arch(device)
    if arch == "cpu" or (compiling_for() is None and interpreting()):
        return None
    limit = for_arch(arch).shared_memory
    if limit:
        return limit
    if device is not None and device.type == "cuda":
        props = torch.cuda.get_device_properties(device.index or 0)
        return int(getattr(props, "shared_memory_per_block_optin", 0) or _SAFE_SHARED_MEMORY)
    return _SAFE_SHARED_MEMORY


def row_num_warps(block: int, device: torch.device | None = None) -> int:
    return arch_launch(device).warps_for(block)


def compiling_for() -> str | None:
    """The architecture :func:`compile_target` compiles for (None outside it)."""
    return _COMPILE_TARGET.arch


@contextlib.contextmanager
def compile_target(arch: str):
    """Launch as on a GPU of ``arch`` without one (workers/jobs/isa.py compiles what the wrappers launch): inside, every
    wrapper picks that architecture's launch tables whatever its tensors' device, CPU tensors are accepted and the
    fast launch path is off, so each launch reaches Triton's ``JITFunction.run`` (which the caller intercepts; no
    kernel runs).  The kernels' cached launch configurations are keyed by architecture, so nothing cached for the
    device outside is used inside, and nothing recorded inside (the fast path is off) outlives it."""
    if arch not in _TABLE:
        raise ValueError(f"no launch table for {arch!r}; known: {', '.join(sorted(_TABLE))}")
    previous = _COMPILE_TARGET.arch
    _COMPILE_TARGET.arch = arch
    try:
        yield _TABLE[arch]
    finally:
        _COMPILE_TARGET.arch = previous
