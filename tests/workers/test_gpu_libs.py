"""The vendor libraries in-process (workers.device.libs): device facts, the driver version and the clock log's readings
from NVML and amdsmi, with module fakes shaped like the real APIs, and the text tools as the fallback.

The fakes follow the libraries' own signatures and units: nvidia-ml-py's ``pynvml`` (power in mW, the enforced power
limit in mW, ``nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM)`` in MHz, names as ``str``), and amdsmi's
``amdsmi_interface.py`` (``amdsmi_get_clock_info(handle, AmdSmiClkType.GFX)`` -> ``{"clk": MHz, ...}``,
``amdsmi_get_power_info`` -> socket power in W or ``"N/A"``, ``amdsmi_get_power_cap_info`` -> ``power_cap`` in uW,
``amdsmi_get_gpu_asic_info`` with ``device_id`` as a hex string, ``amdsmi_get_gpu_vram_info`` -> ``vram_size`` in MB).
"""

from __future__ import annotations

import enum
import sys
import time
import types
from pathlib import Path

import pytest

from workers.device import clocks as gpu_clocks
from workers.device import detect as device
from workers.device import libs as gpu_libs
from workers.device.clocks import ClockLog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


class NVMLError(Exception):
    pass


def fake_pynvml(power_mw=(120_000, 650_000, 699_000), clocks=(1980, 1755, 1620)) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.NVMLError = NVMLError
    m.NVML_CLOCK_SM = 1
    state = {"reads": 0}
    uuids = ["GPU-e4109b10-aaaa-bbbb-cccc-000000000000", "GPU-e4109b10-aaaa-bbbb-cccc-000000000001"]

    m.nvmlInit = lambda: None
    m.nvmlSystemGetDriverVersion = lambda: "580.95.05"
    m.nvmlDeviceGetCount = lambda: 2
    m.nvmlDeviceGetHandleByIndex = lambda i: ("h", i)

    def by_uuid(uuid):
        if uuid not in uuids:
            raise NVMLError("Not Found")
        return ("h", uuids.index(uuid))

    m.nvmlDeviceGetHandleByUUID = by_uuid
    m.nvmlDeviceGetName = lambda h: "NVIDIA H200"
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=150754820096, free=0, used=0)
    m.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)

    def clock(h, kind):
        assert kind == m.NVML_CLOCK_SM
        return clocks[min(state["reads"], len(clocks) - 1)]

    def power(h):
        value = power_mw[min(state["reads"], len(power_mw) - 1)]
        state["reads"] += 1
        return value

    m.nvmlDeviceGetClockInfo = clock
    m.nvmlDeviceGetPowerUsage = power
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700_000
    return m


class AmdSmiClkType(enum.IntEnum):
    SYS = 0
    GFX = 0
    MEM = 4


def fake_amdsmi() -> types.ModuleType:
    m = types.ModuleType("amdsmi")
    m.AmdSmiClkType = AmdSmiClkType
    m.amdsmi_init = lambda *flags: None
    handles = ["handle-c1", "handle-23"]
    m.amdsmi_get_processor_handles = lambda: handles
    m.amdsmi_get_gpu_device_bdf = lambda h: {"handle-c1": "0000:c1:00.0", "handle-23": "0000:23:00.0"}[h]
    m.amdsmi_get_gpu_asic_info = lambda h: {
        "market_name": "AMD Instinct MI300X",
        "vendor_id": "0x1002",
        "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
        "subvendor_id": "0x1002",
        "device_id": "0x74a1",
        "rev_id": "0x00",
        "asic_serial": "0x5F1C2D3B4A596877",
        "oam_id": 0,
        "num_compute_units": 304,
        "target_graphics_version": "gfx942",
    }
    m.amdsmi_get_gpu_vram_info = lambda h: {"vram_type": 13, "vram_vendor": "SAMSUNG", "vram_size": 196592}
    m.amdsmi_get_gpu_driver_info = lambda h: {
        "driver_name": "amdgpu",
        "driver_version": "6.10.5",
        "driver_date": "2015/01/01 00:00",
    }

    def clock_info(h, kind):
        assert kind is AmdSmiClkType.GFX
        return {"clk": 2100, "min_clk": 500, "max_clk": 2100, "clk_locked": False, "clk_deep_sleep": False}

    m.amdsmi_get_clock_info = clock_info
    m.amdsmi_get_power_info = lambda h: {
        "current_socket_power": "N/A",
        "average_socket_power": 512,
        "gfx_voltage": 0,
        "soc_voltage": 0,
        "mem_voltage": 0,
        "power_limit": 750,
    }
    m.amdsmi_get_power_cap_info = lambda h: {
        "power_cap": 750_000_000,
        "default_power_cap": 750_000_000,
        "dpm_cap": 0,
        "min_power_cap": 0,
        "max_power_cap": 750_000_000,
    }
    return m


@pytest.fixture()
def libs(monkeypatch):
    """Install fake modules: ``libs(pynvml=..., amdsmi=...)``; None leaves a module unimportable."""

    def install(pynvml=None, amdsmi=None):
        for name, mod in (("pynvml", pynvml), ("amdsmi", amdsmi)):
            monkeypatch.setitem(sys.modules, name, mod)  # None in sys.modules: ImportError on import
        gpu_libs.nvml.cache_clear()
        gpu_libs.amdsmi.cache_clear()

    yield install
    gpu_libs.nvml.cache_clear()
    gpu_libs.amdsmi.cache_clear()


