"""The vendors' management libraries, in-process: NVML (``nvidia-ml-py``, module ``pynvml``) on NVIDIA and ``amdsmi``
on ROCm.  What the ``nvidia-smi``/``amd-smi`` text tools print, read without a child process: the GPUs' static facts
for device detection (:func:`nvml_gpus`, :func:`amdsmi_gpus`, shaped as the text parsers' records), the driver
version, and one telemetry reading (SM/GFX clock, power draw, power limit) of one GPU (:func:`reader_for`).

Each library is imported and initialised once per process (:func:`nvml`, :func:`amdsmi`); where it is missing or
fails to initialise (no driver, a CPU machine) the functions answer None and the callers fall back to the text tools.
The calls and their units are the libraries' own: NVML reports power in milliwatts and clocks in MHz; amdsmi reports
socket power in watts (``"N/A"`` where unsupported), the power cap in microwatts and clocks in MHz
(amdsmi's ``amdsmi_interface.py``; ROCm's ``amdsmi_power_cap_info_t``).  Nothing here has run against a real amdsmi
on AMD hardware; its tests use module fakes shaped like the real APIs.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any, Callable

from workers.device.parsers.amdsmi import AmdGpuStatic
from workers.device.parsers.nvidia_smi import NvidiaGpu

NVML_CLOCK_SM = 1  # pynvml.NVML_CLOCK_SM


@dataclass(frozen=True)
class Reading:
    """One telemetry reading of a GPU (None where the library could not say)."""

    sm_mhz: float | None
    power_w: float | None
    power_limit_w: float | None


def _load(name: str, init: str):
    try:
        mod = importlib.import_module(name)
        getattr(mod, init)()
    except Exception:  # noqa: BLE001 - missing, no driver, no GPU: the text tools take over
        return None
    return mod


@functools.cache
def nvml():
    """``pynvml``, initialised; None where it is not installed or NVML does not start."""
    return _load("pynvml", "nvmlInit")


@functools.cache
def amdsmi():
    """``amdsmi``, initialised; None where it is not installed or does not start."""
    return _load("amdsmi", "amdsmi_init")


def library_for(backend: str):
    """``("nvml", pynvml)`` on ``cuda``, ``("amdsmi", amdsmi)`` on ``hip``; ``(name, None)`` where it is missing."""
    if backend == "cuda":
        return "nvml", nvml()
    if backend == "hip":
        return "amdsmi", amdsmi()
    return "", None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _number(value: Any) -> float | None:
    """A library's number, None for its "N/A" (amdsmi) or anything else that is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).split()[0])
    except (ValueError, IndexError):
        return None


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - one unsupported query must not lose the others
        return None


# ------------------------------------------------------------------------------------------------ static facts


def nvml_gpus(lib) -> list[NvidiaGpu]:
    """Every GPU NVML sees, as ``nvidia-smi --query-gpu`` records (NVML's indices are physical, as nvidia-smi's)."""
    driver = _safe(lambda: _text(lib.nvmlSystemGetDriverVersion()))
    gpus = []
    for i in range(int(lib.nvmlDeviceGetCount())):
        h = lib.nvmlDeviceGetHandleByIndex(i)
        mem = _safe(lambda: lib.nvmlDeviceGetMemoryInfo(h).total)
        cap = _safe(lambda: lib.nvmlDeviceGetCudaComputeCapability(h))
        gpus.append(
            NvidiaGpu(
                index=i,
                name=_safe(lambda: _text(lib.nvmlDeviceGetName(h))) or "",
                memory_total_mib=int(mem) // (1 << 20) if mem else None,
                driver_version=driver,
                compute_cap=f"{cap[0]}.{cap[1]}" if cap else None,
            )
        )
    return gpus


def _gfx(target: Any) -> str | None:
    text = _text(target).strip() if target not in (None, "N/A") else ""
    if not text:
        return None
    return text if text.startswith("gfx") else f"gfx{text}"


