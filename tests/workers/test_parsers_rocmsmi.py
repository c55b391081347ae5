"""rocm-smi parser: --json and the concise table (Instinct and Radeon column sets, ANSI, watch header)."""

from pathlib import Path

import pytest

from workers.parsers import rocmsmi

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_showproductname_json():
    cards = rocmsmi.parse_json(read("rocm-smi_showproductname_json_mi250x_issue159.json"))
    assert list(cards) == [0]
    assert cards[0]["Card Series"] == "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"
    assert cards[0]["Card Model"] == "0x7408" and cards[0]["GFX Version"] == "gfx9010"


def test_concise_mi300x_eight_gpus():
    rows = rocmsmi.parse_concise(read("rocm-smi_concise_mi300x_rocm6.2.2.txt"))
    assert [r.device for r in rows] == list(range(8))
    assert [r.node for r in rows] == list(range(2, 10))
    assert {r.device_id for r in rows} == {0x74A1}
    r5 = rows[5]
    assert r5.guid == "705" and r5.temp_c == 38.0 and r5.power_w == 135.0
    assert r5.temp_sensor == "Junction" and r5.power_kind == "Socket"  # sub-labels read through the ANSI italic
    assert (r5.memory_partition, r5.compute_partition, r5.partition_id) == ("NPS1", "SPX", "0")
    assert r5.sclk_mhz == 132.0 and r5.mclk_mhz == 900.0 and r5.power_cap_w == 750.0 and r5.perf == "auto"
    assert rows[2].sclk_mhz == 131.0


def test_concise_four_mi300a():
    rows = rocmsmi.parse_concise(read("rocm-smi_concise_4gpu_rocprofiler-sdk-docs.txt"))
    assert len(rows) == 4 and {r.device_id for r in rows} == {0x74A0}
    assert rows[3].node == 7 and rows[3].guid == "15139" and rows[1].mclk_mhz == 1200.0
    assert rows[2].power_w == 125.0 and rows[0].power_cap_w == 550.0


def test_concise_rx6700xt_under_watch():
    (row,) = rocmsmi.parse_concise(read("rocm-smi_concise_rx6700xt_watch.txt"))
    assert row.device == 0 and row.node == 1 and row.device_id == 0x73DF and row.guid == "61797"
    assert row.temp_sensor == "Edge" and row.power_kind == "Avg"
    assert row.temp_c == 65.0 and row.power_w == 187.0
    assert row.memory_partition is None and row.compute_partition is None and row.partition_id == "0"
    assert row.sclk_mhz == 2585.0 and row.fan_pct == pytest.approx(83.14)
    assert row.vram_pct == 37.0 and row.gpu_pct == 99.0 and row.power_cap_w == 186.0
