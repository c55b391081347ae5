"""Parsers for the legacy ``rocprof`` (v1 CLI) ``results.stats.csv`` and ``results.csv``.

``results.stats.csv`` has 5 columns ``Name, Calls, TotalDurationNs, AverageNs, Percentage`` (AverageNs an integer,
Percentage a full double).  Names end in `` [clone .kd]`` (C++ kernels) or ``.kd`` (``__amd_rocclr_copyBuffer.kd``);
``clean_name`` removes that suffix so names compare with rocprofv3's.  ``results.csv`` has one row per dispatch;
``grd`` counts work-items.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.parsers.kernel_row import KernelRow, rows_from_durations
from workers.parsers.text_values import csv_records, integer, number


def clean_name(name: str) -> str:
    for suffix in (" [clone .kd]", ".kd"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def parse_stats(text: str, strip_kd: bool = True) -> list[KernelRow]:
    rows = []
    for rec in csv_records(text):
        missing = [c for c in ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage") if c not in rec]
        if missing:
            raise ValueError(f"not a rocprof results.stats.csv: no column(s) {missing}")
        rows.append(
            KernelRow(
                name=clean_name(rec["Name"]) if strip_kd else rec["Name"],
                calls=integer(rec["Calls"]) or 0,
                total_ns=number(rec["TotalDurationNs"]) or 0.0,
                avg_ns=number(rec["AverageNs"]) or 0.0,
                pct=number(rec["Percentage"]) or 0.0,
            )
        )
    return rows


@dataclass
class LegacyDispatch:
    index: int | None
    name: str
    gpu_id: int | None
    queue_id: int | None
    grid_work_items: int | None  # grd
    workgroup: int | None  # wgr
    lds_bytes: int | None
    scratch_bytes: int | None
    arch_vgpr: int | None
    accum_vgpr: int | None
    sgpr: int | None
    wave_size: int | None
    begin_ns: int | None
    end_ns: int | None
    duration_ns: int | None


def parse_results(text: str, strip_kd: bool = True) -> list[LegacyDispatch]:
    out = []
    for rec in csv_records(text):
        if "KernelName" not in rec:
            raise ValueError("not a rocprof results.csv: no KernelName column")

        def i(key: str) -> int | None:
            v = rec.get(key)
            return None if v is None else integer(v)

        begin, end, dur = i("BeginNs"), i("EndNs"), i("DurationNs")
        if dur is None and begin is not None and end is not None:
            dur = end - begin
        out.append(
            LegacyDispatch(
                index=i("Index"),
                name=clean_name(rec["KernelName"]) if strip_kd else rec["KernelName"],
                gpu_id=i("gpu-id"),
                queue_id=i("queue-id"),
                grid_work_items=i("grd"),
                workgroup=i("wgr"),
                lds_bytes=i("lds"),
                scratch_bytes=i("scr"),
                arch_vgpr=i("arch_vgpr"),
                accum_vgpr=i("accum_vgpr"),
                sgpr=i("sgpr"),
                wave_size=i("wave_size"),
                begin_ns=begin,
                end_ns=end,
                duration_ns=dur,
            )
        )
    return out


def kernel_rows_from_results(dispatches: list[LegacyDispatch]) -> list[KernelRow]:
    return rows_from_durations((d.name, d.duration_ns) for d in dispatches if d.duration_ns is not None)
