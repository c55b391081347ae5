"""Parsers for the PyTorch profiler: chrome traces (``prof.export_chrome_trace``) and ``key_averages().table()``.

Chrome trace facts handled here: GPU kernels are ``ph: "X"`` events with ``cat`` ``"kernel"`` (2023+) or
``"Kernel"`` (2021); ``ts``/``dur`` are microseconds, floats with ns precision in recent versions and integers in old
ones; ``tid`` is the stream, an int or ``"stream 7"``; on CUDA the args carry grid/block/registers, on ROCm
(roctracer) only ``External id, device, stream, correlation, kind``; launches are ``cuda_runtime``/``cuda_driver``
events (``cudaLaunchKernel``, ``hipLaunchKernel``, ``cuLaunchKernelEx``, ...) sharing ``correlation`` with their kernel.
Host ops are ``cpu_op`` (``Operator`` in 2021), ``record_function`` ranges ``user_annotation``.

The table has fixed-width columns (the dashed rule above the header gives their extents), names cut to 55
characters, times with unit suffixes, and ``Self CPU time total`` / ``Self CUDA time total`` footers.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from workers.device.parsers.kernel_row import KernelRow, rows_from_durations
from workers.device.parsers.text_values import int_triple, number

KERNEL_CATEGORIES = ("kernel",)  # compared case-insensitively
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "runtime")
CPU_OP_CATEGORIES = ("cpu_op", "operator")


def _us_to_ns(v: Any) -> float:
    return float(v) * 1000.0


@dataclass
class TraceKernel:
    name: str
    ts_us: float
    dur_us: float
    device: int | None
    stream: int | None
    correlation: int | None
    external_id: int | None
    grid: tuple[int, int, int] | None  # blocks (CUDA only)
    block: tuple[int, int, int] | None  # threads per block (CUDA only)
    registers_per_thread: int | None

    @property
    def dur_ns(self) -> float:
        return _us_to_ns(self.dur_us)


@dataclass
class ChromeTrace:
    events: list[dict[str, Any]]
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # every top-level key except traceEvents/deviceProperties

    def complete_events(self, categories: Iterable[str]) -> list[dict[str, Any]]:
        """``ph: "X"`` events whose category is one of ``categories`` (case-insensitive)."""
        cats = {c.lower() for c in categories}
        return [e for e in self.events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in cats]

    def kernels(self) -> list[TraceKernel]:
        out = []
        for e in self.complete_events(KERNEL_CATEGORIES):
            args = e.get("args") or {}
            out.append(
                TraceKernel(
                    name=str(e.get("name", "")),
                    ts_us=float(e.get("ts", 0.0)),
                    dur_us=float(e.get("dur", 0.0)),
                    device=_opt_int(args.get("device", e.get("pid"))),
                    stream=_opt_int(args.get("stream", e.get("tid"))),
                    correlation=_opt_int(args.get("correlation")),
                    external_id=_opt_int(args.get("External id", args.get("external id"))),
                    grid=int_triple(args.get("grid")),
                    block=int_triple(args.get("block")),
                    registers_per_thread=_opt_int(args.get("registers per thread")),
                )
            )
        out.sort(key=lambda k: k.ts_us)
        return out

    def launches_by_correlation(self) -> dict[int, dict[str, Any]]:
        out = {}
        for e in self.complete_events(LAUNCH_CATEGORIES):
            corr = _opt_int((e.get("args") or {}).get("correlation"))
            if corr is not None:
                out[corr] = e
        return out


def _opt_int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
    m = re.search(r"-?\d+", str(v))  # "stream 7"
    return int(m.group(0)) if m else None


def parse_chrome_trace(text: str | bytes | dict[str, Any]) -> ChromeTrace:
    """A chrome trace from its JSON text (or an already-loaded dict)."""
    doc = text if isinstance(text, dict) else json.loads(text)
    if isinstance(doc, list):  # the bare-array form of the trace event format
        doc = {"traceEvents": doc}
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        raise ValueError("not a chrome trace: no traceEvents list")
    meta = {k: v for k, v in doc.items() if k not in ("traceEvents", "deviceProperties")}
    return ChromeTrace(events=events, device_properties=list(doc.get("deviceProperties") or []), meta=meta)


def kernel_rows(trace: ChromeTrace) -> list[KernelRow]:
    """Per-kernel-name rows from the GPU kernel events."""
    return rows_from_durations((k.name, k.dur_ns) for k in trace.kernels())


@dataclass
class SelfTimeOp:
    name: str
    ts_us: float
    dur_us: float
    self_us: float
    pid: Any
    tid: Any


def cpu_op_self_times(trace: ChromeTrace) -> list[SelfTimeOp]:
    """Every host op with its self time (its duration less that of the ops nested directly inside it on the same
    thread).  On a CPU-only run these are where the time goes, the analogue of kernel rows."""
    by_thread: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in trace.complete_events(CPU_OP_CATEGORIES):
        by_thread.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append(e)
    out = []
    for events in by_thread.values():
        events.sort(key=lambda e: (float(e.get("ts", 0.0)), -float(e.get("dur", 0.0))))
        stack: list[SelfTimeOp] = []
        for e in events:
            ts, dur = float(e.get("ts", 0.0)), float(e.get("dur", 0.0))
            while stack and ts >= stack[-1].ts_us + stack[-1].dur_us:
                stack.pop()
            op = SelfTimeOp(
                name=str(e.get("name", "")), ts_us=ts, dur_us=dur, self_us=dur, pid=e.get("pid"), tid=e.get("tid")
            )
            if stack:
                stack[-1].self_us -= dur
            stack.append(op)
            out.append(op)
    for op in out:
        op.self_us = max(op.self_us, 0.0)
    out.sort(key=lambda o: o.ts_us)
    return out


def cpu_op_rows(trace: ChromeTrace) -> list[KernelRow]:
    """Per-op-name rows by self time (host side; for CPU-only captures)."""
    return rows_from_durations((op.name, _us_to_ns(op.self_us)) for op in cpu_op_self_times(trace))


@dataclass
class Window:
    """One ``record_function`` range (``user_annotation``) and what ran inside it."""

    name: str
    ts_us: float
    dur_us: float
    kernels: list[TraceKernel] = field(default_factory=list)
    ops: list[SelfTimeOp] = field(default_factory=list)

    @property
    def kernel_ns(self) -> float:
        return sum(k.dur_ns for k in self.kernels)

    @property
    def op_self_ns(self) -> float:
        return sum(_us_to_ns(o.self_us) for o in self.ops)


def annotation_windows(trace: ChromeTrace, prefix: str) -> list[Window]:
    """The host ranges whose name starts with ``prefix``, in time order, each with the kernels *launched* inside it
    (matched through the launch event's ``correlation``; a kernel runs later than its launch) and the host ops that
    ran inside it.  With nested ranges an event belongs to the innermost one only."""
    windows = sorted(
        (
            Window(name=str(e.get("name", "")), ts_us=float(e.get("ts", 0.0)), dur_us=float(e.get("dur", 0.0)))
            for e in trace.complete_events(("user_annotation",))
            if str(e.get("name", "")).startswith(prefix)
        ),
        key=lambda w: w.ts_us,
    )
    if not windows:
        return []
    starts = [w.ts_us for w in windows]

    def window_at(ts: float) -> Window | None:
        """The innermost (latest-starting) range that contains ``ts``."""
        for i in range(bisect.bisect_right(starts, ts) - 1, -1, -1):
            if ts <= windows[i].ts_us + windows[i].dur_us:
                return windows[i]
        return None

    launches = trace.launches_by_correlation()
    for k in trace.kernels():
        launch = launches.get(k.correlation) if k.correlation is not None else None
        if launch is None:
            continue
        w = window_at(float(launch.get("ts", 0.0)))
        if w is not None:
            w.kernels.append(k)
    for op in cpu_op_self_times(trace):
        w = window_at(op.ts_us)
        if w is not None:
            w.ops.append(op)
    return windows


# ---------------------------------------------------------------- key_averages().table()

_TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_TIME = re.compile(r"^(-?\d+(?:\.\d+)?)(ns|us|ms|s)$")
_TOTAL = re.compile(r"^Self (\S+) time total:\s*(\S+)\s*$")


def table_time_ns(cell: str) -> float | None:
    """``57.072us`` / ``49.447ms`` / ``1.2s`` -> ns."""
    m = _TIME.match(cell.strip())
    if not m:
        return None
    return float(m.group(1)) * _TIME_UNITS_NS[m.group(2)]


@dataclass
class KeyAveragesTable:
    columns: list[str]
    rows: list[dict[str, str]]  # column -> cell text, as printed (names may be cut, ending in "...")
    totals_ns: dict[str, float]  # "CPU" / "CUDA" -> Self ... time total

    def device_label(self) -> str:
        """The device column's label (``CUDA``; the same on ROCm, where HIP is exposed as cuda)."""
        for c in self.columns:
            if c.startswith("Self ") and c.endswith(" %") and "CPU" not in c:
                return c[len("Self ") : -2]
        return "CUDA"


def parse_key_averages(text: str) -> KeyAveragesTable:
    lines = text.splitlines()
    rule_at = next((i for i, l in enumerate(lines) if l.strip().startswith("-") and set(l.strip()) <= {"-", " "}), None)
    if rule_at is None or rule_at + 1 >= len(lines):
        raise ValueError("not a key_averages table: no dashed rule")
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[rule_at])]
    # Header titles are right-aligned and one wider than its rule ("CUDA time avg") shifts the rest of the line, so
    # titles are split on their double-space separators rather than cut at the rule's extents.
    columns = re.split(r"\s{2,}", lines[rule_at + 1].strip())
    if len(columns) != len(spans):
        columns = [lines[rule_at + 1][a:b].strip() for a, b in spans]
    # Cells after the name never contain spaces (times, percentages, counts) unless a shapes/source column is shown.
    spaced = any(c in ("Input Shapes", "Source Location", "Stack") for c in columns[1:])
    rows: list[dict[str, str]] = []
    totals: dict[str, float] = {}
    for line in lines[rule_at + 2 :]:
        s = line.strip()
        if not s:
            continue
        m = _TOTAL.match(s)
        if m:
            t = table_time_ns(m.group(2))
            if t is not None:
                totals[m.group(1)] = t
            continue
        if set(s) <= {"-", " "}:
            continue
        if spaced:
            bounds = [0] + [b for _, b in spans]
            cells = [line[bounds[i] : bounds[i + 1]].strip() for i in range(len(spans))]
        else:
            cells = [c.strip() for c in line.rstrip().rsplit(None, len(columns) - 1)]
            if len(cells) != len(columns):
                continue
        rows.append(dict(zip(columns, cells)))
    return KeyAveragesTable(columns=columns, rows=rows, totals_ns=totals)


def key_averages_kernel_rows(table: KeyAveragesTable) -> list[KernelRow]:
    """The device kernels of the table: rows with no host time at all (``CPU total`` 0) and device self time.

    Names are as printed (cut to 55 characters); ``pct`` is the table's ``Self CUDA %``."""
    dev = table.device_label()
    out = []
    for r in table.rows:
        cpu_total = table_time_ns(r.get("CPU total", ""))
        self_dev = table_time_ns(r.get(f"Self {dev}", ""))
        calls = int(number(r.get("# of Calls")) or 0)
        if cpu_total != 0.0 or not self_dev or calls <= 0:
            continue
        pct = number(r.get(f"Self {dev} %", "").rstrip("%")) or 0.0
        out.append(KernelRow(name=r.get("Name", ""), calls=calls, total_ns=self_dev, avg_ns=self_dev / calls, pct=pct))
    out.sort(key=lambda k: (-k.total_ns, k.name))
    return out
