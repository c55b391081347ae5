"""The fleet's short GPU type names (``h200``, ``mi355x``, ``r9700``, ...) and how a detected part maps to one.

AMD parts are identified by PCI device id (rocminfo's ``Chip ID``, amd-smi's ``DEVICE_ID``) first: the marketing name
is unreliable (an MI300X reports ``AMD Radeon Graphics`` under ROCm 7.1.1) and the gfx name can be overridden
(``HSA_OVERRIDE_GFX_VERSION=10.3.0`` makes an RX 6700 XT, gfx1031, report gfx1030).  Where several boards share a
device id (RX 7900 XT/XTX, MI250/MI250X) the compute-unit count decides.  NVIDIA parts are identified by name (the
model is a word of it: ``NVIDIA H200``, ``NVIDIA H100 80GB HBM3``) checked against the SM architecture.  A part in
no table gets a slug of its name (plus the arch when the name is AMD's generic ``AMD Radeon Graphics``).

Device ids come from the amdgpu/pci.ids device tables (e.g. 0x74a1 MI300X, 0x74a9 MI300X HF, 0x75a3 MI355X,
0x7551 Radeon AI PRO R9700).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuType:
    short: str  # the fleet's name, a valid Ray label value
    vendor: str  # nvidia | amd
    full_name: str
    archs: tuple[str, ...]  # sm_90 / gfx942 ...
    device_ids: tuple[int, ...] = ()  # PCI device ids (AMD)
    compute_units: tuple[int, ...] = ()  # only where boards share a device id
    name_pattern: str = ""  # regex searched in the lower-cased name


GPU_TYPES: tuple[GpuType, ...] = (
    # ---- NVIDIA (by name + arch)
    GpuType("h200", "nvidia", "NVIDIA H200", ("sm_90",), name_pattern=r"(?<![a-z0-9])h200(?![0-9])"),
    GpuType("gh200", "nvidia", "NVIDIA GH200", ("sm_90",), name_pattern=r"\bgh200\b"),
    GpuType("h100", "nvidia", "NVIDIA H100", ("sm_90",), name_pattern=r"(?<![a-z0-9])h100(?![0-9])"),
    GpuType("h800", "nvidia", "NVIDIA H800", ("sm_90",), name_pattern=r"(?<![a-z0-9])h800(?![0-9])"),
    GpuType("b200", "nvidia", "NVIDIA B200", ("sm_100",), name_pattern=r"(?<![a-z0-9])b200(?![0-9])"),
    GpuType("b300", "nvidia", "NVIDIA B300", ("sm_103", "sm_100"), name_pattern=r"(?<![a-z0-9])b300(?![0-9])"),
    GpuType("gb200", "nvidia", "NVIDIA GB200", ("sm_100",), name_pattern=r"\bgb200\b"),
    GpuType("a100", "nvidia", "NVIDIA A100", ("sm_80",), name_pattern=r"(?<![a-z0-9])a100(?![0-9])"),
    GpuType("a10g", "nvidia", "NVIDIA A10G", ("sm_86",), name_pattern=r"\ba10g\b"),
    GpuType("l40s", "nvidia", "NVIDIA L40S", ("sm_89",), name_pattern=r"\bl40s\b"),
    GpuType("l4", "nvidia", "NVIDIA L4", ("sm_89",), name_pattern=r"\bl4\b"),
    GpuType("v100", "nvidia", "Tesla V100", ("sm_70",), name_pattern=r"(?<![a-z0-9])v100(?![0-9])"),
    GpuType("rtx5090", "nvidia", "NVIDIA GeForce RTX 5090", ("sm_120",), name_pattern=r"rtx 5090\b"),
    GpuType("rtx4090", "nvidia", "NVIDIA GeForce RTX 4090", ("sm_89",), name_pattern=r"rtx 4090\b"),
    GpuType("rtx3090", "nvidia", "NVIDIA GeForce RTX 3090", ("sm_86",), name_pattern=r"rtx 3090\b"),
    # ---- AMD Instinct (by device id)
    GpuType("mi355x", "amd", "AMD Instinct MI355X", ("gfx950",), (0x75A3, 0x75B3), name_pattern=r"\bmi355x\b"),
    GpuType("mi350x", "amd", "AMD Instinct MI350X", ("gfx950",), (0x75A0, 0x75B0), name_pattern=r"\bmi350x\b"),
    GpuType("mi325x", "amd", "AMD Instinct MI325X", ("gfx942",), (0x74A5, 0x74B9), name_pattern=r"\bmi325x\b"),
    GpuType(
        "mi300x",
        "amd",
        "AMD Instinct MI300X",
        ("gfx942",),
        (0x74A1, 0x74A9, 0x74B5, 0x74BD),
        name_pattern=r"\bmi300x\b",
    ),
    GpuType(
        "mi308x",
        "amd",
        "AMD Instinct MI308X",
        ("gfx942",),
        (0x74A2, 0x74A8, 0x74B6, 0x74BC),
        name_pattern=r"\bmi308x\b",
    ),
    GpuType("mi300a", "amd", "AMD Instinct MI300A", ("gfx942",), (0x74A0,), name_pattern=r"\bmi300a\b"),
    GpuType("mi250x", "amd", "AMD Instinct MI250X", ("gfx90a",), (0x7408, 0x740C), (110,), name_pattern=r"\bmi250x\b"),
    GpuType("mi250", "amd", "AMD Instinct MI250", ("gfx90a",), (0x740C,), (104,), name_pattern=r"\bmi250\b"),
    GpuType("mi210", "amd", "AMD Instinct MI210", ("gfx90a",), (0x740F, 0x7410), name_pattern=r"\bmi210\b"),
    GpuType("mi100", "amd", "AMD Instinct MI100", ("gfx908",), (0x738C, 0x738E), name_pattern=r"\bmi100\b"),
    # ---- AMD Radeon (by device id, CUs where boards share one)
    GpuType("r9700", "amd", "AMD Radeon AI PRO R9700", ("gfx1201",), (0x7551,), name_pattern=r"\br9700\b"),
    GpuType("rx9070xt", "amd", "AMD Radeon RX 9070 XT", ("gfx1201",), (0x7550,), (64,), name_pattern=r"rx 9070 xt\b"),
    GpuType("rx9070", "amd", "AMD Radeon RX 9070", ("gfx1201",), (0x7550,), (56,), name_pattern=r"rx 9070\b"),
    GpuType(
        "rx7900xtx", "amd", "AMD Radeon RX 7900 XTX", ("gfx1100",), (0x744C,), (96,), name_pattern=r"rx 7900 xtx\b"
    ),
    GpuType("rx7900xt", "amd", "AMD Radeon RX 7900 XT", ("gfx1100",), (0x744C,), (84,), name_pattern=r"rx 7900 xt\b"),
    GpuType(
        "rx7900gre", "amd", "AMD Radeon RX 7900 GRE", ("gfx1100",), (0x744C,), (80,), name_pattern=r"rx 7900 gre\b"
    ),
    GpuType("w7900", "amd", "AMD Radeon PRO W7900", ("gfx1100",), (0x7448,), name_pattern=r"\bw7900\b"),
    GpuType("rx6900xt", "amd", "AMD Radeon RX 6900 XT", ("gfx1030",), (0x73BF,), (80,), name_pattern=r"rx 6900 xt\b"),
    GpuType("rx6800xt", "amd", "AMD Radeon RX 6800 XT", ("gfx1030",), (0x73BF,), (72,), name_pattern=r"rx 6800 xt\b"),
    GpuType("rx6800", "amd", "AMD Radeon RX 6800", ("gfx1030",), (0x73BF,), (60,), name_pattern=r"rx 6800\b"),
    GpuType("rx6700xt", "amd", "AMD Radeon RX 6700 XT", ("gfx1031",), (0x73DF,), (40,), name_pattern=r"rx 6700 xt\b"),
    GpuType("rx6700", "amd", "AMD Radeon RX 6700", ("gfx1031",), (0x73DF,), (36,), name_pattern=r"rx 6700\b"),
)

BY_SHORT: dict[str, GpuType] = {t.short: t for t in GPU_TYPES}
GENERIC_AMD_NAMES = ("amd radeon graphics", "")


def slug(text: str, max_len: int = 63) -> str:
    """Lower-case, alphanumerics and single dashes, at most ``max_len`` characters, alphanumeric at both ends."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    s = s[:max_len].strip("-")
    return s or "unknown"


