"""Micro timings in the shapes other kernel-benchmark tools read (``python -m orchestrator export --format
liger|tritonbench``).

* ``liger``: Liger-Kernel's ``benchmark/data/all_benchmark_data.csv`` (its ``BenchmarkDataCSVRow`` columns, in its
  order), read by its ``benchmarks_visualizer.py``: one row per (kernel, implementation, shape, GPU), metric
  ``speed`` in ``ms``, mode ``forward``; ``x_name`` ``H`` (the shape's last dimension, the row width) and the rows
  ``M`` (the product of the other dimensions) with the dtype in ``extra_benchmark_config_str``, as Liger's own
  row-kernel benchmarks (rms_norm: M × H) put them; ``y_value_50/20/80`` the 50th, 20th and 80th percentiles of the
  stored repeats (Liger's ``QUANTILES`` of ``triton.testing.do_bench``); ``liger_version`` names the kernelfleet
  commit the timing was measured at (kernelfleet is not Liger).
* ``tritonbench``: TritonBench's operator result (``BenchmarkOperatorResult``): per operator (kernel, dtype, GPU
  type) a CSV ``op_<operator>.csv`` (``;``-separated; first column ``x_val``, then ``<provider>-latency`` in ms and
  ``<provider>-speedup`` against ``eager``) and, for all of them, ``tritonbench.json`` in its userbenchmark naming:
  ``tritonbench_<operator>_fwd[x_<x_val>-<provider>]_<metric>`` and
  ``tritonbench_<operator>_fwd[<provider>]-<metric>-avg``.

Without ``--run``, each series contributes its newest timing.  Every CSV written here goes through
:func:`write_csv`.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from kernels.metadata import baseline_of

LIGER_COLUMNS = (
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
)
TORCH_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32", "fp64": "torch.float64"}


def write_csv(stream: IO[str], header: Sequence[str], rows: Iterable[Sequence[Any]], delimiter: str = ",") -> int:
    """The one CSV writer of the tool exports; returns the rows written.  Text that a spreadsheet would read as a
    formula is written as text (orchestrator/store/query/csv_cells.py)."""
    from orchestrator.store.query.csv_cells import csv_cell

    w = csv.writer(stream, delimiter=delimiter, lineterminator="\n")
    w.writerow(header)
    n = 0
    for row in rows:
        w.writerow(["" if v is None else csv_cell(v) for v in row])
        n += 1
    return n


def quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's and torch.quantile's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def newest_per_series(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The last row of each (kernel, shape, dtype, impl, hardware key), in first-seen order."""
    last: dict[tuple, Mapping[str, Any]] = {}
    for r in rows:
        last[(r["kernel"], tuple(r["shape"]), r["dtype"], r["impl"], r["hardware_key"])] = r
    return list(last.values())


def _ms(samples_us: Sequence[float]) -> list[float]:
    return [x / 1000.0 for x in samples_us if x is not None and math.isfinite(x)]


def liger_rows(rows: Iterable[Mapping[str, Any]]) -> Iterable[list[Any]]:
    for r in rows:
        shape = [int(x) for x in r["shape"]]
        samples = _ms(r["samples"]) or [r["value"] / 1000.0]
        m = math.prod(shape[:-1]) if len(shape) > 1 else 1
        extra = {"M": m, "dtype": TORCH_DTYPES.get(r["dtype"], r["dtype"])}
        when = r["measured_at"]
        yield [
            r["kernel"],
            r["impl"],
            "forward",
            "speed",
            "ms",
            "H",
            "hidden size",
            shape[-1] if shape else "",
            quantile(samples, 0.5),
            quantile(samples, 0.2),
            quantile(samples, 0.8),
            json.dumps(extra),
            r["gpu_name"],
            when.strftime("%Y-%m-%d %H:%M:%S") if when else "",
            f"kernelfleet {(r['commit'] or 'unknown')[:10]}",
        ]


def write_liger(rows: Iterable[Mapping[str, Any]], stream: IO[str]) -> int:
    return write_csv(stream, LIGER_COLUMNS, liger_rows(rows))


def x_val(shape: Sequence[int]) -> str:
    """A shape as TritonBench prints a tuple x_val: ``(1, 1024, 2048)``."""
    return "(" + ", ".join(str(int(x)) for x in shape) + ")"


def operator_name(r: Mapping[str, Any]) -> str:
    return f"{r['kernel']}_{r['dtype']}_{r['gpu_type'] or 'unknown'}".replace("-", "_").replace(" ", "_")


def tritonbench_tables(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """operator -> (header, rows) as BenchmarkOperatorResult._table lays them out (latency in ms)."""
    ops: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    order: dict[str, dict[str, None]] = defaultdict(dict)
    kernel_of: dict[str, str] = {}
    for r in rows:
        op = operator_name(r)
        ops[op][x_val(r["shape"])][r["impl"]] = r["value"] / 1000.0
        order[op][r["impl"]] = None
        kernel_of[op] = r["kernel"]
    baselines = {k: baseline_of(k) for k in set(kernel_of.values())}
    tables = {}
    for op, by_x in ops.items():
        baseline = baselines[kernel_of[op]]  # the provider speed-ups are measured against: the kernel's baseline
        providers = sorted(order[op], key=lambda p: (p != baseline, list(order[op]).index(p)))
        header = ["x_val"]
        for p in providers:
            header.append(f"{p}-latency")
            if p != baseline and baseline in providers:
                header.append(f"{p}-speedup")
        body = []
        for x, lat in sorted(by_x.items(), key=lambda kv: [int(v) for v in kv[0].strip("()").split(", ")]):
            row: list[Any] = [x]
            base = lat.get(baseline)
            for p in providers:
                row.append(lat.get(p))
                if p != baseline and baseline in providers:
                    row.append(base / lat[p] if base and lat.get(p) else None)
            body.append(row)
        tables[op] = (header, body)
    return tables


def tritonbench_json(tables: Mapping[str, tuple[list[str], list[list[Any]]]]) -> dict[str, float | None]:
    """BenchmarkOperatorResult.userbenchmark_dict's keys and values for every operator (op mode ``fwd``)."""
    out: dict[str, float | None] = {}
    for op, (header, body) in tables.items():
        name = f"{op}_fwd"
        agg: dict[str, list[float]] = defaultdict(list)
        for row in body:
            for h, v in zip(header[1:], row[1:]):
                provider, _, metric = h.partition("-")
                out[f"tritonbench_{name}[x_{row[0]}-{provider}]_{metric}"] = v
                if isinstance(v, (int, float)):
                    agg[f"tritonbench_{name}[{provider}]-{metric}-avg"].append(v)
        out.update({k: sum(v) / len(v) for k, v in agg.items()})
    return out


def write_tritonbench(rows: Iterable[Mapping[str, Any]], folder: Path) -> int:
    """Write op_<operator>.csv per operator and tritonbench.json into ``folder``; returns the timings written."""
    rows = list(rows)
    folder.mkdir(parents=True, exist_ok=True)
    tables = tritonbench_tables(rows)
    for op, (header, body) in tables.items():
        with open(folder / f"op_{op}.csv", "w", newline="", encoding="utf-8") as f:
            write_csv(f, header, body, delimiter=";")
    (folder / "tritonbench.json").write_text(json.dumps(tritonbench_json(tables), indent=4) + "\n", encoding="utf-8")
    return len(rows)
