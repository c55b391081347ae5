"""What runs the kernels, and the per-architecture launch parameters for it.

One table, keyed by the architecture the device reports (``sm_90``, ``gfx950``, ``gfx1201``...), gives the warp
(wavefront) size and the warps per program for a row of a given width.  On sm_90 (H200) the norm-family kernels'
warps at their widths come from launch-knob sweeps (``norm_warps``, ``layer_norm_warps``; docs/perf/kernels-h200.md);
the rest of the sm_90 row table is the generic rule.  The AMD entries follow the ROCm guidance the project started
from (wave64 on CDNA with 2/4/8 warps, wave32 on RDNA with 4/8/16, by row width) and have NOT run on AMD hardware;
their machine code is checked without it (:func:`compile_target`, workers/isa.py, docs/perf/amd-isa.md).
``measured`` says whether a whole entry comes from a tuning sweep on that architecture (none does yet).

:func:`arch_launch` gives the entry of a torch device, :func:`for_arch` the entry of an architecture by name (for
compiling for a device that is not here).
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
    # (row width, num_warps) for the norm-family row kernels (rms_norm, adaln_*, add_rms_norm_modulate) at one row per
    # program, measured on this architecture; these override row_warps at those widths
    norm_warps: tuple[tuple[int, int], ...] = ()
    # the same for the LayerNorm variant (adaln_layer_norm: two row reductions, mean then variance), by padded width
    layer_norm_warps: tuple[tuple[int, int], ...] = ()
    # kernels that reproduce PyTorch's per-op rounding in bf16/fp16 (rope_rotate_half with half tables) may multiply
    # and add in the half dtype itself, one correctly rounded op each, instead of in fp32 with a cast per op; only
    # where a GPU run compared the result with PyTorch's bit for bit and timed it
    native_half_math: bool = False
    # cross_attention's key tiles (kernels/cross_attention.py, keys_per_step), in keys x head dims: the largest it
    # takes in one pass, and one step of its loop over key blocks beyond that; (0, 0): always one pass
    attn_tile: tuple[int, int] = (0, 0)

    def warps_for(self, block: int) -> int:
        """num_warps for a row kernel's block of ``block`` elements."""
        for width, warps in self.row_warps:
            if block <= width:
                return warps
        return self.row_warps[-1][1]


# On AMD cross_attention takes at most 128 keys x 64 head dims in one pass (LTX-Video's tile), larger tiles in steps
# of 64 x 64: each warp holds its whole key and value operand tiles in registers, and head dim 128 or 256 keys in one
# pass spilled (kernels/cross_attention.py, keys_per_step; docs/perf/amd-isa.md).
_AMD_ATTN_TILE = (128 * 64, 64 * 64)

_TABLE: dict[str, ArchLaunch] = {
    # NVIDIA Hopper (H100/H200).
    "sm_90": ArchLaunch(
        "sm_90",
        32,
        ((512, 2), (1024, 4), (2048, 8), (4096, 8), (1 << 30, 16)),
        2048,
        False,
        # H200 (docs/perf/kernels-h200.md, launch knobs): at 2048-wide rows 4 warps beat
        # 8 for rms_norm/adaln_rms by 5-25 % launch-free at 22-104 MB, tie for
        # add_rms_norm_modulate; at 3072 (block 4096) 8 stays best
        norm_warps=((2048, 4),),
        # H200 (docs/perf/kernels-h200.md, launch knobs): adaln_layer_norm at
        # 1536-3072 wide rows, per call: 2 warps at block 2048 (17.1 against 18.5 us with 4),
        # 4 at block 4096 (16.9 against 19.3 with 8; 26.0 against 33.2 at 2432)
        layer_norm_warps=((2048, 2), (4096, 4)),
        # H200 (docs/perf/kernels-h200.md, RoPE): rope_rotate_half with
        # bf16 tables equal to transformers' bit for bit at the five grid shapes, 2-5 % faster per
        # call at 69-105 MB than with a cast per op
        native_half_math=True,
    ),
    # AMD CDNA3+/4 (MI300X gfx942, MI355X gfx950): wave64, so half the warps cover the same row (the generic rule's
    # lanes per row): 8 16-bit elements per lane, so rows load and store 128 bits a lane (dwordx4), where the
    # generic warps on wave64 gave 4 elements and 64-bit accesses (docs/perf/amd-isa.md).
    "gfx950": ArchLaunch("gfx950", 64, ((1024, 2), (4096, 4), (1 << 30, 8)), 2048, False, attn_tile=_AMD_ATTN_TILE),
    "gfx942": ArchLaunch("gfx942", 64, ((1024, 2), (4096, 4), (1 << 30, 8)), 2048, False, attn_tile=_AMD_ATTN_TILE),
    # AMD RDNA4 (R9700 gfx1201) and RDNA3 (gfx1100): wave32; nw=32 measured worst in the seed, so cap at 16.
    "gfx1201": ArchLaunch("gfx1201", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False, attn_tile=_AMD_ATTN_TILE),
    "gfx1100": ArchLaunch("gfx1100", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False, attn_tile=_AMD_ATTN_TILE),
}
# Anything else (other NVIDIA generations, the CPU interpreter): the generic row heuristic.
_GENERIC = ArchLaunch("generic", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False)


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


def arch_launch(device: torch.device | None = None) -> ArchLaunch:
    if _COMPILE_TARGET.arch is not None:
        return _TABLE[_COMPILE_TARGET.arch]
    if device is None or device.type != "cuda":
        return _GENERIC
    return for_arch(device_arch(device.index or 0))


def row_num_warps(block: int, device: torch.device | None = None) -> int:
    return arch_launch(device).warps_for(block)


class _CompileTarget(threading.local):
    arch: str | None = None  # inside compile_target(): the architecture whose launches are being compiled


_COMPILE_TARGET = _CompileTarget()


def compiling_for() -> str | None:
    """The architecture :func:`compile_target` compiles for (None outside it)."""
    return _COMPILE_TARGET.arch


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

    from kernels.launch_plans import forget_launches

    forget_launches()
    for name, module in list(sys.modules.items()):
        if name == "kernels" or name.startswith("kernels."):
            for value in list(vars(module).values()):
                wrapped = getattr(value, "__wrapped__", None)
                if (
                    callable(getattr(value, "cache_clear", None))
                    and getattr(value, "__module__", None) == name
                    and wrapped is not None
                    and "device" in inspect.signature(wrapped).parameters
                ):
                    value.cache_clear()