def test_nvml_facts_replace_nvidia_smi_in_detection(libs):
    libs(pynvml=fake_pynvml())
    facts = device.collect_library_facts("cuda")
    gpus = facts[device.NVML]
    assert [(g.index, g.name, g.memory_total_mib, g.driver_version, g.compute_cap) for g in gpus] == [
        (0, "NVIDIA H200", 143771, "580.95.05", "9.0"),
        (1, "NVIDIA H200", 143771, "580.95.05", "9.0"),
    ]
    props = {"backend": "cuda", "index": 0, "name": "NVIDIA H200", "major": 9, "minor": 0, "cuda": "13.0"}
    info = device.detect_from(props, {}, env={"CUDA_VISIBLE_DEVICES": "1"}, libs=facts)
    assert info.driver == "580.95.05" and info.extra["sources"] == ["torch", "nvml"]
    assert info.extra["compute_cap"] == "9.0" and info.gpu_type == "h200"
    assert gpu_libs.driver_version("cuda") == "580.95.05"


def test_without_nvml_the_text_tool_answers(libs):
    libs(pynvml=None)
    assert device.collect_library_facts("cuda") == {} and gpu_libs.driver_version("cuda") is None
    text = (FIXTURES / "nvidia-smi_query-gpu_csv-noheader-nounits_h200.csv").read_text()
    props = {"backend": "cuda", "index": 0, "name": "NVIDIA H200", "major": 9, "minor": 0, "cuda": "13.0"}
    info = device.detect_from(props, {device.NVIDIA_SMI: text}, env={})
    assert info.extra["sources"] == ["torch", "nvidia-smi"] and info.driver


def test_amdsmi_facts_replace_amd_smi_static_in_detection(libs):
    libs(amdsmi=fake_amdsmi())
    facts = device.collect_library_facts("hip")
    first = facts[device.AMDSMI][0]
    assert (first.market_name, first.device_id, first.target_graphics_version, first.compute_units) == (
        "AMD Instinct MI300X",
        0x74A1,
        "gfx942",
        304,
    )
    assert first.bdf == "0000:c1:00.0" and first.pci_bus == 0xC1 and first.vram_bytes == 196592 << 20
    rocminfo = (FIXTURES / "rocminfo_mi300x_gfx942_rocm6.2.2.txt").read_text()
    props = {"backend": "hip", "index": 0, "gcnArchName": "gfx942:sramecc+:xnack-", "hip": "6.2.41133"}
    info = device.detect_from(props, {device.ROCMINFO: rocminfo}, env={}, libs=facts)
    assert "amdsmi" in info.extra["sources"] and "amd-smi static" not in info.extra["sources"]
    assert info.driver == "6.10.5" and info.gpu_type == "mi300x"
    assert gpu_libs.driver_version("hip") == "6.10.5"


def test_nvml_clock_log_samples_in_process(libs, monkeypatch):
    """The log's readings come from NVML: mW -> W, the enforced limit, the SM clock; one reading when the stretch
    starts, one every 200 ms, one when it ends."""
    libs(pynvml=fake_pynvml())
    source, read = gpu_libs.reader_for("cuda", uuid="GPU-e4109b10-aaaa-bbbb-cccc-000000000001")
    assert source == "nvml"
    monkeypatch.setattr(gpu_clocks, "INTERVAL_MS", 20)
    log = ClockLog("GPU-e4109b10-aaaa-bbbb-cccc-000000000001", reader=read, source=source)
    with log:
        time.sleep(0.2)
    s = log.summary()
    assert s["source"] == "nvml" and s["samples"] == len(log.samples) >= 3
    assert log.samples[0] == gpu_clocks.Sample(1980.0, 120.0, 700.0)
    assert s["sm_mhz_min"] == 1620.0 and s["power_w_max"] == 699.0 and s["power_limit_w"] == 700.0
    assert s["at_power_limit"] > 0.5


def test_amdsmi_clock_log_reads_the_gpu_at_its_pci_address(libs):
    libs(amdsmi=fake_amdsmi())
    source, read = gpu_libs.reader_for("hip", bdf="0000:23:00.0")
    assert source == "amdsmi"
    assert read() == gpu_libs.Reading(2100.0, 512.0, 750.0)  # "N/A" current power: the average; cap uW -> W
    assert gpu_libs.reader_for("hip", bdf="0000:99:00.0") == (None, "amdsmi: amdsmi sees no GPU at 0000:99:00.0")
    with ClockLog("0000:23:00.0", reader=read, source=source) as log:
        pass
    assert log.summary()["source"] == "amdsmi" and log.summary()["samples"] == 2


def test_a_failing_library_ends_the_log_with_an_error(libs):
    libs(pynvml=fake_pynvml())

    def broken():
        raise NVMLError("GPU is lost")

    with ClockLog("GPU-x", reader=broken, source="nvml") as log:
        pass
    assert log.summary() == {"error": "nvml reading failed: GPU is lost", "source": "nvml"}


def test_missing_libraries_fall_back(libs, monkeypatch):
    libs(pynvml=None, amdsmi=None)
    assert gpu_libs.reader_for("cuda", uuid="GPU-x") == (None, "nvml not available")
    assert gpu_libs.reader_for("hip", bdf="0000:23:00.0") == (None, "amdsmi not available")
    monkeypatch.setattr(gpu_clocks, "find_tool", lambda name: None)
    monkeypatch.setattr(gpu_clocks.torch.version, "hip", "6.2.41133")
    assert ClockLog.for_device(gpu_clocks.torch.device("cuda")).summary() == {
        "skipped": "no clock log on ROCm without amdsmi (amdsmi not available)"
    }
