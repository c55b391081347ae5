"""Made-up devices of a two-type fleet (an H200 and an MI355X) for a store filled with synthetic data: the dashboard
scale benchmark (benchmarks/dashboard_scale.py) and the store tests build their device rows here."""

from __future__ import annotations

from typing import Any

from workers.spec import DeviceInfo

# GPU type -> (vendor, name, arch, runtime, warp size, copy bandwidth GB/s)
DEVICES = {
    "h200": ("nvidia", "NVIDIA H200", "sm_90", "cuda 13.0", 32, 4248.7),
    "mi355x": ("amd", "AMD Instinct MI355X", "gfx950", "rocm 7.0.2", 64, 6100.0),
}


def device_row(gpu_type: str = "h200", torch: str = "2.9.0", triton: str = "3.5.0") -> dict[str, Any]:
    """A device as a job result carries it (DeviceInfo.to_dict)."""
    vendor, name, arch, runtime, warp, _ = DEVICES[gpu_type]
    return DeviceInfo(
        vendor=vendor,
        name=name,
        arch=arch,
        warp_size=warp,
        compute_units=132,
        memory_bytes=141 * 2**30,
        driver="580.65",
        runtime=runtime,
        torch=torch,
        triton=triton,
        gpu_type=gpu_type,
    ).to_dict()
