"""Parser for ``rocminfo`` text output.

Handles: ANSI colour codes on the first line; key columns padded to 25 characters and values padded with
trailing spaces (or not, in copies pasted into issues); ``dec(0xhex)`` values; CPU agents listed before GPUs (they
have a ``Compute Unit`` too, so GPUs are told apart by ``Device Type: GPU``); nested ``Cache Info``/``Pool Info``/
``ISA Info`` blocks whose ``Name:`` lines are not the agent's name; a second generic ISA
(``gfx9-4-generic``); keys ending in ``::``; and an agent block without the ``Agent N`` banner (a partial copy).

The agent ``Name`` is the gfx target and, with ``Chip ID``, what identifies the part: ``Marketing Name`` is not
reliable (an MI300X shows ``AMD Radeon Graphics`` under ROCm 7.1.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workers.device.parsers.text_values import leading_int, strip_ansi

_AGENT_BANNER = re.compile(r"^Agent\s+(\d+)\s*$")
_ROCK = re.compile(r"ROCk module(?: version (\S+))? is loaded")
_POOL = re.compile(r"^Pool\s+(\d+)$")
_ISA = re.compile(r"^ISA\s+(\d+)$")


@dataclass
class MemoryPool:
    segment: str  # "GLOBAL; FLAGS: COARSE GRAINED", "GROUP", ...
    size_kb: int | None
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class RocmAgent:
    banner_index: int | None  # N of "Agent N" (None when the block had no banner)
    name: str  # gfx942 for a GPU, the CPU model for a CPU
    marketing_name: str
    vendor_name: str
    device_type: str  # GPU | CPU | DSP ...
    uuid: str
    chip_id: int | None
    compute_units: int | None
    wavefront_size: int | None
    node: int | None
    bdfid: int | None  # PCI bus/device/function packed as (bus << 8) | (device << 3) | function
    max_clock_mhz: int | None
    simds_per_cu: int | None
    cache_kb: dict[str, int] = field(default_factory=dict)  # L1/L2/L3 -> KB
    pools: list[MemoryPool] = field(default_factory=list)
    isas: list[str] = field(default_factory=list)  # amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-, ...
    fields: dict[str, str] = field(default_factory=dict)  # every top-level "Key: value" of the agent

    @property
    def is_gpu(self) -> bool:
        return self.device_type.upper() == "GPU"

    @property
    def gfx(self) -> str:
        """The gfx target (``gfx942``): the agent name, else the first specific ISA."""
        if self.name.startswith("gfx"):
            return self.name
        for isa in self.isas:
            target = isa.rsplit("--", 1)[-1].split(":")[0]
            if target.startswith("gfx") and "generic" not in target:
                return target
        return ""

    @property
    def pci_bus(self) -> int | None:
        return None if self.bdfid is None else self.bdfid >> 8

    @property
    def memory_bytes(self) -> int | None:
        """Size of the first GLOBAL pool (the device memory on a GPU)."""
        for pool in self.pools:
            if pool.segment.upper().startswith("GLOBAL") and pool.size_kb is not None:
                return pool.size_kb * 1024
        return None


@dataclass
class RocminfoReport:
    kernel_module_version: str  # "6.8.5" from "ROCk module version 6.8.5 is loaded"; "" when not printed
    runtime_version: str  # HSA "Runtime Version"
    system: dict[str, str]
    agents: list[RocmAgent]

    def gpus(self) -> list[RocmAgent]:
        return [a for a in self.agents if a.is_gpu]


def _split_key_value(stripped: str) -> tuple[str, str] | None:
    if ":" not in stripped:
        return None
    key, value = stripped.split(":", 1)  # first colon only: "AMD Instinct MI300X OAM: 750W SKU" stays whole
    value = value.lstrip(":").strip()  # "Packet Processor uCode:: 150"
    return key.strip(), value


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class _AgentBuilder:
    def __init__(self, banner_index: int | None):
        self.banner_index = banner_index
        self.fields: dict[str, str] = {}
        self.section = ""  # the top-level key whose nested block we are in
        self.cache_kb: dict[str, int] = {}
        self.pools: list[MemoryPool] = []
        self.isas: list[str] = []

    def top(self, key: str, value: str) -> None:
        if key not in self.fields:  # a nested duplicate never overwrites, and the first top-level value wins
            self.fields[key] = value
        self.section = key if value == "" else ""

    def nested(self, stripped: str) -> None:
        kv = _split_key_value(stripped)
        if self.section == "Cache Info" and kv:
            size = leading_int(kv[1])
            if size is not None:
                self.cache_kb[kv[0]] = size
        elif self.section == "Pool Info":
            m = _POOL.match(stripped)
            if m:
                self.pools.append(MemoryPool(segment="", size_kb=None))
            elif kv and self.pools:
                pool = self.pools[-1]
                pool.fields[kv[0]] = kv[1]
                if kv[0] == "Segment":
                    pool.segment = kv[1]
                elif kv[0] == "Size":
                    pool.size_kb = leading_int(kv[1])
        elif self.section == "ISA Info":
            if kv and kv[0] == "Name" and not _ISA.match(stripped):
                self.isas.append(kv[1])

    def build(self) -> RocmAgent:
        f = self.fields
        return RocmAgent(
            banner_index=self.banner_index,
            name=f.get("Name", ""),
            marketing_name=f.get("Marketing Name", ""),
            vendor_name=f.get("Vendor Name", ""),
            device_type=f.get("Device Type", ""),
            uuid=f.get("Uuid", ""),
            chip_id=leading_int(f.get("Chip ID")),
            compute_units=leading_int(f.get("Compute Unit")),
            wavefront_size=leading_int(f.get("Wavefront Size")),
            node=leading_int(f.get("Node")),
            bdfid=leading_int(f.get("BDFID")),
            max_clock_mhz=leading_int(f.get("Max Clock Freq. (MHz)")),
            simds_per_cu=leading_int(f.get("SIMDs per CU")),
            cache_kb=self.cache_kb,
            pools=self.pools,
            isas=self.isas,
            fields=dict(f),
        )


def parse(text: str) -> RocminfoReport:
    """Parse the whole of ``rocminfo``'s output (or any part of it that holds agent blocks)."""
    text = strip_ansi(text)
    kernel_module = ""
    system: dict[str, str] = {}
    agents: list[RocmAgent] = []
    current: _AgentBuilder | None = None
    in_agents = False

    def finish() -> None:
        nonlocal current
        if current is not None and current.fields:
            agents.append(current.build())
        current = None

    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        m = _ROCK.search(stripped)
        if m:
            kernel_module = m.group(1) or ""
            continue
        if stripped.startswith("***") or stripped.startswith("==="):
            continue  # agent delimiters, "*** Done ***", section rules
        if stripped == "HSA Agents":
            in_agents = True
            continue
        m = _AGENT_BANNER.match(stripped)
        if m and _indent(line) == 0:
            finish()
            current = _AgentBuilder(int(m.group(1)))
            in_agents = True
            continue
        indent = _indent(line)
        if indent == 0:
            if not in_agents:
                kv = _split_key_value(stripped)
                if kv and kv[0] != "CMD":
                    system[kv[0]] = kv[1]
            continue
        if indent <= 2:
            kv = _split_key_value(stripped)
            if kv is None:
                continue
            key, value = kv
            # An agent block without its "Agent N" banner starts at its Name line.
            if current is None or (key == "Name" and "Name" in current.fields):
                finish()
                current = _AgentBuilder(None)
            current.top(key, value)
        elif current is not None:
            current.nested(stripped)
    finish()
    return RocminfoReport(
        kernel_module_version=kernel_module,
        runtime_version=system.get("Runtime Version", ""),
        system=system,
        agents=agents,
    )