def amdsmi_gpus(lib) -> list[AmdGpuStatic]:
    """Every GPU amdsmi sees, as ``amd-smi static`` records (``amdsmi_get_gpu_asic_info``, ``_device_bdf``,
    ``_vram_info`` in MB, ``_driver_info``)."""
    out = []
    for i, h in enumerate(lib.amdsmi_get_processor_handles()):
        asic = _safe(lambda: lib.amdsmi_get_gpu_asic_info(h)) or {}
        vram = _safe(lambda: lib.amdsmi_get_gpu_vram_info(h)) or {}
        driver = _safe(lambda: lib.amdsmi_get_gpu_driver_info(h)) or {}
        device_id = asic.get("device_id")
        try:
            chip = int(device_id, 16) if isinstance(device_id, str) else int(device_id) if device_id else None
        except ValueError:
            chip = None
        cus = _number(asic.get("num_compute_units", asic.get("num_of_compute_units")))
        vram_mb = _number(vram.get("vram_size"))
        market = asic.get("market_name")
        out.append(
            AmdGpuStatic(
                gpu=i,
                market_name=_text(market) if market not in (None, "N/A") else None,
                device_id=chip,
                target_graphics_version=_gfx(asic.get("target_graphics_version")),
                compute_units=int(cus) if cus else None,
                bdf=_safe(lambda: _text(lib.amdsmi_get_gpu_device_bdf(h))),
                vram_bytes=int(vram_mb) << 20 if vram_mb else None,
                driver_name=driver.get("driver_name"),
                driver_version=driver.get("driver_version"),
                compute_partition=None,
                memory_partition=None,
                raw={"source": "amdsmi"},
            )
        )
    return out


def driver_version(backend: str) -> str | None:
    """The GPU driver's version from the vendor library, None where it cannot say."""
    _, lib = library_for(backend)
    if lib is None:
        return None
    if backend == "cuda":
        return _safe(lambda: _text(lib.nvmlSystemGetDriverVersion()))
    gpus = _safe(lambda: amdsmi_gpus(lib)) or []
    return next((g.driver_version for g in gpus if g.driver_version), None)


# ------------------------------------------------------------------------------------------------ telemetry


def nvml_reader(lib, uuid: str) -> Callable[[], Reading]:
    """A reading of the GPU with this UUID (``GPU-...``, as torch's device properties give it)."""
    h = lib.nvmlDeviceGetHandleByUUID(uuid)

    def read() -> Reading:
        sm = _safe(lambda: lib.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM))
        mw = _safe(lambda: lib.nvmlDeviceGetPowerUsage(h))
        limit = _safe(lambda: lib.nvmlDeviceGetEnforcedPowerLimit(h))
        return Reading(_number(sm), mw / 1000.0 if mw is not None else None, limit / 1000.0 if limit else None)

    return read


def amdsmi_reader(lib, bdf: str) -> Callable[[], Reading]:
    """A reading of the GPU at this PCI address (``0000:c1:00.0``)."""
    handles = [h for h in lib.amdsmi_get_processor_handles() if _text(lib.amdsmi_get_gpu_device_bdf(h)) == bdf]
    if not handles:
        raise LookupError(f"amdsmi sees no GPU at {bdf}")
    h = handles[0]
    gfx = lib.AmdSmiClkType.GFX

    def read() -> Reading:
        clock = _safe(lambda: lib.amdsmi_get_clock_info(h, gfx)) or {}
        power = _safe(lambda: lib.amdsmi_get_power_info(h)) or {}
        cap = _safe(lambda: lib.amdsmi_get_power_cap_info(h)) or {}
        watts = _number(power.get("current_socket_power"))
        if watts is None:
            watts = _number(power.get("average_socket_power"))
        cap_uw = _number(cap.get("power_cap"))
        return Reading(_number(clock.get("clk", clock.get("cur_clk"))), watts, cap_uw / 1e6 if cap_uw else None)

    return read


def reader_for(backend: str, uuid: str | None = None, bdf: str | None = None):
    """``(source, read)`` for one GPU: NVML by UUID on ``cuda``, amdsmi by PCI address on ``hip``; ``(None, why)``
    where the library is missing or does not know the GPU."""
    name, lib = library_for(backend)
    if lib is None:
        return None, f"{name or backend} not available"
    try:
        if backend == "cuda":
            if not uuid:
                return None, "no GPU UUID from torch"
            return name, nvml_reader(lib, uuid)
        if not bdf:
            return None, "no PCI address from torch"
        return name, amdsmi_reader(lib, bdf)
    except Exception as exc:  # noqa: BLE001 - an unknown GPU: the fallback says why
        return None, f"{name}: {exc}"
