"""Parser for ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``.

The separator is ``", "`` (comma and space).  With a header the names carry their units in brackets
(``memory.total [MiB]``) and, without ``nounits``, every value carries its unit (``143771 MiB``).  Without a header the
caller says which fields were queried.  Missing values print as ``[N/A]`` or ``N/A``.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Sequence

from workers.device.parsers.text_values import integer, is_missing, number

# What workers.device.detect asks for.
DEVICE_QUERY_FIELDS = ("index", "name", "memory.total", "driver_version", "compute_cap")
_UNIT_IN_NAME = re.compile(r"^(?P<name>[^\[]+?)\s*\[(?P<unit>[^\]]*)\]\s*$")


def parse_query(text: str, fields: Sequence[str] | None = None) -> list[dict[str, str | None]]:
    """One dict per GPU line, keyed by field name (units stripped from names and values).

    ``fields`` is needed for ``noheader`` output; with a header it may be left out.  If ``fields`` is given and the
    first
    line is that header anyway, the header is recognised and skipped.
    """
    rows = [r for r in csv.reader(io.StringIO(text.strip()), skipinitialspace=True) if r and any(c.strip() for c in r)]
    if not rows:
        return []
    names: list[str]
    units: list[str]
    first = [c.strip() for c in rows[0]]
    parsed_first = [_UNIT_IN_NAME.match(c) for c in first]
    header_names = [m.group("name").strip() if m else c for m, c in zip(parsed_first, first)]
    looks_like_header = fields is None or header_names == list(fields)
    if looks_like_header:
        names = header_names
        units = [m.group("unit").strip() if m else "" for m in parsed_first]
        data = rows[1:]
    else:
        names = list(fields)  # type: ignore[arg-type]
        units = [""] * len(names)
        data = rows
    out = []
    for row in data:
        if len(row) != len(names):
            raise ValueError(f"nvidia-smi: {len(row)} values for {len(names)} fields in {row!r}")
        record: dict[str, str | None] = {}
        for name, unit, value in zip(names, units, row):
            v = value.strip()
            if unit and unit != "%" and v.endswith(" " + unit):
                v = v[: -len(unit) - 1].strip()
            elif unit == "%" and v.endswith("%"):
                v = v[:-1].strip()
            record[name] = None if is_missing(v) else v
        out.append(record)
    return out


@dataclass
class NvidiaGpu:
    index: int | None
    name: str
    memory_total_mib: int | None
    driver_version: str | None
    compute_cap: str | None  # "9.0"

    @property
    def memory_bytes(self) -> int | None:
        return None if self.memory_total_mib is None else self.memory_total_mib * 1024 * 1024

    @property
    def sm(self) -> str | None:
        """``"9.0"`` -> ``"sm_90"``."""
        if not self.compute_cap or "." not in self.compute_cap:
            return None
        major, minor = self.compute_cap.split(".", 1)
        return f"sm_{major}{minor}"


def parse_gpus(text: str, fields: Sequence[str] | None = DEVICE_QUERY_FIELDS) -> list[NvidiaGpu]:
    """GPUs from a query that includes (some of) ``index, name, memory.total, driver_version, compute_cap``."""
    gpus = []
    for rec in parse_query(text, fields):
        mem = number(rec.get("memory.total"))
        gpus.append(
            NvidiaGpu(
                index=integer(rec.get("index")),
                name=rec.get("name") or "",
                memory_total_mib=None if mem is None else int(mem),
                driver_version=rec.get("driver_version"),
                compute_cap=rec.get("compute_cap"),
            )
        )
    return gpus
