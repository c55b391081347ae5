"""rocprofv3 CSV/summary parsers on every recorded rocprofv3 file (values read from the files)."""

from pathlib import Path

import pytest

from workers.device.parsers import rocprofv3
from workers.device.parsers.text_values import csv_rows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    "name, layout, count",
    [
        ("rocprofv3_rocm6.2.1_mi300a_openmp_kernel_trace.csv", "sdk0.4", 9),
        ("rocprofv3_rocm6.3-6.4_jacobi-hip_kernel_trace.csv", "sdk0.5", 4),
        ("rocprofv3_sdk0.5.0_docs_kernel_trace.csv", "sdk0.5", 7),
        ("rocprofv3_sdk1.0.0_docs_kernel_trace.csv", "sdk1.0", 9),
        ("rocprofv3_sdk1.0.0_docs_kernel_trace_truncated.csv", "sdk1.0", 4),
    ],
)
def test_kernel_trace_layouts_by_header(name, layout, count):
    text = read(name)
    assert rocprofv3.kernel_trace_layout(csv_rows(text)[0]) == layout
    assert len(rocprofv3.parse_kernel_trace(text)) == count


def test_kernel_trace_sdk04_openmp():
    ds = rocprofv3.parse_kernel_trace(read("rocprofv3_rocm6.2.1_mi300a_openmp_kernel_trace.csv"))
    d = ds[0]
    assert d.name == "__omp_offloading_32_2f3c6__QMnorm_modPnorm_l26"
    assert d.agent == "4" and d.agent_index == 4 and d.queue_id == 1 and d.kernel_id == 2
    assert d.dispatch_id is None and d.stream_id is None  # not in the 16-column layout
    assert d.duration_ns == 5329321973322123 - 5329321973213203 == 108920
    assert d.lds_bytes == 4360 and d.scratch_bytes == 0
    assert d.workgroup == (256, 1, 1) and d.grid_work_items == (233472, 1, 1)
    rows = {r.name: r for r in rocprofv3.kernel_rows_from_trace(ds)}
    norm = rows["__omp_offloading_32_2f3c6__QMnorm_modPnorm_l26"]
    assert norm.calls == 3 and norm.total_ns == 108920 + 92160 + 92120
    assert norm.min_ns == 92120 and norm.max_ns == 108920
    assert sum(r.calls for r in rows.values()) == 9
    assert sum(r.pct for r in rows.values()) == pytest.approx(100.0)


def test_kernel_trace_sdk05_names_with_commas_and_runtime_kernels():
    ds = rocprofv3.parse_kernel_trace(read("rocprofv3_rocm6.3-6.4_jacobi-hip_kernel_trace.csv"))
    assert [d.dispatch_id for d in ds] == [1, 2, 3, 4]
    assert ds[0].name == "__amd_rocclr_fillBufferAligned" and ds[3].name == "__amd_rocclr_copyBuffer"
    assert ds[1].name == "NormKernel1(int, double, double, double const*, double*)"
    assert ds[1].duration_ns == 401121 and ds[1].thread_id == 252734 and ds[1].agent == "8"
    assert ds[1].grid_work_items == (16384, 1, 1) and ds[1].workgroup == (128, 1, 1) and ds[1].lds_bytes == 1024


def test_kernel_trace_sdk10_string_agent_and_registers():
    ds = rocprofv3.parse_kernel_trace(read("rocprofv3_sdk1.0.0_docs_kernel_trace.csv"))
    assert {d.agent for d in ds} == {"Agent 4"} and ds[0].agent_index == 4
    div = next(d for d in ds if d.name.startswith("divide_kernel"))
    assert div.vgpr == 12 and div.accum_vgpr == 4 and div.sgpr == 16 and div.stream_id == 1
    assert div.grid_work_items == (1024, 1024, 1)  # work-items, not workgroups
    rows = {r.name.split("(")[0]: r for r in rocprofv3.kernel_rows_from_trace(ds)}
    assert rows["void addition_kernel<float>"].calls == 3
    assert rows["void addition_kernel<float>"].total_ns == 12800 + 11400 + 9840
    assert rocprofv3.agent_index("GPU 3") == 3


