"""export --format liger / tritonbench, read back the way those tools read them.

Liger-Kernel's benchmarks_visualizer.py reads all_benchmark_data.csv with pandas.read_csv, parses every
extra_benchmark_config_str with json.loads, then keeps the rows of one kernel_name, metric_name and
kernel_operation_mode, one gpu_name and one extra config, and plots y_value_50 (with 20/80) against x_value.  The
same steps here with the csv module (pandas is not a dependency).  TritonBench writes its operator CSV with
csv.writer(delimiter=";") and derives its userbenchmark JSON from the header cells "<provider>-<metric>"; the test
rebuilds the JSON from the CSV by that rule.  The data: the rmsnorm results recorded on the H200.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import statistics

import pytest
from rich.console import Console

from orchestrator.cli import commands as cli
from orchestrator.interchange.importer import import_results
from orchestrator.store import session
from tests.orchestrator.test_regressions_cli import RECORDED

# Liger-Kernel's BenchmarkDataCSVRow, field by field (benchmark/scripts/utils.py)
LIGER_HEADER = [
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
]


@pytest.fixture
def store(tmp_path):
    url = session.sqlite_url_for(tmp_path / "kf.db")
    assert import_results([str(RECORDED)], url, Console(file=io.StringIO())) == 0
    yield url
    session.dispose_engines()


def _recorded_times() -> dict[tuple, list[float]]:
    """(impl, shape) -> the recorded time_us repeats."""
    out = {}
    with gzip.open(RECORDED, "rt") as f:
        for line in list(f)[1:]:
            obj = json.loads(line)
            if obj["spec"]["kind"] != "micro":
                continue
            for m in obj["result"]["measurements"]:
                if m["metric"] == "time_us":
                    out[(m["impl"], tuple(obj["spec"]["shape"]))] = m["samples"]
    return out


def test_liger_csv_reads_back_as_liger_plots_it(store, tmp_path):
    out = tmp_path / "all_benchmark_data.csv"
    assert (
        cli.main(["export", "--format", "liger", "--url", store, "--out", str(out)], Console(file=io.StringIO())) == 0
    )
    with open(out, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == LIGER_HEADER
        df = list(reader)
    for row in df:
        row["extra_benchmark_config"] = json.loads(row["extra_benchmark_config_str"])
    recorded = _recorded_times()
    assert len(df) == len(recorded)
    base = [
        r
        for r in df
        if r["kernel_name"] == "rmsnorm" and r["metric_name"] == "speed" and r["kernel_operation_mode"] == "forward"
    ]
    assert {r["gpu_name"] for r in base} == {"NVIDIA H200"}
    configs = {r["extra_benchmark_config_str"] for r in base}
    chosen = next(c for c in configs if json.loads(c) == {"M": 1024, "dtype": "torch.bfloat16"})
    curve = [r for r in base if r["extra_benchmark_config_str"] == chosen]
    assert {r["kernel_provider"] for r in curve} == {"triton", "eager", "compile", "compile_max", "F.rms_norm"}
    for r in curve:
        assert r["x_name"] == "H" and int(r["x_value"]) == 2048 and r["metric_unit"] == "ms"
        samples = recorded[(r["kernel_provider"], (1, 1024, 2048))]
        assert float(r["y_value_50"]) == pytest.approx(statistics.median(samples) / 1000, rel=1e-12)
        assert float(r["y_value_20"]) <= float(r["y_value_50"]) <= float(r["y_value_80"])
        assert r["liger_version"].startswith("kernelfleet ") and len(r["timestamp"]) == 19


def test_tritonbench_csv_and_json_follow_its_naming(store, tmp_path):
    out = tmp_path / "tb"
    assert (
        cli.main(["export", "--format", "tritonbench", "--url", store, "--out", str(out)], Console(file=io.StringIO()))
        == 0
    )
    (op_csv,) = out.glob("op_*.csv")
    assert op_csv.name == "op_rmsnorm_bf16_h200.csv"
    with open(op_csv, newline="") as f:
        rows = list(csv.reader(f, delimiter=";"))
    headers, table = rows[0], rows[1:]
    assert headers[0] == "x_val" and headers[1] == "eager-latency" and "triton-speedup" in headers
    recorded = _recorded_times()
    assert len(table) == len({shape for _, shape in recorded})
    expected = {}
    for row in table:
        shape = tuple(int(x) for x in row[0].strip("()").split(", "))
        for header, value in zip(headers[1:], row[1:]):
            provider, _, metric = header.partition("-")
            expected[f"tritonbench_rmsnorm_bf16_h200_fwd[x_{row[0]}-{provider}]_{metric}"] = float(value)
            if metric == "latency":
                assert float(value) == pytest.approx(statistics.median(recorded[(provider, shape)]) / 1000, rel=1e-12)
    data = json.loads((out / "tritonbench.json").read_text())
    per_x = {k: v for k, v in data.items() if not k.endswith("-avg")}
    assert per_x == pytest.approx(expected)
    triton = [v for k, v in expected.items() if "-triton]_latency" in k]
    assert data["tritonbench_rmsnorm_bf16_h200_fwd[triton]-latency-avg"] == pytest.approx(sum(triton) / len(triton))


def test_tritonbench_needs_a_folder(store, capsys):
    assert cli.main(["export", "--format", "tritonbench", "--url", store], Console(file=io.StringIO())) == 2
    assert "give --out DIR" in capsys.readouterr().err


def test_tritonbench_speedups_are_against_each_kernels_declared_baseline(monkeypatch):
    """A kernel whose declaration names another baseline (kernels/metadata/) has its providers' speed-ups measured
    against that one; a kernel declared nowhere against the standard ``eager``."""
    import dataclasses

    from kernels import metadata
    from orchestrator.interchange.tool_formats import tritonbench_tables

    declared = metadata.declared()
    other = {**declared, "rmsnorm": dataclasses.replace(declared["rmsnorm"], baseline="F.rms_norm")}
    monkeypatch.setattr(metadata, "declared", lambda: other)
    rows = [
        {"kernel": kernel, "dtype": "bf16", "gpu_type": "h200", "shape": [1, 8, 64], "impl": impl, "value": us}
        for kernel in ("rmsnorm", "plugin_kernel")
        for impl, us in (("triton", 10.0), ("eager", 40.0), ("F.rms_norm", 20.0))
    ]
    tables = tritonbench_tables(rows)
    header, [body] = tables["rmsnorm_bf16_h200"]
    assert header[:2] == ["x_val", "F.rms_norm-latency"]
    assert dict(zip(header, body))["triton-speedup"] == pytest.approx(2.0)
    header, [body] = tables["plugin_kernel_bf16_h200"]
    assert header[:2] == ["x_val", "eager-latency"] and dict(zip(header, body))["triton-speedup"] == pytest.approx(4.0)
