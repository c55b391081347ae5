"""Parsers for ``amd-smi`` output: ``--json`` documents, the indented text form, and ``amd-smi version``.

JSON: since amd-smi 26.x (ROCm 7.x) the per-GPU list is wrapped as ``{"gpu_data": [...]}``; before that it is a bare
list ``[{"gpu": 0, ...}]``.  Metric leaves are ``{"value": N, "unit": "W"}`` or the string ``"N/A"``.
Text: ``KEY: value`` blocks indented under ``GPU: N``; missing values print as ``N/A``.
Keys are matched case-insensitively, so the text form (``MARKET_NAME``) and the JSON form (``market_name``) read the
same.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from workers.device.parsers.text_values import is_missing, leading_int, number, strip_ansi

_GPU_HEADER = re.compile(r"^GPU:\s*(\d+)\s*$")
_UNIT_BYTES = {"b": 1, "kb": 1024, "kib": 1024, "mb": 1024**2, "mib": 1024**2, "gb": 1024**3, "gib": 1024**3}


def parse_json(text: str) -> list[dict[str, Any]]:
    """The per-GPU objects of an ``amd-smi <command> --json`` document (either top-level shape)."""
    doc = json.loads(strip_ansi(text))
    if isinstance(doc, dict):
        if isinstance(doc.get("gpu_data"), list):
            return [g for g in doc["gpu_data"] if isinstance(g, dict)]
        return [doc]
    if isinstance(doc, list):
        return [g for g in doc if isinstance(g, dict)]
    raise ValueError(f"amd-smi JSON: expected a list or an object, got {type(doc).__name__}")


def parse_text(text: str) -> list[dict[str, Any]]:
    """The ``GPU: N`` blocks of amd-smi's human-readable output as nested dicts (``N/A`` -> None).

    Each block gets ``{"gpu": N, ...}``; a ``KEY:`` with no value opens a nested dict for the lines indented below it.
    Lines that are not ``KEY: value`` are ignored.
    """
    gpus: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    for raw in strip_ansi(text).splitlines():
        if not raw.strip():
            continue
        m = _GPU_HEADER.match(raw.strip())
        if m and (len(raw) - len(raw.lstrip())) == 0:
            block: dict[str, Any] = {"gpu": int(m.group(1))}
            gpus.append(block)
            stack = [(-1, block)]
            continue
        if not stack or ":" not in raw:
            continue
        indent = len(raw) - len(raw.lstrip())
        key, value = raw.strip().split(":", 1)
        key, value = key.strip(), value.strip()
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value == "":
            child: dict[str, Any] = {}
            parent[key] = child
            stack.append((indent, child))
        else:
            parent[key] = None if is_missing(value) else value
    return gpus


def lookup(obj: Any, *path: str) -> Any:
    """``lookup(gpu, "asic", "market_name")``, case-insensitive at every level; None when a step is missing."""
    cur = obj
    for step in path:
        if not isinstance(cur, dict):
            return None
        want = step.lower()
        cur = next((v for k, v in cur.items() if str(k).lower() == want), None)
    return cur


def leaf_value(leaf: Any) -> tuple[Any, str]:
    """A metric leaf as (value, unit): ``{"value": 10, "unit": "W"}`` -> (10, "W"); ``"N/A"`` -> (None, "");
    a bare scalar -> (scalar, "")."""
    if isinstance(leaf, dict) and "value" in leaf:
        v = leaf.get("value")
        return (None if is_missing(v) else v), str(leaf.get("unit") or "")
    if is_missing(leaf):
        return None, ""
    return leaf, ""


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
    if isinstance(v, str):
        return leading_int(v)
    return None


@dataclass
class AmdGpuStatic:
    """What ``amd-smi static`` says about one GPU (every field None when amd-smi did not print it)."""

    gpu: int | None
    market_name: str | None
    device_id: int | None
    target_graphics_version: str | None  # gfx942
    compute_units: int | None
    bdf: str | None  # 0000:23:00.0
    vram_bytes: int | None
    driver_name: str | None
    driver_version: str | None
    compute_partition: str | None
    memory_partition: str | None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def pci_bus(self) -> int | None:
        if not self.bdf:
            return None
        parts = self.bdf.split(":")
        try:
            return int(parts[-2], 16) if len(parts) >= 2 else None
        except ValueError:
            return None


def static_info(gpu: dict[str, Any]) -> AmdGpuStatic:
    """Summarise one GPU object of ``amd-smi static`` (JSON or text form)."""
    vram_value, vram_unit = leaf_value(lookup(gpu, "vram", "size"))
    vram_bytes = None
    if vram_value is not None:
        if isinstance(vram_value, str) and not vram_unit:  # text form: "196592 MB"
            parts = vram_value.split()
            vram_unit = parts[1] if len(parts) > 1 else ""
            vram_value = parts[0] if parts else vram_value
        n = number(str(vram_value))
        if n is not None:
            vram_bytes = int(n * _UNIT_BYTES.get(vram_unit.lower(), 1024**2))  # amd-smi reports MB by default

    def text(*path: str) -> str | None:
        v, _ = leaf_value(lookup(gpu, *path))
        return None if v is None else str(v)

    return AmdGpuStatic(
        gpu=_as_int(lookup(gpu, "gpu")),
        market_name=text("asic", "market_name"),
        device_id=_as_int(lookup(gpu, "asic", "device_id")),
        target_graphics_version=text("asic", "target_graphics_version"),
        compute_units=_as_int(leaf_value(lookup(gpu, "asic", "num_compute_units"))[0]),
        bdf=text("bus", "bdf") or text("bdf"),
        vram_bytes=vram_bytes,
        driver_name=text("driver", "name"),
        driver_version=text("driver", "version"),
        compute_partition=text("partition", "compute_partition"),
        memory_partition=text("partition", "memory_partition"),
        raw=gpu,
    )


def parse_static(text: str) -> list[AmdGpuStatic]:
    """``amd-smi static`` output, JSON or text, as one summary per GPU."""
    stripped = strip_ansi(text).lstrip()
    gpus = parse_json(stripped) if stripped[:1] in "[{" else parse_text(stripped)
    return [static_info(g) for g in gpus]


def parse_version(text: str) -> dict[str, str]:
    """``amd-smi version``: ``AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0``
    (newer: ``| amdgpu version: 6.16.13 | ...``) -> {"AMDSMI Tool": ..., "ROCm version": ..., ...}; N/A parts dropped.
    A ``--json`` document is accepted too (its keys as printed)."""
    stripped = strip_ansi(text).strip()
    if stripped[:1] in "[{":
        doc = json.loads(stripped)
        if isinstance(doc, list) and doc:
            doc = doc[0]
        return {str(k): str(v) for k, v in doc.items() if not is_missing(v) and not isinstance(v, (dict, list))}
    out: dict[str, str] = {}
    for line in stripped.splitlines():
        for part in line.split("|"):
            if ":" in part:
                k, v = part.split(":", 1)
                if not is_missing(v):
                    out[k.strip()] = v.strip()
    return out


def rocm_version(version: dict[str, str]) -> str | None:
    for k, v in version.items():
        if k.lower() in ("rocm version", "rocm_version"):
            return v
    return None


def amdgpu_version(version: dict[str, str]) -> str | None:
    for k, v in version.items():
        if k.lower() in ("amdgpu version", "amdgpu_version"):
            return v
    return None
