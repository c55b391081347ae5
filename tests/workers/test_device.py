"""Device detection from recorded tool outputs (ROCm and CUDA paths on a CPU machine), on this machine, and the
Ray node labels."""

import json
import os
from pathlib import Path

import pytest
import torch

from workers.device import detect as device
from workers.spec import DeviceInfo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# What torch on ROCm reports that detection uses; everything else comes from the recorded tool output.
HIP_PROPS = {"backend": "hip", "index": 0, "torch": "2.9.0+rocm7.0", "triton": "3.5.0", "hip": "7.0.51831"}


def amd(rocminfo_file: str, **extra) -> DeviceInfo:
    return device.detect_from({**HIP_PROPS, **extra}, {device.ROCMINFO: read(rocminfo_file)}, env={})


def test_mi300x_rocm622():
    info = amd("rocminfo_mi300x_gfx942_rocm6.2.2.txt", gcnArchName="gfx942:sramecc+:xnack-")
    assert (info.vendor, info.arch, info.gpu_type) == ("amd", "gfx942", "mi300x")
    assert info.name == "AMD Instinct MI300X"
    assert info.compute_units == 304 and info.warp_size == 64
    assert info.memory_bytes == 201310208 * 1024
    assert info.driver == "6.8.5"  # the ROCk (amdgpu) module version rocminfo printed
    assert info.runtime == "hip 7.0"  # no amd-smi version and no version file: named after HIP, not guessed
    assert info.extra["chip_id"] == "0x74a1" and info.extra["gcn_arch"] == "gfx942:sramecc+:xnack-"


def test_mi300_class_with_generic_marketing_name():
    info = amd("rocminfo_gfx942_rocm7.1.1_gunrock-results.sysinfo.txt")
    assert info.gpu_type == "mi300x" and info.name == "AMD Instinct MI300X"
    assert info.extra["marketing_name"] == "AMD Radeon Graphics" and info.extra["chip_id"] == "0x74a9"
    assert info.arch == "gfx942" and info.compute_units == 304 and info.driver == "6.9.4"


def test_mi355x():
    info = amd("rocminfo_mi355x_gfx950_partial-agent.txt", gcnArchName="gfx950:sramecc+:xnack-")
    assert (info.arch, info.gpu_type, info.warp_size, info.compute_units) == ("gfx950", "mi355x", 64, 256)


def test_rx7900xtx_wave32():
    info = amd("rocminfo_rx7900xtx_gfx1100_rdna3_rocm6.0.2.txt", gcnArchName="gfx1100")
    assert (info.arch, info.gpu_type, info.warp_size, info.compute_units) == ("gfx1100", "rx7900xtx", 32, 96)
    assert info.name == "AMD Radeon RX 7900 XTX"


def test_rx6700xt_gfx1030():
    info = amd("rocminfo_rx6700xt_gfx1030_rdna2.txt", gcnArchName="gfx1030")
    assert (info.arch, info.gpu_type, info.warp_size, info.compute_units) == ("gfx1030", "rx6700xt", 32, 40)


def test_torch_facts_win_and_amd_smi_fills_versions():
    props = {
        **HIP_PROPS,
        "gcnArchName": "gfx942:sramecc+:xnack-",
        "multi_processor_count": 304,
        "total_memory": 205822885888,
        "name": "AMD Instinct MI300X",
    }
    tools = {
        device.ROCMINFO: read("rocminfo_mi300x_gfx942_rocm6.2.2.txt"),
        device.AMD_SMI_VERSION: "AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | "
        "ROCm version: 6.2.2 | amdgpu version: 6.8.5\n",
    }
    info = device.detect_from(props, tools, env={})
    assert info.memory_bytes == 205822885888 and info.runtime == "rocm 6.2.2" and info.driver == "6.8.5"
    assert "amd-smi version" in info.extra["sources"]
    # the ROCm version file is the fallback when amd-smi is missing
    tools = {device.ROCMINFO: tools[device.ROCMINFO], device.ROCM_VERSION_FILE: "7.0.2-56\n"}
    assert device.detect_from(props, tools, env={}).runtime == "rocm 7.0.2"


def test_visible_devices_pick_the_agent():
    text = read("rocminfo_mi300x_gfx942_rocm6.2.2.txt")
    # two GPU agents: the recorded one, and a copy with another chip id (an MI325X) as the second GPU
    second = text.split("*******                  \nAgent 3")[1].replace("29857(0x74a1)", "29861(0x74a5)")
    two = text.replace("*** Done ***", "*******                  \nAgent 4" + second)
    assert len(device.rocminfo.parse(two).gpus()) == 2
    props = {**HIP_PROPS, "gcnArchName": "gfx942:sramecc+:xnack-"}
    assert device.detect_from(props, {device.ROCMINFO: two}, env={}).gpu_type == "mi300x"
    chosen = device.detect_from(props, {device.ROCMINFO: two}, env={"HIP_VISIBLE_DEVICES": "1"})
    assert chosen.gpu_type == "mi325x"


def test_broken_tool_output_does_not_break_detection():
    info = device.detect_from(
        {**HIP_PROPS, "gcnArchName": "gfx950", "multi_processor_count": 256},
        {device.ROCMINFO: "garbage", device.AMD_SMI_STATIC: "{not json"},
        env={},
    )
    assert info.arch == "gfx950" and info.warp_size == 64 and info.compute_units == 256
    assert info.gpu_type == "amd-gfx950"  # no name to go by: a slug, never a guess