def test_truncated_names_and_sdk05_docs_trace():
    names = [d.name for d in rocprofv3.parse_kernel_trace(read("rocprofv3_sdk1.0.0_docs_kernel_trace_truncated.csv"))]
    assert names == ["addition_kernel", "divide_kernel", "multiply_kernel", "subtract_kernel"]
    ds = rocprofv3.parse_kernel_trace(read("rocprofv3_sdk0.5.0_docs_kernel_trace.csv"))
    add = next(r for r in rocprofv3.kernel_rows_from_trace(ds) if r.name.startswith("void addition_kernel"))
    assert add.calls == 4 and add.total_ns == 48744 + 100895 + 130526 + 133341


def test_stats_jacobi_rocm621_exponent_percentage():
    rows = rocprofv3.parse_stats(read("rocprofv3_rocm6.2.1_jacobi-hip_kernel_stats.csv"))
    assert len(rows) == 6
    first = rows[0]
    assert first.name == "NormKernel1(int, double, double, double const*, double*)"
    assert (first.calls, first.total_ns, first.pct) == (1001, 358330487, 53.00)
    assert first.avg_ns == pytest.approx(357972.514486) and first.min_ns == 354720 and first.max_ns == 384680
    last = rows[-1]
    assert last.name == "__amd_rocclr_fillBufferAligned" and last.pct == pytest.approx(5.384e-04)
    assert last.calls == 1 and last.stddev_ns == 0.0
    assert [r.total_ns for r in rows] == sorted((r.total_ns for r in rows), reverse=True)


def test_stats_jacobi_rocm63():
    rows = {r.name: r for r in rocprofv3.parse_stats(read("rocprofv3_rocm6.3-6.4_jacobi-hip_kernel_stats.csv"))}
    assert len(rows) == 7
    assert rows["__amd_rocclr_copyBuffer"].pct == pytest.approx(0.6173)
    assert rows["__amd_rocclr_fillBufferAligned"].pct == pytest.approx(4.671e-04)
    assert (
        rows["JacobiIterationKernel(int, double, double, double const*, double const*, double*, double*)"].total_ns
        == 545275480
    )


def test_stats_openmp_and_pytorch_names_with_commas():
    omp = rocprofv3.parse_stats(read("rocprofv3_rocm6.2.1_mi300a_openmp_kernel_stats.csv"))
    assert len(omp) == 4 and omp[0].pct == 43.77 and omp[0].calls == 1001
    single = rocprofv3.parse_stats(read("rocprofv3_pytorch-resnet_single_kernel_stats_head.csv"))
    assert len(single) == 9
    assert single[0].name == "__amd_rocclr_copyBuffer" and single[0].calls == 7084 and single[0].pct == 8.38
    long_name = single[2].name
    assert long_name.startswith("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, ")
    assert long_name.endswith("at::detail::Array<char*, 2>)") and single[2].calls == 3402
    mpi = rocprofv3.parse_stats(read("rocprofv3_pytorch-resnet_mpi-rank_kernel_stats_head.csv"))
    assert mpi[0].name == "rccl_main_kernel(ncclDevComm*, unsigned long, ncclWork*)"
    assert mpi[0].calls == 142 and mpi[0].pct == 82.74 and mpi[0].max_ns == 382428559


def test_api_and_domain_stats_without_final_newline():
    api = rocprofv3.parse_stats(read("rocprofv3_sdk1.0.0_docs_hip_api_stats.csv"))
    assert len(api) == 17
    assert api[0].name == "hipStreamCreateWithFlags" and api[0].pct == 85.15
    assert api[-1].name == "hipSetDevice" and api[-1].pct == pytest.approx(2.141e-04)
    (dom,) = rocprofv3.parse_stats(read("rocprofv3_sdk1.0.0_docs_hip_domain_stats.csv"))
    assert dom.name == "HIP_API" and dom.calls == 13 and dom.pct == 100.0


