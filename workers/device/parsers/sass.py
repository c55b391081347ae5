"""NVIDIA machine code: ``ptxas -v`` resource lines and ``cuobjdump -sass`` listings.

``ptxas -v`` (what Triton's CUDA backend runs, its log kept with ``knobs.nvidia.dump_ptxas_log``) prints per entry
function ``N bytes stack frame, N bytes spill stores, N bytes spill loads`` and ``Used N registers``.  The SASS
listing gives the instruction mix: global loads and stores by width (``LDG.E.128`` is 128 bits, ``STG.E.U16`` 16,
``LDG.E`` 32), ``MUFU.*`` (the transcendental unit: ex2, lg2, rsq, rcp, sqrt, sin, cos) and conversions
(``F2F``, ``F2FP``, ``I2F``, ``F2I``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from workers.device.parsers.amdgcn import accesses_by_width

_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_.]*)")
_CONVERSIONS = ("F2F", "F2FP", "I2F", "F2I", "I2FP")


@dataclass
class PtxasReport:
    name: str = ""
    registers: int | None = None
    stack_bytes: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    smem_bytes: int | None = None


def parse_ptxas_log(text: str) -> list[PtxasReport]:
    """One report per entry function in a ``ptxas -v`` log, in order."""
    reports: list[PtxasReport] = []
    for line in text.splitlines():
        e = _ENTRY.search(line)
        if e:
            reports.append(PtxasReport(e.group(1)))
            continue
        if not reports:
            continue
        r = reports[-1]
        if m := _STACK.search(line):
            r.stack_bytes, r.spill_store_bytes, r.spill_load_bytes = (int(g) for g in m.groups())
        if m := _REGS.search(line):
            r.registers = int(m.group(1))
        if m := _SMEM.search(line):
            r.smem_bytes = int(m.group(1))
    return reports


@dataclass
class SassListing:
    instructions: Counter = field(default_factory=Counter)  # full opcode with modifiers -> count

    def memory_ops(self) -> dict[str, Counter]:
        return accesses_by_width(self.instructions, memory_width)

    def transcendentals(self) -> int:
        return sum(n for op, n in self.instructions.items() if op.startswith("MUFU."))

    def conversions(self) -> int:
        return sum(n for op, n in self.instructions.items() if op.split(".")[0] in _CONVERSIONS)

    def instruction_count(self) -> int:
        return sum(self.instructions.values())


def memory_width(opcode: str) -> tuple[str, int] | None:
    """``("load" | "store", bits)`` of a global load/store opcode (LDG/STG with their modifiers), else None."""
    parts = opcode.split(".")
    if parts[0] not in ("LDG", "STG"):
        return None
    bits = 32
    for p in parts[1:]:
        if p in ("128", "64"):
            bits = int(p)
        elif p in ("U16", "S16"):
            bits = 16
        elif p in ("U8", "S8"):
            bits = 8
    return ("load" if parts[0] == "LDG" else "store", bits)


def parse_sass(text: str) -> SassListing:
    """The instruction mix of a ``cuobjdump -sass`` listing (every function in it)."""
    listing = SassListing()
    for line in text.splitlines():
        m = _SASS_LINE.match(line)
        if m:
            listing.instructions[m.group(1)] += 1
    return listing
