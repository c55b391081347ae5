"""Parsers for Nsight Compute ``ncu --csv`` output: the default details page and ``--page raw``.

Tool lines (``==PROF==``, ``==WARNING==``) and the profiled program's own stdout are interleaved with the CSV on
stdout, so only lines that start with ``"`` are read.  Details rows are 16 fields for metrics (a trailing empty
field) and 20 for rule rows (empty metric, a rule name and description); the 2020-era layout has ``Kernel Time`` and
no Block/Grid/Device/CC or rule columns.  Values may carry thousands separators (``"6,272"``).  The raw page has a
header of metric names, then a units row (its first cells empty), then one row per kernel.

ncu's ``Grid Size`` counts blocks (``launch__grid_size`` is their product); names are demangled in ncu's own style
(``at::<unnamed>::``), which differs from CUPTI's/the torch profiler's (``at::(anonymous namespace)::``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workers.device.parsers.kernel_row import KernelRow, rows_from_durations
from workers.device.parsers.text_values import csv_rows, int_triple, integer, number

# Time units ncu prints, to nanoseconds.
_TIME_TO_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "nanosecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "microsecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "millisecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
_RAW_DURATION = "gpu__time_duration.sum"


@dataclass
class NcuMetric:
    section: str
    name: str
    unit: str
    text: str  # as printed
    value: float | None  # thousands separators removed; None for non-numeric values ("PolicySpread")


@dataclass
class NcuRule:
    section: str
    rule: str
    rule_type: str  # OPT | INF | WRN ...
    description: str
    speedup_type: str
    speedup: float | None


@dataclass
class NcuKernel:
    id: int
    name: str
    process_id: int | None
    process_name: str
    stream: int | None
    block: tuple[int, int, int] | None  # threads per block
    grid: tuple[int, int, int] | None  # blocks
    device: int | None
    cc: str  # "9.0"
    metrics: dict[str, NcuMetric] = field(default_factory=dict)  # details: "Section/Metric Name"; raw: metric id
    rules: list[NcuRule] = field(default_factory=list)

    def metric(self, name: str, section: str | None = None) -> NcuMetric | None:
        """A metric by its name (and section, when two sections share a name)."""
        if section is not None:
            return self.metrics.get(f"{section}/{name}")
        if name in self.metrics:
            return self.metrics[name]
        return next((m for m in self.metrics.values() if m.name == name), None)

    @property
    def duration_ns(self) -> float | None:
        """GPU time of the kernel: raw ``gpu__time_duration.sum`` or the details page's Speed-Of-Light ``Duration``."""
        m = (
            self.metrics.get(_RAW_DURATION)
            or next((m for m in self.metrics.values() if m.name == "Duration" and "Speed Of Light" in m.section), None)
            or self.metric("Duration")
        )
        if m is None or m.value is None:
            return None
        scale = _TIME_TO_NS.get(m.unit.strip().lower())
        return None if scale is None else m.value * scale


def _csv_lines(text: str) -> list[list[str]]:
    return csv_rows("\n".join(line for line in text.splitlines() if line.startswith('"')))


def _kernel_from(rec: dict[str, str]) -> NcuKernel:
    return NcuKernel(
        id=integer(rec.get("ID")) if rec.get("ID") else -1,  # type: ignore[arg-type]
        name=rec.get("Kernel Name", ""),
        process_id=integer(rec.get("Process ID")),
        process_name=rec.get("Process Name", ""),
        stream=integer(rec.get("Stream")),
        block=int_triple(rec.get("Block Size")),
        grid=int_triple(rec.get("Grid Size")),
        device=integer(rec.get("Device")),
        cc=rec.get("CC", ""),
    )


def _csv_table(text: str, page: str, columns: tuple[str, ...]) -> list[list[str]]:
    """The CSV lines of an ncu ``page`` (header first; empty for no output); ValueError when the header lacks one of
    ``columns``."""
    rows = _csv_lines(text)
    if rows and any(c not in rows[0] for c in columns):
        raise ValueError(f"not an ncu {page} CSV: no {'/'.join(columns)} columns")
    return rows


def parse_details(text: str) -> list[NcuKernel]:
    """The details page (``ncu --csv``), one NcuKernel per profiled launch (by ``ID``), in order of appearance."""
    rows = _csv_table(text, "details", ("ID", "Metric Name"))
    if not rows:
        return []
    header = rows[0]
    kernels: dict[str, NcuKernel] = {}
    for row in rows[1:]:
        rec = dict(zip(header, row))  # a 16-field metric row simply lacks the rule columns
        kid = rec.get("ID", "")
        kernel = kernels.get(kid)
        if kernel is None:
            kernel = kernels[kid] = _kernel_from(rec)
        section = rec.get("Section Name", "")
        metric_name = rec.get("Metric Name", "")
        if metric_name:
            text_value = rec.get("Metric Value", "")
            kernel.metrics[f"{section}/{metric_name}"] = NcuMetric(
                section=section,
                name=metric_name,
                unit=rec.get("Metric Unit", ""),
                text=text_value,
                value=number(text_value),
            )
        elif rec.get("Rule Name"):
            kernel.rules.append(
                NcuRule(
                    section=section,
                    rule=rec["Rule Name"],
                    rule_type=rec.get("Rule Type", ""),
                    description=rec.get("Rule Description", ""),
                    speedup_type=rec.get("Estimated Speedup Type", ""),
                    speedup=number(rec.get("Estimated Speedup")),
                )
            )
    return list(kernels.values())


def parse_raw(text: str) -> list[NcuKernel]:
    """The raw page (``ncu --csv --page raw``): every column after the identity columns becomes a metric keyed by its
    metric id (``gpu__time_duration.sum``), with the unit from the units row."""
    rows = _csv_table(text, "raw", ("ID", "Kernel Name"))
    if not rows:
        return []
    header = rows[0]
    body = rows[1:]
    units = [""] * len(header)
    if body and not body[0][0].strip():  # the units row: its ID cell (and the other identity cells) are empty
        units = body[0] + [""] * (len(header) - len(body[0]))
        body = body[1:]
    identity = {
        "ID",
        "Process ID",
        "Process Name",
        "Host Name",
        "Kernel Name",
        "Context",
        "Stream",
        "Block Size",
        "Grid Size",
        "Device",
        "CC",
        "Kernel Time",
    }
    kernels = []
    for row in body:
        rec = dict(zip(header, row))
        kernel = _kernel_from(rec)
        for col, unit, value in zip(header, units, row):
            if col in identity:
                continue
            kernel.metrics[col] = NcuMetric(section="", name=col, unit=unit, text=value, value=number(value))
        kernels.append(kernel)
    return kernels


def parse(text: str) -> list[NcuKernel]:
    """Either page, told apart by the header (the details page has a ``Metric Name`` column)."""
    rows = _csv_lines(text)
    if rows and "Metric Name" in rows[0]:
        return parse_details(text)
    return parse_raw(text)


def kernel_rows(kernels: list[NcuKernel]) -> list[KernelRow]:
    """Per-kernel-name rows from each launch's GPU duration (launches without a duration are left out).

    ncu serialises and replays each kernel, so these are isolated-kernel times, not a timeline."""
    return rows_from_durations((k.name, k.duration_ns) for k in kernels if k.duration_ns is not None)
