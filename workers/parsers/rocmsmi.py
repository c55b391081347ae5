"""Parsers for ``rocm-smi``: the ``--json`` form and the default concise table.

``--json`` prints one object ``{"card0": {...}, "system": {...}}`` whose values are all strings; its keys differ
between options and versions, so they are kept as printed.  The concise table has fixed-width columns whose set
differs between Instinct and Radeon parts (``(Junction)``/``(Socket)`` vs ``(Edge)``/``(Avg)``), a second header line
of sub-labels (may carry an ANSI italic escape), and may be preceded by ``watch``'s header.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from workers.parsers.text_values import is_missing, leading_int, number, strip_ansi

_CARD = re.compile(r"^card(\d+)$")


def parse_json(text: str) -> dict[int, dict[str, str]]:
    """``{"card0": {...}}`` -> ``{0: {...}}`` (the ``system`` entry and other non-card keys are left out)."""
    doc = json.loads(strip_ansi(text))
    out: dict[int, dict[str, str]] = {}
    for key, value in doc.items():
        m = _CARD.match(key)
        if m and isinstance(value, dict):
            out[int(m.group(1))] = {str(k): str(v) for k, v in value.items()}
    return out


@dataclass
class ConciseRow:
    device: int
    node: int | None
    device_id: int | None  # DID
    guid: str | None
    temp_c: float | None
    temp_sensor: str  # Junction | Edge | ...
    power_w: float | None
    power_kind: str  # Socket | Avg | ...
    memory_partition: str | None
    compute_partition: str | None
    partition_id: str | None
    sclk_mhz: float | None
    mclk_mhz: float | None
    fan_pct: float | None
    perf: str | None
    power_cap_w: float | None
    vram_pct: float | None
    gpu_pct: float | None
    cells: dict[str, str] = field(default_factory=dict)


def _unit_number(cell: str | None) -> float | None:
    """``43.0°C`` / ``136.0W`` / ``132Mhz`` / ``83.14%`` -> the number."""
    if is_missing(cell):
        return None
    m = re.match(r"^\s*(-?\d+(?:\.\d+)?)", cell)
    return number(m.group(1)) if m else None


def parse_concise(text: str) -> list[ConciseRow]:
    """One row per GPU of the default ``rocm-smi`` table."""
    lines = [strip_ansi(l).rstrip() for l in text.splitlines()]
    header_at = next((i for i, l in enumerate(lines) if l.lstrip().startswith("Device") and "Node" in l), None)
    if header_at is None:
        return []
    columns = lines[header_at].split()
    sub_labels = re.findall(r"\(([^)]*)\)", lines[header_at + 1]) if header_at + 1 < len(lines) else []
    sub_by_column: dict[str, str] = {}
    # The parenthesised sub-labels sit under IDs, Temp, Power, Partitions, in that order.
    for col, label in zip([c for c in columns if c in ("IDs", "Temp", "Power", "Partitions")], sub_labels):
        sub_by_column[col] = label.strip()
    rows: list[ConciseRow] = []
    for line in lines[header_at + 1 :]:
        if not line or not line.lstrip()[:1].isdigit():
            continue
        tokens = re.sub(r",\s+", ",", line.strip()).split()
        if len(tokens) != len(columns):
            continue
        cells = dict(zip(columns, tokens))
        ids = cells.get("IDs", "").split(",")
        parts = cells.get("Partitions", "").split(",")
        part = [None if is_missing(p) else p for p in parts] + [None, None, None]
        rows.append(
            ConciseRow(
                device=int(cells["Device"]),
                node=leading_int(cells.get("Node")),
                device_id=leading_int(ids[0]) if ids and ids[0] else None,
                guid=ids[1] if len(ids) > 1 and not is_missing(ids[1]) else None,
                temp_c=_unit_number(cells.get("Temp")),
                temp_sensor=sub_by_column.get("Temp", ""),
                power_w=_unit_number(cells.get("Power")),
                power_kind=sub_by_column.get("Power", ""),
                memory_partition=part[0],
                compute_partition=part[1],
                partition_id=part[2],
                sclk_mhz=_unit_number(cells.get("SCLK")),
                mclk_mhz=_unit_number(cells.get("MCLK")),
                fan_pct=_unit_number(cells.get("Fan")),
                perf=None if is_missing(cells.get("Perf")) else cells.get("Perf"),
                power_cap_w=_unit_number(cells.get("PwrCap")),
                vram_pct=_unit_number(cells.get("VRAM%")),
                gpu_pct=_unit_number(cells.get("GPU%")),
                cells=cells,
            )
        )
    return rows