def _by_device_id(device_id: int, compute_units: int | None) -> GpuType | None:
    matches = [t for t in GPU_TYPES if device_id in t.device_ids]
    if not matches:
        return None
    if compute_units is not None:
        exact = [t for t in matches if compute_units in t.compute_units]
        if exact:
            return exact[0]
    unconstrained = [t for t in matches if not t.compute_units]
    # A shared id with an unexpected CU count (a partitioned or cut-down part): the first-listed board of that id.
    return unconstrained[0] if unconstrained else matches[0]


def _by_name(vendor: str, arch: str, name: str) -> GpuType | None:
    lowered = name.lower()
    for t in GPU_TYPES:
        if t.vendor != vendor or not t.name_pattern:
            continue
        if arch and t.archs and arch not in t.archs:
            continue
        if re.search(t.name_pattern, lowered):
            return t
    return None


def lookup(
    vendor: str, arch: str, name: str, device_id: int | None = None, compute_units: int | None = None
) -> GpuType | None:
    """The table entry for a detected part, or None.  For AMD the device id wins over the name and the arch."""
    vendor = vendor.lower()
    if vendor == "amd" and device_id:
        t = _by_device_id(device_id, compute_units)
        if t is not None:
            return t
    return _by_name(vendor, arch, name)


def identify(vendor: str, arch: str, name: str, device_id: int | None = None, compute_units: int | None = None) -> str:
    """The fleet's short GPU type for a detected part: a table name, ``cpu``, or a slug of the part's name."""
    if vendor.lower() == "cpu":
        return "cpu"
    t = lookup(vendor, arch, name, device_id, compute_units)
    if t is not None:
        return t.short
    if name.strip().lower() in GENERIC_AMD_NAMES:
        return slug(f"{name or vendor} {arch}")
    return slug(name)