def test_h200_from_recorded_trace_properties_and_nvidia_smi():
    trace = json.loads(read("torch-profiler_chrome-trace_h200_torch2.11.0+cu130.json"))
    dp = trace["deviceProperties"][0]
    props = {
        "backend": "cuda",
        "index": 0,
        "name": dp["name"],
        "major": dp["computeMajor"],
        "minor": dp["computeMinor"],
        "multi_processor_count": dp["numSms"],
        "total_memory": dp["totalGlobalMem"],
        "warp_size": dp["warpSize"],
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "cuda": "13.0",
    }
    tools = {device.NVIDIA_SMI: read("nvidia-smi_query-gpu_csv-noheader-nounits_h200.csv")}
    info = device.detect_from(props, tools, env={})
    assert (info.vendor, info.name, info.arch, info.gpu_type) == ("nvidia", "NVIDIA H200", "sm_90", "h200")
    assert info.driver == "580.159.04" and info.runtime == "cuda 13.0"
    assert info.warp_size == 32 and info.compute_units == 132 and info.memory_bytes == 150109880320
    assert info.extra["compute_cap"] == "9.0"
    # without nvidia-smi: no driver, everything else from torch
    assert device.detect_from(props, {}, env={}).driver == ""


def test_cpu_props():
    info = device.detect_from(
        {
            "backend": "cpu",
            "cpu_model": "AMD EPYC 9654 96-Core Processor",
            "machine": "x86_64",
            "cpu_count": 192,
            "memory_bytes": 1 << 40,
            "torch": "2.13.0+cpu",
            "triton": "3.9.0",
        }
    )
    assert (info.vendor, info.gpu_type, info.arch, info.compute_units) == ("cpu", "cpu", "x86_64", 192)
    assert info.name == "AMD EPYC 9654 96-Core Processor" and info.warp_size == 0
    with pytest.raises(ValueError):
        device.detect_from({"backend": "tpu"})


def test_detect_on_this_machine():
    info = device.detect()
    assert info.torch == torch.__version__ and info.triton
    if torch.cuda.is_available():
        assert info.vendor in ("nvidia", "amd") and info.compute_units > 0 and info.warp_size in (32, 64)
        assert info.arch.startswith("sm_" if torch.version.hip is None else "gfx")
        assert len(device.detect_all()) == torch.cuda.device_count()
    else:
        assert info.vendor == "cpu" and info.gpu_type == "cpu" and info.compute_units == os.cpu_count()
        cpuinfo = Path("/proc/cpuinfo")
        if cpuinfo.is_file() and "model name" in cpuinfo.read_text():
            assert info.name in cpuinfo.read_text()
        assert device.detect_all() == [info]
    assert DeviceInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info


def test_run_tool_never_raises():
    assert device.run_tool(["kernelfleet-no-such-tool"]) is None
    assert device.run_tool(["false"]) is None
    assert device.run_tool(["sleep", "5"], timeout=0.2) is None
    assert device.run_tool(["echo", "hi"]) == "hi\n"
    assert device.run_tool([]) is None


def ray_label_check():
    """Ray's own validator of node labels (raises ValueError on an invalid key or value)."""
    return pytest.importorskip("ray._private.label_utils").validate_node_label_syntax


def test_labels_are_valid_ray_labels():
    validate_node_label_syntax = ray_label_check()
    info = amd("rocminfo_mi355x_gfx950_partial-agent.txt", gcnArchName="gfx950:sramecc+:xnack-")
    info.runtime = "rocm 7.0.2"
    lab = device.labels(info)
    assert lab == {
        "kernelfleet.io/gpu": "mi355x",
        "kernelfleet.io/arch": "gfx950",
        "kernelfleet.io/vendor": "amd",
        "kernelfleet.io/torch": "2.9.0-rocm7.0",
        "kernelfleet.io/triton": "3.5.0",
        "kernelfleet.io/runtime": "rocm-7.0.2",
        "kernelfleet.io/warp-size": "64",
    }
    validate_node_label_syntax(lab)  # Ray's own check: raises on an invalid key or value
    cpu = device.labels(
        device.detect_from(
            {"backend": "cpu", "cpu_model": "x", "machine": "x86_64", "torch": "2.13.0+cpu", "triton": "3.9.0"}
        )
    )
    assert cpu["kernelfleet.io/gpu"] == "cpu" and "kernelfleet.io/warp-size" not in cpu
    validate_node_label_syntax(cpu)
    validate_node_label_syntax(device.labels(device.detect()))


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("2.13.0+cpu", "2.13.0-cpu"),
        ("cuda 13.0", "cuda-13.0"),
        ("+weird+", "weird"),
        ("3.6.0+git1234abcd", "3.6.0-git1234abcd"),
        ("", ""),
    ],
)
def test_label_value(raw, expected):
    assert device.label_value(raw) == expected


def test_label_value_long_and_odd_inputs_stay_valid():
    validate_node_label_syntax = ray_label_check()
    for raw in ("a" * 100, "-_." * 30 + "x", "x" + "." * 70 + "y", "2.7.0a0+git" + "f" * 60 + "-", "é ü ß"):
        v = device.label_value(raw)
        assert len(v) <= 63
        validate_node_label_syntax({"kernelfleet.io/x": v})
