"""The software stack this process runs on, as ``python -m orchestrator --version`` prints it: torch, Triton (with the
distribution that provides it), the launch path eager kernel calls take (and why), and the device stack (CUDA or HIP
version, the GPU driver where known, or ``cpu``).  Imports torch and Triton, nothing of Ray or Hydra."""

from __future__ import annotations

from typing import Any


def device_stack() -> dict[str, Any]:
    """``{"backend": "cuda"|"hip"|"cpu", "runtime": "cuda 13.0"|"hip 7.0.51831"|"", "driver": ..., "gpus": N}``:
    torch's build, and the driver from the vendor library (NVML, amdsmi) where it answers."""
    import torch

    from workers.device import libs as gpu_libs

    if torch.version.hip:
        backend, runtime = "hip", f"hip {torch.version.hip}"
    elif torch.version.cuda:
        backend, runtime = "cuda", f"cuda {torch.version.cuda}"
    else:
        return {"backend": "cpu", "runtime": "", "driver": None, "gpus": 0}
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not gpus:
        return {"backend": "cpu", "runtime": f"{runtime} build, no GPU visible", "driver": None, "gpus": 0}
    return {"backend": backend, "runtime": runtime, "driver": gpu_libs.driver_version(backend), "gpus": gpus}


def stack() -> dict[str, Any]:
    """torch, Triton, the launch path and the device stack of this process, as plain data."""
    import torch

    from kernels.fast_launch import launch_path
    from kernels.triton_dist import triton_distribution

    dist = triton_distribution()
    path = launch_path()
    return {
        "torch": torch.__version__,
        "triton": {"distribution": dist.name, "version": dist.version},
        "launch_path": {"path": path.name, "reason": path.reason},
        "device": device_stack(),
    }


def format_stack(s: dict[str, Any]) -> str:
    """The lines ``--version`` prints."""
    t, d = s["triton"], s["device"]
    triton = f"{t['version']} ({t['distribution']})" if t["version"] else "not importable"
    if d["backend"] == "cpu":
        dev = "cpu" + (f" ({d['runtime']})" if d["runtime"] else "")
    else:
        dev = f"{d['runtime']}, driver {d['driver'] or 'unknown'}, {d['gpus']} GPU(s)"
    return "\n".join(
        [
            f"torch        {s['torch']}",
            f"triton       {triton}",
            f"launch path  {s['launch_path']['path']}: {s['launch_path']['reason']}",
            f"device       {dev}",
        ]
    )
