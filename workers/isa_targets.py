"""The architectures an ``isa`` job compiles for, and the memory bandwidth each one's GPU is published with.

Each target names the Triton backend target (``GPUTarget``), the fleet's GPU type whose launch table and bandwidth
it stands for, and that GPU's datasheet memory bandwidth, from which the job derives a lower bound on a kernel's time
(the byte model over the bandwidth: an estimate, never a measurement).  Where the project has measured a device's
copy ceiling (the H200: 4229 GB/s, docs/perf/kernels-h200.md) that bound is given too.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.gpu_types import BY_SHORT


@dataclass(frozen=True)
class CompileTarget:
    arch: str  # the launch table's key (kernels/launch.py) and the device arch a measured result would carry
    backend: str  # Triton's backend: "hip" or "cuda"
    warp_size: int
    gpu_type: str  # the fleet's short name (workers/gpu_types.py)
    peak_gbs: float  # published memory bandwidth, GB/s
    memory: str  # what the bandwidth is of
    copy_gbs: float | None = None  # the copy ceiling measured on this GPU type, GB/s, where the project has one
    copy_source: str = ""
    # the most LDS / shared memory one program may allocate, bytes (CDNA3 64 KiB, CDNA4 160 KiB, RDNA4 64 KiB a
    # workgroup; Hopper 227 KiB of opt-in shared memory a block): a launch over it cannot run
    lds_limit: int = 65536

    @property
    def vendor(self) -> str:
        return "amd" if self.backend == "hip" else "nvidia"

    @property
    def full_name(self) -> str:
        return BY_SHORT[self.gpu_type].full_name

    def gpu_target(self):
        from triton.backends.compiler import GPUTarget

        if self.backend == "cuda":
            return GPUTarget("cuda", int(self.arch.removeprefix("sm_")), self.warp_size)
        return GPUTarget("hip", self.arch, self.warp_size)


TARGETS: dict[str, CompileTarget] = {
    t.arch: t
    for t in (
        CompileTarget("gfx950", "hip", 64, "mi355x", 8000.0, "HBM3E, 8 TB/s", lds_limit=160 * 1024),
        CompileTarget("gfx942", "hip", 64, "mi300x", 5300.0, "HBM3, 5.3 TB/s"),
        CompileTarget("gfx1201", "hip", 32, "r9700", 640.0, "GDDR6, 640 GB/s"),
        CompileTarget(
            "sm_90",
            "cuda",
            32,
            "h200",
            4800.0,
            "HBM3E, 4.8 TB/s",
            copy_gbs=4229.0,
            copy_source="docs/perf/kernels-h200.md (measured copy ceiling)",
            lds_limit=227 * 1024,
        ),
    )
}
DEFAULT_ARCHS = ("gfx950", "gfx1201", "gfx942")


def get(arch: str) -> CompileTarget:
    try:
        return TARGETS[arch]
    except KeyError:
        raise ValueError(f"unknown compile target {arch!r}; allowed: {', '.join(TARGETS)}") from None
