"""Nsight Compute --csv parsers: details pages (2020 and 2025 layouts) and the raw page."""

from pathlib import Path

import pytest

from workers.device.parsers import ncu

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_details_elementwise_h200_thousands_separators():
    (k,) = ncu.parse(read("ncu_csv_details_h200_ncu2025.3.1_elementwise-kernel.csv"))
    assert k.id == 0 and k.process_id == 499 and k.process_name == "python3.12" and k.stream == 7
    assert k.name.startswith("void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4,")
    assert k.block == (256, 1, 1) and k.grid == (1056, 1, 1) and k.cc == "9.0" and k.device == 0
    assert len(k.metrics) == 8 and k.rules == []
    assert k.metric("DRAM Frequency").value == pytest.approx(3183673469.39)
    assert k.metric("Elapsed Cycles").text == "12,211" and k.metric("Elapsed Cycles").value == 12211
    assert k.duration_ns == 6272


def test_details_gemm_h200_metric_and_rule_rows():
    (k,) = ncu.parse(read("ncu_csv_details_h200_ncu2025.3.1_gemm-kernel.csv"))
    assert k.id == 2 and k.grid == (8, 16, 1) and k.block == (128, 1, 1)
    assert len(k.metrics) == 50 and len(k.rules) == 4
    assert k.duration_ns == 61440
    assert k.metric("Registers Per Thread").value == 224 and k.metric("Registers Per Thread").unit == "register/thread"
    assert k.metric("Grid Size", "Launch Statistics").value == 128  # blocks: 8 x 16
    assert k.metric("Cluster Scheduling Policy").value is None  # text value
    launch = next(r for r in k.rules if r.section == "LaunchStats")
    assert launch.rule == "LaunchConfiguration" and launch.rule_type == "OPT" and launch.speedup == pytest.approx(3.03)
    assert launch.speedup_type == "global"


def test_details_sm100_log_with_program_output():
    (k,) = ncu.parse(read("ncu_csv_details_sm100_cublaslt-gemm.log"))
    assert k.cc == "10.0" and k.process_name == "cublaslt_gemm" and k.block == (384, 1, 1) and k.grid == (9, 32, 1)
    assert k.duration_ns == 406240 and len(k.rules) == 8
    assert k.metric("Dynamic Shared Memory Per Block").value == 205696


def test_details_2020_layout_v100():
    ks = ncu.parse(read("ncu_csv_details_v100_nsightcompute2020_rodinia-cfd.csv"))
    assert [(k.id, k.name) for k in ks] == [(0, "cuda_compute_step_factor"), (1, "cuda_compute_flux")]
    assert ks[0].block is None and ks[0].grid is None and ks[0].cc == ""
    assert len(ks[0].metrics) == 52 and len(ks[1].metrics) == 6
    assert ks[0].duration_ns == 10720 and ks[1].duration_ns == 39200  # unit "nsecond"
    assert ks[0].metric("Registers Per Thread").value == 20


def test_raw_page_units_row_and_three_kernels():
    ks = ncu.parse(read("ncu_csv_raw_h200_ncu2025.3.1_3kernels.csv"))
    assert [k.id for k in ks] == [0, 1, 2]
    assert [k.duration_ns for k in ks] == [6112, 6016, 61568]
    gemm = ks[2]
    assert gemm.metrics["gpu__time_duration.sum"].unit == "ns"
    assert gemm.metrics["launch__registers_per_thread"].value == 224
    assert gemm.metrics["launch__grid_size"].value == 128 and gemm.grid == (8, 16, 1)
    assert ks[0].metrics["launch__grid_size"].value == 1056  # printed "1,056"
    assert gemm.metrics["device__attribute_display_name"].text == "NVIDIA H200"
    rows = ncu.kernel_rows(ks)
    assert [(r.calls, r.total_ns) for r in rows] == [(1, 61568), (2, 6112 + 6016)]
    assert rows[0].name.startswith("sm80_xmma_gemm_f32f32")
