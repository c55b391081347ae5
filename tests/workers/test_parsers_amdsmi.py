"""amd-smi parser: text blocks, both JSON shapes, metric leaves, N/A, and ``amd-smi version``."""

import json
from pathlib import Path

from workers.device.parsers import amdsmi

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_list_text_blocks():
    gpus = amdsmi.parse_text(read("amd-smi_list_text_rocm6.3-changelog.txt"))
    assert [g["gpu"] for g in gpus] == [0, 1]
    assert gpus[0]["BDF"] == "0000:23:00.0" and gpus[0]["KFD_ID"] == "45412" and gpus[0]["NODE_ID"] == "1"
    assert gpus[1]["BDF"] == "0000:26:00.0" and gpus[1]["KFD_ID"] == "59881"
    assert gpus[1]["UUID"] == "<redacted>"


def test_static_asic_text_mi308x():
    (s,) = amdsmi.parse_static(read("amd-smi_static-asic_text_mi308x_rocm6.3-changelog.txt"))
    assert s.gpu == 0
    assert s.market_name == "MI308X"
    assert s.device_id == 0x74A2
    assert s.compute_units == 20  # a CPX partition
    assert s.target_graphics_version == "gfx942"
    assert s.vram_bytes is None and s.driver_version is None and s.bdf is None


def test_static_partition_text():
    (s,) = amdsmi.parse_static(read("amd-smi_static-partition_text_rocm6.3-changelog.txt"))
    assert s.compute_partition == "CPX" and s.memory_partition == "NPS4"
    assert s.market_name is None


def test_metric_json_bare_list_and_value_unit_leaves():
    (gpu,) = amdsmi.parse_json(read("amd-smi_metric-power_json_rocm6.1-changelog.json"))
    assert gpu["gpu"] == 0
    assert amdsmi.leaf_value(amdsmi.lookup(gpu, "power", "socket_power")) == (10, "W")
    assert amdsmi.leaf_value(amdsmi.lookup(gpu, "POWER", "Mem_Voltage")) == (1250, "mV")  # case-insensitive
    assert amdsmi.leaf_value(amdsmi.lookup(gpu, "power", "throttle_status")) == ("UNTHROTTLED", "")
    assert amdsmi.lookup(gpu, "power", "no_such_key") is None


def test_gpu_data_wrapper_reads_the_same_as_a_bare_list():
    bare = read("amd-smi_topology-a-t_json_rocm6.1.1-changelog.json")
    wrapped = json.dumps({"gpu_data": json.loads(bare)})  # the amd-smi >= 26.x shape
    assert amdsmi.parse_json(wrapped) == amdsmi.parse_json(bare)
    gpus = amdsmi.parse_json(bare)
    assert [g["bdf"] for g in gpus] == ["0000:08:00.0", "0000:44:00.0"]
    assert gpus[1]["links"][1]["link_type"] == "SELF" and gpus[1]["links"][0]["link_status"] == "DISABLED"


def test_na_values():
    assert amdsmi.leaf_value("N/A") == (None, "")
    assert amdsmi.leaf_value({"value": "N/A", "unit": "W"}) == (None, "W")
    gpus = amdsmi.parse_text("GPU: 0\n    ASIC:\n        MARKET_NAME: N/A\n        DEVICE_ID: 0x75a3\n")
    assert gpus[0]["ASIC"]["MARKET_NAME"] is None
    # No real `amd-smi static --json` was recorded: this document follows the documented 26.x shape
    # ({"gpu_data": [...]},
    # {"value", "unit"} leaves, "N/A" strings) with the lower-cased keys of the recorded text form.
    (s,) = amdsmi.parse_static(
        json.dumps(
            {
                "gpu_data": [
                    {
                        "gpu": 3,
                        "asic": {"market_name": "N/A", "device_id": "0x75a3", "num_compute_units": 256},
                        "bus": {"bdf": "0000:65:00.0"},
                        "vram": {"size": {"value": 294896, "unit": "MB"}},
                        "driver": {"name": "amdgpu", "version": "6.16.13"},
                    }
                ]
            }
        )
    )
    assert s.gpu == 3 and s.market_name is None and s.device_id == 0x75A3 and s.compute_units == 256
    assert s.pci_bus == 0x65 and s.vram_bytes == 294896 * 1024**2 and s.driver_version == "6.16.13"


def test_version_line():
    # the line the ROCm install docs show for `amd-smi version`
    v = amdsmi.parse_version(
        "AMDSMI Tool: 26.1.0+cd50d9e0 | AMDSMI Library version: 26.1.0 | ROCm version: 7.10.0 | "
        "amdgpu version: 6.16.6 | amd_hsmp version: N/A\n"
    )
    assert amdsmi.rocm_version(v) == "7.10.0"
    assert amdsmi.amdgpu_version(v) == "6.16.6"
    assert v["AMDSMI Tool"] == "26.1.0+cd50d9e0"
    assert "amd_hsmp version" not in v  # N/A dropped
    assert (
        amdsmi.rocm_version(
            amdsmi.parse_version("AMDSMI Tool: 24.5.1+c5106a9 | AMDSMI Library version: 24.5.2.0 | ROCm version: 6.1.2")
        )
        == "6.1.2"
    )