def test_api_traces_hip_marker_and_rocpd_convert():
    hip = rocprofv3.parse_api_trace(read("rocprofv3_sdk1.0.0_docs_hip_trace.csv"))
    assert len(hip) == 17 and hip[0].function == "__hipRegisterFatBinary"
    assert hip[0].duration_ns == 1055015439976484 - 1055015439953054 and hip[0].guid is None
    marker = rocprofv3.parse_api_trace(read("rocprofv3_sdk1.0.0_docs_marker_api_trace.csv"))
    assert [m.function for m in marker][-1] == "hipLaunchKernel range" and marker[-1].thread_id == 0
    assert marker[0].duration_ns == 0
    rocpd = rocprofv3.parse_api_trace(read("rocprofv3_sdk1.0.0_docs_rocpd-to-csv.csv"))
    assert len(rocpd) == 13 and {c.guid for c in rocpd} == {"0000ddb5-8903-7903-b269-cd8d3745bb8a"}
    assert sum(1 for c in rocpd if c.function == "hipMemcpy") == 3


def test_counter_collection_both_versions():
    old = rocprofv3.parse_counter_collection(read("rocprofv3_sdk0.5.0_docs_counter_collection.csv"))
    assert len(old) == 7 and {s.counter for s in old} == {"SQ_WAVES"} and {s.value for s in old} == {16384.0}
    assert old[0].grid_size == 1048576 and old[0].workgroup_size == 64 and old[0].start_ns is None
    new = rocprofv3.parse_counter_collection(read("rocprofv3_sdk1.0.0_docs_counter_collection.csv"))
    assert len(new) == 4 and new[0].agent == "Agent 1" and new[0].value == 16384.0
    assert new[3].kernel_name.startswith("divide_kernel") and new[3].end_ns == 3200098838927550


def test_agent_info_cpus_first():
    agents = rocprofv3.parse_agent_info(read("rocprofv3_rocm6.2.1_mi300a_agent_info.csv"))
    assert [a.agent_type for a in agents] == ["CPU"] * 4 + ["GPU"] * 4
    gpu = agents[4]
    assert gpu.name == "gfx942" and gpu.product_name == "AMD Instinct MI300A"
    assert gpu.compute_units == 228 and gpu.wave_front_size == 64 and gpu.device_id == 0x74A0
    assert gpu.gfx_target_version == 90402 and gpu.node_id == 4


def test_other_trace_domains_as_records():
    copies = rocprofv3.parse_records(read("rocprofv3_sdk1.0.0_docs_memory_copy_trace.csv"))
    assert len(copies) == 4 and copies[0]["Direction"] == "MEMORY_COPY_HOST_TO_DEVICE"
    assert copies[2]["Source_Agent_Id"] == "Agent 4" and copies[2]["Correlation_Id"] == 23
    allocs = rocprofv3.parse_records(read("rocprofv3_sdk1.0.0_docs_memory_allocation_trace.csv"))
    assert [a["Operation"] for a in allocs].count("MEMORY_ALLOCATION_FREE") == 2
    assert allocs[2]["Agent_Id"] is None and allocs[0]["Allocation_Size"] == 1024
    assert allocs[0]["Address"] == "0x00007ffb26354000"
    scratch = rocprofv3.parse_records(read("rocprofv3_sdk1.0.0_docs_scratch_memory_trace.csv"))
    assert len(scratch) == 2 and scratch[1]["End_Timestamp"] == 1124927132642186


def test_summary_tables():
    sections = rocprofv3.parse_summary(read("rocprofv3_sdk1.0.0_docs_summary.txt"))
    assert {k: len(v) for k, v in sections.items()} == {
        "HSA_API": 5,
        "KERNEL_DISPATCH": 4,
        "MEMORY_COPY": 2,
        "MEMORY_ALLOCATION": 2,
    }
    add = sections["KERNEL_DISPATCH"][0]
    assert add.name == "void addition_kernel<float>(float*, float const*, float const*, int, int)"
    assert (add.calls, add.total_ns, add.avg_ns) == (8, 184324, 23040.0)  # average printed as 2.304e+04
    assert add.pct == pytest.approx(40.681542) and add.min_ns == 11200 and add.max_ns == 98802
    row = add.kernel_row()
    assert (row.name, row.calls, row.total_ns) == (add.name, 8, 184324)
    assert sections["MEMORY_COPY"][1].name == "MEMORY_COPY_DEVICE_TO_HOST"


def test_wrong_file_kinds_are_rejected():
    with pytest.raises(ValueError):
        rocprofv3.parse_kernel_trace(read("rocprofv3_sdk1.0.0_docs_hip_trace.csv"))
    with pytest.raises(ValueError):
        rocprofv3.parse_stats(read("rocprofv3_sdk1.0.0_docs_kernel_trace.csv"))
