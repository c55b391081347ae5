"""Parsers for rocprofv3 (rocprofiler-sdk) CSV output and its ``--summary`` text tables.

All CSV files are RFC-4180 (kernel names contain commas, so a real CSV reader is used) and may lack a final newline.
Columns are always found by header name, never by position:

* ``*_kernel_trace.csv`` has three layouts: sdk 0.4 (ROCm 6.2, 16 columns), sdk 0.5-0.6 (ROCm 6.3-6.4, 18 columns:
  ``Thread_Id``/``Dispatch_Id`` added) and sdk 1.0 (ROCm 7.x, 22 columns: ``Stream_Id``, register counts,
  ``LDS_Block_Size``/``Scratch_Size`` instead of the segment sizes, and ``Agent_Id`` as a string ``"Agent 4"``).
  CSV written by ``rocpd convert`` starts with a ``Guid`` column and may carry ``Duration``.
* ``*_stats.csv`` (kernel, API, domain) have 8 columns, sorted by total time; ``Percentage`` switches to exponent form
  for small values (``5.384e-04``).
* ``Grid_Size_*`` counts work-items (threads), not workgroups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from workers.device.parsers.kernel_row import KernelRow, rows_from_durations
from workers.device.parsers.text_values import csv_records, csv_rows, integer, is_missing, number

STATS_COLUMNS = ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs", "StdDev")


def _int(rec: dict[str, str], key: str) -> int | None:
    v = rec.get(key)
    return None if v is None else integer(v)


def agent_index(agent_id: str | None) -> int | None:
    """``"4"`` (sdk <= 0.6), ``"Agent 4"`` or ``"GPU 3"`` (sdk 1.0) -> the number."""
    if agent_id is None:
        return None
    m = re.search(r"(-?\d+)\s*$", agent_id.strip())
    return int(m.group(1)) if m else None


@dataclass
class KernelDispatch:
    """One row of ``kernel_trace.csv``."""

    name: str
    start_ns: int
    end_ns: int
    agent: str  # as printed: "4" or "Agent 4" or "GPU 3"
    queue_id: int | None
    kernel_id: int | None
    correlation_id: int | None
    dispatch_id: int | None = None  # sdk >= 0.5
    thread_id: int | None = None  # sdk >= 0.5
    stream_id: int | None = None  # sdk 1.0
    workgroup: tuple[int, int, int] | None = None
    grid_work_items: tuple[int, int, int] | None = None  # work-items, NOT workgroups
    lds_bytes: int | None = None  # Group_Segment_Size (<= 0.6) or LDS_Block_Size (1.0)
    scratch_bytes: int | None = None  # Private_Segment_Size (<= 0.6) or Scratch_Size (1.0)
    vgpr: int | None = None
    accum_vgpr: int | None = None
    sgpr: int | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def agent_index(self) -> int | None:
        return agent_index(self.agent)


def kernel_trace_layout(header: Iterable[str]) -> str:
    """Which rocprofiler-sdk layout a kernel trace header is: ``sdk0.4``, ``sdk0.5`` (0.5-0.6) or ``sdk1.0``."""
    cols = set(header)
    missing = {"Kernel_Name", "Start_Timestamp", "End_Timestamp"} - cols
    if missing:
        raise ValueError(f"not a rocprofv3 kernel trace: no column(s) {sorted(missing)}")
    if "Stream_Id" in cols or "VGPR_Count" in cols or "LDS_Block_Size" in cols:
        return "sdk1.0"
    if "Dispatch_Id" in cols or "Thread_Id" in cols:
        return "sdk0.5"
    return "sdk0.4"


def _triple(rec: dict[str, str], prefix: str) -> tuple[int, int, int] | None:
    vals = [_int(rec, f"{prefix}_{axis}") for axis in "XYZ"]
    if any(v is None for v in vals):
        return None
    return vals[0], vals[1], vals[2]  # type: ignore[return-value]


def parse_kernel_trace(text: str) -> list[KernelDispatch]:
    """Every dispatch of a ``kernel_trace.csv`` (any of the three layouts, or a ``rocpd convert`` file)."""
    rows = csv_rows(text)
    if not rows:
        return []
    header = [h.strip() for h in rows[0]]
    kernel_trace_layout(header)
    out = []
    for row in rows[1:]:
        rec = dict(zip(header, row))
        start, end = _int(rec, "Start_Timestamp"), _int(rec, "End_Timestamp")
        if end is None and start is not None and _int(rec, "Duration") is not None:
            end = start + _int(rec, "Duration")  # type: ignore[operator]  # rocpd convert may add Duration
        if start is None or end is None:
            continue
        out.append(
            KernelDispatch(
                name=rec["Kernel_Name"],
                start_ns=start,
                end_ns=end,
                agent=rec.get("Agent_Id", "").strip(),
                queue_id=_int(rec, "Queue_Id"),
                kernel_id=_int(rec, "Kernel_Id"),
                correlation_id=_int(rec, "Correlation_Id"),
                dispatch_id=_int(rec, "Dispatch_Id"),
                thread_id=_int(rec, "Thread_Id"),
                stream_id=_int(rec, "Stream_Id"),
                workgroup=_triple(rec, "Workgroup_Size"),
                grid_work_items=_triple(rec, "Grid_Size"),
                lds_bytes=_int(rec, "LDS_Block_Size") if "LDS_Block_Size" in rec else _int(rec, "Group_Segment_Size"),
                scratch_bytes=_int(rec, "Scratch_Size") if "Scratch_Size" in rec else _int(rec, "Private_Segment_Size"),
                vgpr=_int(rec, "VGPR_Count"),
                accum_vgpr=_int(rec, "Accum_VGPR_Count"),
                sgpr=_int(rec, "SGPR_Count"),
            )
        )
    return out


def kernel_rows_from_trace(dispatches: Iterable[KernelDispatch]) -> list[KernelRow]:
    return rows_from_durations((d.name, d.duration_ns) for d in dispatches)


def parse_stats(text: str) -> list[KernelRow]:
    """A ``*_stats.csv`` (kernel, HIP API, domain ...) as rows, in the file's order (longest total first).

    ``pct`` is the tool's ``Percentage`` (share of its domain's total)."""
    rows = []
    for rec in csv_records(text):
        missing = [c for c in STATS_COLUMNS[:5] if c not in rec]
        if missing:
            raise ValueError(f"not a rocprofv3 stats file: no column(s) {missing}")
        rows.append(
            KernelRow(
                name=rec["Name"],
                calls=integer(rec["Calls"]) or 0,
                total_ns=number(rec["TotalDurationNs"]) or 0.0,
                avg_ns=number(rec["AverageNs"]) or 0.0,
                pct=number(rec["Percentage"]) or 0.0,
                min_ns=number(rec.get("MinNs")),
                max_ns=number(rec.get("MaxNs")),
                stddev_ns=number(rec.get("StdDev")),
            )
        )
    return rows


@dataclass
class ApiCall:
    """One row of an API trace (``hip_api_trace``, ``marker_api_trace``, ``rocpd convert`` output ...)."""

    domain: str
    function: str
    process_id: int | None
    thread_id: int | None
    correlation_id: int | None
    start_ns: int
    end_ns: int
    guid: str | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def parse_api_trace(text: str) -> list[ApiCall]:
    calls = []
    for rec in csv_records(text):
        start, end = _int(rec, "Start_Timestamp"), _int(rec, "End_Timestamp")
        if start is None or end is None or "Function" not in rec:
            raise ValueError("not a rocprofv3 API trace: needs Function, Start_Timestamp and End_Timestamp")
        calls.append(
            ApiCall(
                domain=rec.get("Domain", ""),
                function=rec["Function"],
                process_id=_int(rec, "Process_Id"),
                thread_id=_int(rec, "Thread_Id"),
                correlation_id=_int(rec, "Correlation_Id"),
                start_ns=start,
                end_ns=end,
                guid=rec.get("Guid"),
            )
        )
    return calls


@dataclass
class CounterSample:
    """One (dispatch, counter) row of ``counter_collection.csv``."""

    dispatch_id: int | None
    correlation_id: int | None
    agent: str
    kernel_name: str
    counter: str
    value: float | None
    grid_size: int | None  # work-items
    workgroup_size: int | None
    start_ns: int | None = None  # sdk 1.0
    end_ns: int | None = None


def parse_counter_collection(text: str) -> list[CounterSample]:
    out = []
    for rec in csv_records(text):
        if "Counter_Name" not in rec or "Counter_Value" not in rec:
            raise ValueError("not a rocprofv3 counter collection: needs Counter_Name and Counter_Value")
        out.append(
            CounterSample(
                dispatch_id=_int(rec, "Dispatch_Id"),
                correlation_id=_int(rec, "Correlation_Id"),
                agent=rec.get("Agent_Id", ""),
                kernel_name=rec.get("Kernel_Name", ""),
                counter=rec["Counter_Name"],
                value=number(rec["Counter_Value"]),
                grid_size=_int(rec, "Grid_Size"),
                workgroup_size=_int(rec, "Workgroup_Size"),
                start_ns=_int(rec, "Start_Timestamp"),
                end_ns=_int(rec, "End_Timestamp"),
            )
        )
    return out


@dataclass
class ProfiledAgent:
    """One row of ``agent_info.csv`` (CPUs included)."""

    node_id: int | None
    agent_type: str  # CPU | GPU
    name: str  # gfx942 for a GPU
    product_name: str
    compute_units: int | None
    wave_front_size: int | None
    simd_count: int | None
    device_id: int | None
    gfx_target_version: int | None  # 90402
    fields: dict[str, str] = field(default_factory=dict)


def parse_agent_info(text: str) -> list[ProfiledAgent]:
    return [
        ProfiledAgent(
            node_id=_int(rec, "Node_Id"),
            agent_type=rec.get("Agent_Type", ""),
            name=rec.get("Name", ""),
            product_name=rec.get("Product_Name", ""),
            compute_units=_int(rec, "Cu_Count"),
            wave_front_size=_int(rec, "Wave_Front_Size"),
            simd_count=_int(rec, "Simd_Count"),
            device_id=_int(rec, "Device_Id"),
            gfx_target_version=_int(rec, "Gfx_Target_Version"),
            fields=rec,
        )
        for rec in csv_records(text)
    ]


def parse_records(text: str) -> list[dict[str, Any]]:
    """Any other rocprofv3 CSV (memory copy/allocation, scratch memory ...): dicts with whole numbers as ints,
    other values as the printed strings; an empty quoted field becomes None."""
    out = []
    for rec in csv_records(text):
        row: dict[str, Any] = {}
        for k, v in rec.items():
            if is_missing(v):
                row[k] = None
                continue
            as_int = integer(v) if re.fullmatch(r"-?\d+", v.strip()) else None
            row[k] = as_int if as_int is not None else v
        out.append(row)
    return out


@dataclass
class SummaryRow:
    name: str
    domain: str
    calls: int
    total_ns: float
    avg_ns: float
    pct: float
    min_ns: float | None
    max_ns: float | None
    stddev_ns: float | None

    def kernel_row(self) -> KernelRow:
        return KernelRow(
            self.name, self.calls, self.total_ns, self.avg_ns, self.pct, self.min_ns, self.max_ns, self.stddev_ns
        )


_SUMMARY_TITLE = re.compile(r"^ROCPROFV3\s+(\S+)\s+SUMMARY:\s*$")


def parse_summary(text: str) -> dict[str, list[SummaryRow]]:
    """``-S``/``--summary`` text: section name (``KERNEL_DISPATCH``, ``HIP_API``, ...) -> rows.

    Columns ``NAME | DOMAIN | CALLS | DURATION (nsec) | AVERAGE (nsec) | PERCENT (INC) | MIN | MAX | STDDEV`` are
    found by their titles; averages are printed as ``%.3e``."""
    sections: dict[str, list[SummaryRow]] = {}
    current: str | None = None
    header: list[str] | None = None
    for line in text.splitlines():
        s = line.strip()
        m = _SUMMARY_TITLE.match(s)
        if m:
            current, header = m.group(1), None
            sections[current] = []
            continue
        if current is None or not s.startswith("|"):
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if header is None:
            header = [c.upper() for c in cells]
            continue
        if all(set(c) <= {"-"} for c in cells):
            continue
        rec = dict(zip(header, cells))

        def col(prefix: str) -> str | None:
            return next((v for k, v in rec.items() if k.startswith(prefix)), None)

        sections[current].append(
            SummaryRow(
                name=rec.get("NAME", ""),
                domain=rec.get("DOMAIN", ""),
                calls=integer(col("CALLS")) or 0,
                total_ns=number(col("DURATION")) or 0.0,
                avg_ns=number(col("AVERAGE")) or 0.0,
                pct=number(col("PERCENT")) or 0.0,
                min_ns=number(col("MIN")),
                max_ns=number(col("MAX")),
                stddev_ns=number(col("STDDEV")),
            )
        )
    return sections
