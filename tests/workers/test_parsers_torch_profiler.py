"""torch.profiler chrome traces (CUDA 2021-2026 forms and the ROCm form) and the key_averages table."""

import json
from pathlib import Path

import pytest

from workers.device.parsers import torch_profiler as tp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def trace(name: str) -> tp.ChromeTrace:
    return tp.parse_chrome_trace((FIXTURES / name).read_text())


def test_h200_trace_kernels_grid_block_and_rows():
    t = trace("torch-profiler_chrome-trace_h200_torch2.11.0+cu130.json")
    assert t.device_properties[0]["name"] == "NVIDIA H200" and t.device_properties[0]["numSms"] == 132
    ks = t.kernels()
    assert len(ks) == 12
    gemm = next(k for k in ks if k.name.startswith("nvjet_sm90"))
    assert gemm.grid == (2, 64, 1) and gemm.block == (384, 1, 1) and gemm.registers_per_thread == 168
    assert gemm.stream == 7 and gemm.device == 0 and gemm.ts_us == pytest.approx(5099235762048.538)
    rows = tp.kernel_rows(t)
    assert [r.calls for r in rows] == [3, 3, 3, 3]
    assert rows[0].name.startswith("void (anonymous namespace)::softmax_warp_forward<float, float, float, 11,")
    # the same totals the profiler's own key_averages table printed for this run
    assert rows[0].total_ns == pytest.approx(115423.0)
    assert rows[1].name == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert rows[1].total_ns == pytest.approx(73408.0)
    assert sum(r.pct for r in rows) == pytest.approx(100.0)
    launches = t.launches_by_correlation()
    assert all(k.correlation in launches for k in ks)


def test_rocm_trace_has_no_grid_and_generic_device_name():
    t = trace("torch-profiler_chrome-trace_mi250_rocm6.2_minitoy_hta.json")
    assert t.device_properties[0]["name"] == "AMD Radeon Graphics" and t.device_properties[0]["warpSize"] == 64
    ks = t.kernels()
    assert len(ks) == 14 and all(k.grid is None and k.block is None for k in ks)
    assert {k.device for k in ks} == {2} and {k.stream for k in ks} == {0}
    rows = tp.kernel_rows(t)
    assert rows[0].name.startswith("Cijk_Alik_Bljk_SB_Bias") and rows[0].total_ns == pytest.approx(17600.0)
    assert sum(r.calls for r in rows) == 14
    assert len(t.complete_events(["gpu_memcpy"])) == 2
    # kernels attributed to the record_function range that launched them; nested ranges get their own
    windows = {w.name: w for w in tp.annotation_windows(t, "")}
    assert len(windows["ProfilerStep#1"].kernels) == 13
    assert len(windows["Optimizer.step#SGD.step"].kernels) == 1
    assert windows["Optimizer.step#SGD.step"].kernel_ns == pytest.approx(8481.0)


def test_a100_triton_kernel():
    t = trace("torch-profiler_chrome-trace_a100_cuda12_triton-example_hta.json")
    (k,) = t.kernels()
    assert k.name == "triton_poi_fused_add_cos_sin_0" and k.dur_ns == pytest.approx(1760.0)
    assert k.grid == (1, 1, 1) and k.block == (128, 1, 1) and k.registers_per_thread == 16
    (w,) = tp.annotation_windows(t, "ProfilerStep")
    assert [x.name for x in w.kernels] == ["triton_poi_fused_add_cos_sin_0"]


def test_2021_kineto_excerpt_capital_kernel_integer_us_and_stream_string():
    t = trace("torch-profiler_chrome-trace_v100_pytorch1.9_kineto-sample_EXCERPT.json")
    (k,) = t.kernels()
    assert k.name == "volta_scudnn_128x64_relu_medium_nn_v1"
    assert k.dur_ns == 605000.0 and k.stream == 7 and k.external_id == 544 and k.grid == (3136, 1, 1)
    assert k.correlation in t.launches_by_correlation()  # cat "Runtime" launch
    assert [r.name for r in tp.cpu_op_rows(t)] == [e["name"] for e in t.complete_events(["Operator"])]


def test_cpu_op_self_times_subtract_nested_ops():
    t = trace("torch-profiler_chrome-trace_h200_torch2.11.0+cu130.json")
    ops = tp.cpu_op_self_times(t)
    softmax = next(o for o in ops if o.name == "aten::softmax")
    inner = next(o for o in ops if o.name == "aten::_softmax" and o.ts_us >= softmax.ts_us)
    assert softmax.self_us == pytest.approx(softmax.dur_us - inner.dur_us)
    assert all(o.self_us >= 0 for o in ops)


def test_bare_event_list_and_rejects_non_traces():
    doc = json.loads((FIXTURES / "torch-profiler_chrome-trace_a100_cuda12_triton-example_hta.json").read_text())
    assert len(tp.parse_chrome_trace(json.dumps(doc["traceEvents"])).kernels()) == 1
    with pytest.raises(ValueError):
        tp.parse_chrome_trace('{"schemaVersion": 1}')


def test_key_averages_table():
    table = tp.parse_key_averages(
        (FIXTURES / "torch-profiler_key_averages_table_h200_torch2.11.0+cu130.txt").read_text()
    )
    assert table.columns == [
        "Name",
        "Self CPU %",
        "Self CPU",
        "CPU total %",
        "CPU total",
        "CPU time avg",
        "Self CUDA",
        "Self CUDA %",
        "CUDA total",
        "CUDA time avg",
        "# of Calls",
    ]
    assert len(table.rows) == 15
    assert table.totals_ns == {"CPU": pytest.approx(90.425e6), "CUDA": pytest.approx(233696.0)}
    launch = next(r for r in table.rows if r["Name"] == "cudaLaunchKernel")
    assert launch["# of Calls"] == "9" and tp.table_time_ns(launch["Self CPU"]) == pytest.approx(14.477e6)
    assert table.rows[0]["Name"] == "aten::softmax"
    kernels = tp.key_averages_kernel_rows(table)
    assert [k.name for k in kernels] == [
        "void (anonymous namespace)::softmax_warp_forward<flo...",
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
        "void at::native::unrolled_elementwise_kernel<at::nat...",
    ]  # runtime rows (cudaLaunchKernel, Lazy Function Loading, Activity Buffer Request) are not kernels
    assert kernels[0].calls == 3 and kernels[0].total_ns == pytest.approx(115423.0) and kernels[0].pct == 49.39
    assert tp.table_time_ns("1.5s") == 1.5e9 and tp.table_time_ns("n/a") is None
