"""nvidia-smi --query-gpu CSV, with and without header and units (recorded on an H200)."""

from pathlib import Path

import pytest

from workers.device.parsers import nvidia_smi

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_noheader_nounits_h200():
    (gpu,) = nvidia_smi.parse_gpus(read("nvidia-smi_query-gpu_csv-noheader-nounits_h200.csv"))
    assert gpu.index == 0 and gpu.name == "NVIDIA H200"
    assert gpu.memory_total_mib == 143771 and gpu.memory_bytes == 143771 * 1024 * 1024
    assert gpu.driver_version == "580.159.04" and gpu.compute_cap == "9.0" and gpu.sm == "sm_90"


def test_header_with_units_in_names_and_values():
    text = read("nvidia-smi_query-gpu_name-memtotal-driver_csv_h200.csv")
    assert nvidia_smi.parse_query(text) == [
        {"name": "NVIDIA H200", "memory.total": "143771", "driver_version": "580.159.04"}
    ]
    # the same file read with the fields given: the header is recognised, not taken for a GPU
    (gpu,) = nvidia_smi.parse_gpus(text, ["name", "memory.total", "driver_version"])
    assert gpu.name == "NVIDIA H200" and gpu.memory_total_mib == 143771 and gpu.index is None


def test_na_and_field_count_mismatch():
    (rec,) = nvidia_smi.parse_query("0, NVIDIA H200, [N/A]", ["index", "name", "memory.total"])
    assert rec["memory.total"] is None
    with pytest.raises(ValueError):
        nvidia_smi.parse_query("0, NVIDIA H200", ["index", "name", "memory.total"])
