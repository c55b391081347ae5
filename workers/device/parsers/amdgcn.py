"""AMDGCN assembly (what LLVM's AMDGPU backend prints, Triton's ``amdgcn`` stage): resources and instruction mix.

Resources come from the code object's metadata block (``.amdgpu_metadata``: ``.vgpr_count``, ``.agpr_count``,
``.sgpr_count``, ``.vgpr_spill_count``, ``.sgpr_spill_count``, ``.private_segment_fixed_size`` (scratch bytes per
work-item), ``.group_segment_fixed_size`` (LDS bytes per workgroup), ``.wavefront_size``,
``.max_flat_workgroup_size``) and from LLVM's ``; Kernel info`` comments (``; Occupancy: N`` waves per SIMD,
``; codeLenInByte = N``).  The instruction mix counts every mnemonic of the kernel's body; :func:`memory_width`
reads the access width of a global/buffer/flat load or store from its mnemonic, in both spellings: CDNA's
(``global_load_dwordx4``, ``buffer_store_short``) and RDNA4's (``global_load_b128``, ``buffer_store_b16``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# Vector memory instructions that move data between registers and global memory (scalar s_load and LDS ds_* are
# not global traffic of the kind a memory-bound kernel is judged by; scratch_* is spilling).
_VMEM = re.compile(r"^(global|buffer|flat)_(load|store)_(.+)$")
_WIDTH_BITS = {
    "dword": 32,
    "dwordx2": 64,
    "dwordx3": 96,
    "dwordx4": 128,
    "b32": 32,
    "b64": 64,
    "b96": 96,
    "b128": 128,
    "short": 16,
    "ushort": 16,
    "sshort": 16,
    "u16": 16,
    "i16": 16,
    "b16": 16,
    "short_d16": 16,
    "short_d16_hi": 16,
    "d16_b16": 16,
    "d16_hi_b16": 16,
    "byte": 8,
    "ubyte": 8,
    "sbyte": 8,
    "u8": 8,
    "i8": 8,
    "b8": 8,
    "ubyte_d16": 8,
    "sbyte_d16": 8,
    "ubyte_d16_hi": 8,
    "sbyte_d16_hi": 8,
    "d16_u8": 8,
    "d16_i8": 8,
    "d16_hi_u8": 8,
    "d16_hi_i8": 8,
    "d16_hi_b8": 8,
    "byte_d16_hi": 8,
}
# Transcendental and conversion instructions (VALU): v_exp_f32, v_log_f32, v_rsq_f32, v_rcp_f32, v_sqrt_f32,
# v_sin/v_cos, and every v_cvt_*.
_TRANSCENDENTAL = re.compile(r"^v_(exp|log|rsq|rcp|sqrt|sin|cos)_")
_CONVERSION = re.compile(r"^v_cvt_")
_MNEMONIC = re.compile(r"^\s+([a-z][a-z0-9_]*)(?:\s|$)")
_META_INT = re.compile(r"^\s+\.([a-z_]+):\s+(-?\d+)\s*$")
_META_STR = re.compile(r"^\s+\.name:\s+(\S+)\s*$")
_COMMENT_INT = re.compile(r"^;\s*([A-Za-z]+)\s*[:=]\s*(\d+)")


@dataclass
class AmdgcnKernel:
    name: str
    vgprs: int | None = None
    agprs: int | None = None
    sgprs: int | None = None
    vgpr_spills: int | None = None
    sgpr_spills: int | None = None
    scratch_bytes: int | None = None  # private segment per work-item
    lds_bytes: int | None = None  # group segment per workgroup
    wavefront_size: int | None = None
    max_workgroup_size: int | None = None
    occupancy: int | None = None  # waves per SIMD, from LLVM's "; Occupancy:" comment
    code_bytes: int | None = None
    instructions: Counter = field(default_factory=Counter)  # mnemonic -> count, the kernel's body

    def memory_ops(self) -> dict[str, Counter]:
        """``{"load": {bits: count}, "store": {bits: count}}`` over the global/buffer/flat accesses."""
        return accesses_by_width(self.instructions, memory_width)

    def unknown_memory_ops(self) -> list[str]:
        """Global/buffer/flat loads and stores whose width this parser cannot read (atomics are not counted)."""
        return sorted(
            m
            for m in self.instructions
            if _VMEM.match(m) and memory_width(m) is None and "atomic" not in m and "lds" not in m
        )

    def transcendentals(self) -> int:
        return sum(n for m, n in self.instructions.items() if _TRANSCENDENTAL.match(m))

    def conversions(self) -> int:
        return sum(n for m, n in self.instructions.items() if _CONVERSION.match(m))

    def instruction_count(self) -> int:
        return sum(self.instructions.values())


def accesses_by_width(instructions: Counter, width_of) -> dict[str, Counter]:
    """``{"load": {bits: count}, "store": {bits: count}}`` of an instruction mix, ``width_of(mnemonic)`` giving
    ``(direction, bits)`` of a memory access or None (shared with the SASS parser)."""
    out = {"load": Counter(), "store": Counter()}
    for mnemonic, n in instructions.items():
        w = width_of(mnemonic)
        if w is not None:
            out[w[0]][w[1]] += n
    return out


def memory_width(mnemonic: str) -> tuple[str, int] | None:
    """``("load" | "store", bits)`` of a global/buffer/flat load or store mnemonic, else None
    (``global_load_dwordx4`` -> ("load", 128), ``buffer_store_b16`` -> ("store", 16))."""
    m = _VMEM.match(mnemonic)
    if m is None:
        return None
    suffix = m.group(3)
    if suffix.startswith("lds_"):  # loads straight into LDS: not a register access width
        return None
    bits = _WIDTH_BITS.get(suffix)
    return None if bits is None else (m.group(2), bits)


def parse(text: str) -> list[AmdgcnKernel]:
    """Every kernel of an AMDGCN assembly file, resources from its metadata and comments, with its instructions."""
    kernels: dict[str, AmdgcnKernel] = {}
    order: list[str] = []
    lines = text.splitlines()
    # Instruction bodies: from "NAME:" (a kernel symbol declared @function) to ".Lfunc_endN:".
    functions = set(re.findall(r"^\s*\.type\s+([A-Za-z_.$][\w.$]*),@function", text, flags=re.M))
    current: AmdgcnKernel | None = None
    comments: dict[str, int] = {}
    for line in lines:
        label = line.split(";", 1)[0].rstrip()
        if label.endswith(":") and label[:-1] in functions:
            name = label[:-1]
            current = kernels.setdefault(name, AmdgcnKernel(name))
            if name not in order:
                order.append(name)
            continue
        if current is not None:
            if label.startswith(".Lfunc_end"):
                current = None
                continue
            m = _MNEMONIC.match(line)
            if m and not line.lstrip().startswith((".", ";")):
                current.instructions[m.group(1)] += 1
            continue
        c = _COMMENT_INT.match(line)
        if c:
            comments[c.group(1)] = int(c.group(2))
            if c.group(1) == "Occupancy" and order:  # "; Kernel info" follows the kernel it describes
                k = kernels[order[-1]]
                k.occupancy = comments.get("Occupancy")
                k.code_bytes = comments.get("codeLenInByte")
    _read_metadata(text, kernels)
    return [kernels[n] for n in order]


def _read_metadata(text: str, kernels: dict[str, AmdgcnKernel]) -> None:
    """Fill resources from the ``.amdgpu_metadata`` block's ``amdhsa.kernels`` entries (YAML, one map each)."""
    start = text.find(".amdgpu_metadata")
    end = text.find(".end_amdgpu_metadata", start)
    if start < 0 or end < 0:
        return
    entry: dict[str, int] = {}
    name: str | None = None

    def flush() -> None:
        if name in kernels:
            k = kernels[name]
            k.vgprs = entry.get("vgpr_count", k.vgprs)
            k.agprs = entry.get("agpr_count", k.agprs)
            k.sgprs = entry.get("sgpr_count", k.sgprs)
            k.vgpr_spills = entry.get("vgpr_spill_count", k.vgpr_spills)
            k.sgpr_spills = entry.get("sgpr_spill_count", k.sgpr_spills)
            k.scratch_bytes = entry.get("private_segment_fixed_size", k.scratch_bytes)
            k.lds_bytes = entry.get("group_segment_fixed_size", k.lds_bytes)
            k.wavefront_size = entry.get("wavefront_size", k.wavefront_size)
            k.max_workgroup_size = entry.get("max_flat_workgroup_size", k.max_workgroup_size)

    for line in text[start:end].splitlines():
        if re.match(r"^\s+-\s", line):  # a new list item: the next kernel's map (or an argument's)
            if re.match(r"^\s{2}-\s", line):  # amdhsa.kernels items sit at two spaces
                flush()
                entry, name = {}, None
            line = line.replace("-", " ", 1)
        s = _META_STR.match(line)
        if s and re.match(r"^\s{4}\.name:", line):
            name = s.group(1)
            continue
        m = _META_INT.match(line)
        if m and re.match(r"^\s{4}\.", line):  # the kernel's own keys, not its arguments' (deeper)
            entry[m.group(1)] = int(m.group(2))
    flush()
