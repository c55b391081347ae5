"""What runs the kernels, and the per-architecture launch parameters for it.

One table, keyed by the architecture the device reports (``sm_90``, ``gfx950``, ``gfx1201``...), gives the warp
(wavefront) size and the warps per program for a row of a given width.  On sm_90 (H200) the norm-family kernels'
warps at their widths come from launch-knob sweeps (``norm_warps``, ``layer_norm_warps``; docs/perf/kernels-h200.md);
the rest of the sm_90 row table is the generic rule.  The AMD entries follow the ROCm guidance the project started
from (wave64 on CDNA, wave32 on RDNA; 4/8/16 warps by row width) and have NOT run on AMD hardware.  ``measured``
says whether a whole entry comes from a tuning sweep on that architecture (none does yet).

:func:`arch_launch` gives the entry of a torch device, :func:`for_arch` the entry of an architecture by name (for
compiling for a device that is not here).
"""
from __future__ import annotations

import functools
import os
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

    def warps_for(self, block: int) -> int:
        """num_warps for a row kernel's block of ``block`` elements."""
        for width, warps in self.row_warps:
            if block <= width:
                return warps
        return self.row_warps[-1][1]


_TABLE: dict[str, ArchLaunch] = {
    # NVIDIA Hopper (H100/H200).
    "sm_90": ArchLaunch("sm_90", 32, ((512, 2), (1024, 4), (2048, 8), (4096, 8), (1 << 30, 16)), 2048, False,
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
                        native_half_math=True),
    # AMD CDNA3+/4 (MI300X gfx942, MI355X gfx950): wave64, so half the warps cover the same row.
    "gfx950": ArchLaunch("gfx950", 64, ((1024, 4), (4096, 8), (1 << 30, 16)), 2048, False),
    "gfx942": ArchLaunch("gfx942", 64, ((1024, 4), (4096, 8), (1 << 30, 16)), 2048, False),
    # AMD RDNA4 (R9700 gfx1201) and RDNA3 (gfx1100): wave32; nw=32 measured worst in the seed, so cap at 16.
    "gfx1201": ArchLaunch("gfx1201", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False),
    "gfx1100": ArchLaunch("gfx1100", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False),
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
    if device is None or device.type != "cuda":
        return _GENERIC
    return for_arch(device_arch(device.index or 0))


def row_num_warps(block: int, device: torch.device | None = None) -> int:
    return arch_launch(device).warps_for(block)
