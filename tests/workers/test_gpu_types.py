"""Detected part -> the fleet's short GPU type name."""

import pytest

from workers.device import gpu_types


@pytest.mark.parametrize(
    "vendor, arch, name, device_id, cus, expected",
    [
        ("nvidia", "sm_90", "NVIDIA H200", None, 132, "h200"),
        ("nvidia", "sm_90", "NVIDIA H100 80GB HBM3", None, 132, "h100"),
        ("nvidia", "sm_90", "NVIDIA GH200 480GB", None, 132, "gh200"),  # contains "h200" but is not one
        ("nvidia", "sm_80", "NVIDIA A100-PG509-200", None, 108, "a100"),
        ("nvidia", "sm_70", "Tesla V100-DGXS-32GB", None, 80, "v100"),
        ("amd", "gfx942", "AMD Instinct MI300X", 0x74A1, 304, "mi300x"),
        ("amd", "gfx942", "AMD Radeon Graphics", 0x74A9, 304, "mi300x"),  # marketing name lies; chip id decides
        ("amd", "gfx950", "AMD Instinct MI355X", 0x75A3, 256, "mi355x"),
        ("amd", "gfx950", "AMD Instinct MI355X", None, None, "mi355x"),  # by name when the id is unknown
        ("amd", "gfx1201", "AMD Radeon Graphics", 0x7551, 64, "r9700"),
        ("amd", "gfx1100", "Radeon RX 7900 XTX", 0x744C, 96, "rx7900xtx"),
        ("amd", "gfx1100", "AMD Radeon RX 7900 XT", 0x744C, 84, "rx7900xt"),  # same id, fewer CUs
        ("amd", "gfx1030", "AMD Radeon RX 6700 XT", 0x73DF, 40, "rx6700xt"),  # gfx overridden, id is gfx1031's part
        ("amd", "gfx942", "MI308X", 0x74A2, 20, "mi308x"),  # a CPX partition: 20 CUs, still the id's board
        ("amd", "gfx90a", "AMD Radeon Graphics", 0x740C, 104, "mi250"),
        ("cpu", "x86_64", "AMD EPYC 9654", None, 192, "cpu"),
    ],
)
def test_identify(vendor, arch, name, device_id, cus, expected):
    assert gpu_types.identify(vendor, arch, name, device_id, cus) == expected


def test_unknown_parts_get_a_slug_of_their_name():
    assert gpu_types.identify("nvidia", "sm_86", "NVIDIA GeForce RTX 3080") == "nvidia-geforce-rtx-3080"
    # the generic AMD name alone would merge different parts: the arch is added
    assert gpu_types.identify("amd", "gfx942", "AMD Radeon Graphics") == "amd-radeon-graphics-gfx942"
    # a known name on the wrong arch is not taken for the table entry
    assert gpu_types.identify("nvidia", "sm_80", "NVIDIA H200") == "nvidia-h200"


def test_short_names_are_unique_valid_label_values():
    shorts = [t.short for t in gpu_types.GPU_TYPES]
    assert len(shorts) == len(set(shorts))
    for s in shorts:
        assert gpu_types.slug(s) == s


def test_slug():
    assert gpu_types.slug("  NVIDIA  RTX/PRO 6000 (Blackwell) ") == "nvidia-rtx-pro-6000-blackwell"
    long = gpu_types.slug("x" * 40 + " " + "y" * 40)
    assert len(long) <= 63 and long[-1].isalnum()
    assert gpu_types.slug("???") == "unknown"
