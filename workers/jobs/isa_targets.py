"""The architectures an ``isa`` job compiles for, and the memory bandwidth each one's GPU is published with.

Each target names the Triton backend target (``GPUTarget``), the fleet's GPU type whose launch table and bandwidth
it stands for, and that GPU's datasheet memory bandwidth, from which the job derives a lower bound on a kernel's time
(the byte model over the bandwidth: an estimate, never a measurement).  Where the project has measured a device's
copy ceiling (the H200: 4229 GB/s, docs/perf/kernels-h200.md) that bound is given too.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.device.gpu_types import BY_SHORT


def cannot_run(figures: dict, target: "CompileTarget") -> str | None:
    """Why a launch compiled for ``target`` would be refused there (its resources beyond what one program may hold),
    from its figures (:func:`workers.jobs.isa.analyse`), or None when it can run."""
    lds = figures.get("lds_bytes") or 0
    if lds > target.lds_limit:
        return f"shared memory/LDS {lds} B over the {target.arch} limit of {target.lds_limit} B a program"
    regs, threads = figures.get("registers") or 0, figures.get("workgroup_size") or 0
    if target.block_registers and regs * threads > target.block_registers:
        return (
            f"{regs} registers x {threads} threads = {regs * threads} over the {target.arch} limit of "
            f"{target.block_registers} registers a block"
        )
    return None


@dataclass(frozen=True)
class CompileTarget:
    arch: str  # the launch table's key (kernels/launch.py) and the device arch a measured result would carry
    backend: str  # Triton's backend: "hip" or "cuda"
    warp_size: int
    gpu_type: str  # the fleet's short name (workers/device/gpu_types.py)
    peak_gbs: float  # published memory bandwidth, GB/s
    memory: str  # what the bandwidth is of
    copy_gbs: float | None = None  # the copy ceiling measured on this GPU type, GB/s, where the project has one
    copy_source: str = ""
    # registers one block may hold (NVIDIA: 64 Ki 32-bit registers a block); 0 where the compiler bounds them itself
    # (AMD: the workgroup size is a launch bound of the code, so VGPRs beyond it spill)
    block_registers: int = 0

    @property
    def lds_limit(self) -> int:
        """The most LDS / shared memory one program may allocate, bytes (the kernels' own table,
        :attr:`kernels.arch.ArchLaunch.shared_memory`): a launch over it cannot run."""
        from kernels.arch import for_arch

        return for_arch(self.arch).shared_memory

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
        CompileTarget("gfx950", "hip", 64, "mi355x", 8000.0, "HBM3E, 8 TB/s"),
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
            block_registers=64 * 1024,
        ),
    )
}
DEFAULT_ARCHS = ("gfx950", "gfx1201", "gfx942")


def get(arch: str) -> CompileTarget:
    try:
        return TARGETS[arch]
    except KeyError:
        raise ValueError(f"unknown compile target {arch!r}; allowed: {', '.join(TARGETS)}") from None
