"""Every recorded tool output in tests/fixtures/tool-output/ is claimed by a parser here and parses to something
non-empty, so a new fixture without a parser (or a parser that silently returns nothing) fails."""

from pathlib import Path

import pytest

from workers.device import clocks as gpu_clocks
from workers.device.parsers import amdsmi, ncu, nvidia_smi, rocminfo, rocprofv3, torch_profiler

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"

PARSERS = {
    "rocminfo_": lambda t: rocminfo.parse(t).gpus(),
    "amd-smi_list_text": amdsmi.parse_text,
    "amd-smi_static-": amdsmi.parse_static,
    "amd-smi_metric-power_json": amdsmi.parse_json,
    "amd-smi_topology": amdsmi.parse_json,
    "nvidia-smi_query-gpu_csv-noheader": nvidia_smi.parse_gpus,
    "nvidia-smi_query-gpu_name-memtotal": nvidia_smi.parse_query,
    "nvidia-smi_query-gpu_clocks-power": gpu_clocks.parse_samples,
    "ncu_csv_": ncu.parse,
    "torch-profiler_chrome-trace": lambda t: torch_profiler.parse_chrome_trace(t).kernels(),
    "torch-profiler_key_averages": lambda t: torch_profiler.parse_key_averages(t).rows,
}
ROCPROFV3_PARSERS = {
    "_stats": rocprofv3.parse_stats,
    "_kernel_trace": rocprofv3.parse_kernel_trace,
    "_hip_trace": rocprofv3.parse_api_trace,
    "_marker_api_trace": rocprofv3.parse_api_trace,
    "_rocpd-to-csv": rocprofv3.parse_api_trace,
    "_counter_collection": rocprofv3.parse_counter_collection,
    "_agent_info": rocprofv3.parse_agent_info,
    "_summary": rocprofv3.parse_summary,
    "_memory_copy_trace": rocprofv3.parse_records,
    "_memory_allocation_trace": rocprofv3.parse_records,
    "_scratch_memory_trace": rocprofv3.parse_records,
}


def parser_for(name: str):
    if name.startswith("rocprofv3_"):
        hits = [p for key, p in ROCPROFV3_PARSERS.items() if key in name]
    else:
        hits = [p for key, p in PARSERS.items() if name.startswith(key)]
    return hits[0] if len(hits) == 1 else None


FILES = sorted(p.name for p in FIXTURES.iterdir() if p.name != "README.md")


def test_fixture_directory_is_there():
    assert len(FILES) >= 40


@pytest.mark.parametrize("name", FILES)
def test_fixture_parses(name):
    parse = parser_for(name)
    assert parse is not None, f"no parser (or more than one) claims {name}"
    assert parse((FIXTURES / name).read_text())
