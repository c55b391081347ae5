"""The shared value readers and KernelRow aggregation."""

import pytest

from workers.device.parsers import KernelRow, rows_from_durations
from workers.device.parsers.text_values import csv_rows, int_triple, integer, leading_int, number, strip_ansi


def test_value_readers():
    assert strip_ansi("\x1b[37mROCk module is loaded\x1b[0m") == "ROCk module is loaded"
    assert leading_int("64(0x40)") == 64
    assert leading_int("4096(0x1000) KB") == 4096
    assert leading_int("  304                               ") == 304
    assert leading_int("0x74a1") == 0x74A1
    assert leading_int("N/A") is None and leading_int("TRUE") is None
    assert number("3,183,673,469.39") == pytest.approx(3183673469.39)
    assert number("5.384e-04") == pytest.approx(0.0005384)
    assert number("PolicySpread") is None and number("[N/A]") is None
    assert integer("6,272") == 6272 and integer("1.5") is None
    assert int_triple("(128, 1, 1)") == (128, 1, 1) and int_triple([2, 64, 1]) == (2, 64, 1)
    assert int_triple("(1, 2)") is None
    assert csv_rows('"a, b",1\n"c",2') == [["a, b", "1"], ["c", "2"]]


def test_rows_from_durations():
    rows = rows_from_durations([("b", 10), ("a", 30), ("b", 30), ("c", 30)])
    assert [(r.name, r.calls, r.total_ns) for r in rows] == [("b", 2, 40.0), ("a", 1, 30.0), ("c", 1, 30.0)]
    b = rows[0]
    assert b.avg_ns == 20.0 and b.min_ns == 10.0 and b.max_ns == 30.0 and b.stddev_ns == 10.0
    assert b.pct == pytest.approx(40.0) and sum(r.pct for r in rows) == pytest.approx(100.0)
    assert KernelRow.from_dict(b.to_dict()) == b
    assert rows_from_durations([]) == []
