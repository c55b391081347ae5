"""rocminfo parser on every recorded rocminfo output (values read from the files)."""

from pathlib import Path

import pytest

from workers.device.parsers import rocminfo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def parse(name: str) -> rocminfo.RocminfoReport:
    return rocminfo.parse((FIXTURES / name).read_text())


def test_mi300x_rocm622_cpu_agent_first_then_gpu():
    r = parse("rocminfo_mi300x_gfx942_rocm6.2.2.txt")
    assert r.kernel_module_version == "6.8.5"  # read through the ANSI colour codes of the first line
    assert r.runtime_version == "1.14"
    assert [a.device_type for a in r.agents] == ["CPU", "GPU"]
    cpu, gpu = r.agents
    assert cpu.name == "Intel(R) Xeon(R) Platinum 8470" and cpu.compute_units == 104 and not cpu.is_gpu
    assert r.gpus() == [gpu]
    assert gpu.banner_index == 3
    assert gpu.name == "gfx942" and gpu.gfx == "gfx942"
    assert gpu.marketing_name == "AMD Instinct MI300X"  # trailing padding stripped
    assert gpu.chip_id == 0x74A1 == 29857
    assert gpu.compute_units == 304 and gpu.wavefront_size == 64 and gpu.simds_per_cu == 4
    assert gpu.uuid == "GPU-25a594c05f2eb594"
    assert gpu.node == 2 and gpu.bdfid == 6912 and gpu.pci_bus == 0x1B
    assert gpu.max_clock_mhz == 2100
    assert gpu.cache_kb == {"L1": 32, "L2": 4096, "L3": 262144}
    assert len(gpu.pools) == 4 and gpu.pools[0].segment == "GLOBAL; FLAGS: COARSE GRAINED"
    assert gpu.memory_bytes == 201310208 * 1024
    assert gpu.isas == ["amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"]
    # "Packet Processor uCode:: 150" keeps its value without the second colon
    assert gpu.fields["Packet Processor uCode"] == "150"
    assert gpu.fields["Workgroup Max Size"] == "1024(0x400)"


def test_gunrock_rocm711_marketing_name_lies_and_generic_isa():
    r = parse("rocminfo_gfx942_rocm7.1.1_gunrock-results.sysinfo.txt")
    assert r.kernel_module_version == "6.9.4" and r.runtime_version == "1.18"
    assert r.system["XNACK enabled"] == "NO" and r.system["VMM Support"] == "YES"
    assert "CMD" not in r.system
    (gpu,) = r.gpus()
    assert gpu.marketing_name == "AMD Radeon Graphics"  # an MI300-class part; identity comes from gfx + chip id
    assert gpu.name == "gfx942" and gpu.chip_id == 0x74A9 and gpu.compute_units == 304
    # nested ISA Name: lines are ISAs, never the agent name
    assert gpu.isas == [
        "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
        "amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-",
    ]
    assert r.agents[0].name == "Intel(R) Xeon(R) Platinum 8480C" and r.agents[0].compute_units == 112


def test_mi355x_partial_agent_without_banner_or_padding():
    r = parse("rocminfo_mi355x_gfx950_partial-agent.txt")
    assert r.kernel_module_version == "" and r.system == {}
    (gpu,) = r.agents
    assert gpu.banner_index is None and gpu.is_gpu
    assert gpu.name == "gfx950" and gpu.marketing_name == "AMD Instinct MI355X"
    assert gpu.chip_id == 0x75A3 and gpu.compute_units == 256 and gpu.wavefront_size == 64
    assert gpu.fields["Cacheline Size"] == "128(0x80)"
    assert len(gpu.pools) == 2 and gpu.memory_bytes == 301973504 * 1024
    assert gpu.isas == []


def test_rx7900xtx_rdna3_wave32():
    r = parse("rocminfo_rx7900xtx_gfx1100_rdna3_rocm6.0.2.txt")
    assert r.kernel_module_version == "" and r.runtime_version == "1.1"
    cpu, gpu = r.agents
    assert cpu.name == "AMD Ryzen 5 5500" and cpu.compute_units == 12
    assert gpu.name == "gfx1100" and gpu.marketing_name == "Radeon RX 7900 XTX"
    assert gpu.chip_id == 0x744C and gpu.compute_units == 96 and gpu.wavefront_size == 32
    assert gpu.cache_kb["L2"] == 6144
    assert gpu.isas == ["amdgcn-amd-amdhsa--gfx1100"]


def test_rx6700xt_rdna2():
    r = parse("rocminfo_rx6700xt_gfx1030_rdna2.txt")
    (gpu,) = r.gpus()
    assert gpu.banner_index == 2
    assert gpu.name == "gfx1030" and gpu.marketing_name == "AMD Radeon RX 6700 XT"
    assert gpu.chip_id == 0x73DF and gpu.compute_units == 40 and gpu.wavefront_size == 32
    assert r.agents[0].name == "12th Gen Intel(R) Core(TM) i3-12100F"


def test_marketing_name_with_a_colon_is_split_on_the_first_colon_only():
    text = (FIXTURES / "rocminfo_mi300x_gfx942_rocm6.2.2.txt").read_text()
    assert "Marketing Name:          AMD Instinct MI300X" in text
    text = text.replace(
        "Marketing Name:          AMD Instinct MI300X", "Marketing Name:          AMD Instinct MI300X OAM: 750W SKU"
    )
    (gpu,) = rocminfo.parse(text).gpus()
    assert gpu.marketing_name == "AMD Instinct MI300X OAM: 750W SKU"


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("rocminfo_*")))
def test_every_fixture_has_exactly_one_gpu_with_identity(name):
    (gpu,) = parse(name).gpus()
    assert gpu.gfx.startswith("gfx") and gpu.chip_id and gpu.compute_units and gpu.wavefront_size in (32, 64)
