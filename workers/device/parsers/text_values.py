"""Turning the text that GPU tools print into numbers and rows.

Every tool-output parser in this package goes through these few functions, so that the quirks the tools share
(ANSI colour codes, ``64(0x40)`` values, thousands separators, ``N/A``, CSV blocks mixed with log lines) are
handled in one place.
"""

from __future__ import annotations

import csv
import io
import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# "64(0x40)", "4096(0x1000) KB", "18446744073709551615 (0xFFFFFFFFFFFFFFFF) (timestamp count)"
_DEC_HEX = re.compile(r"^\s*(-?\d+)\s*(?:\(0x[0-9a-fA-F]+\))?")
_MISSING = {"", "n/a", "na", "[n/a]", "none", "-", "not supported", "[not supported]"}


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def is_missing(value: object) -> bool:
    """True for the ways tools print "no value": empty, N/A, [N/A], None."""
    return value is None or (isinstance(value, str) and value.strip().lower() in _MISSING)


def leading_int(value: str | None) -> int | None:
    """The decimal number a value starts with: ``64(0x40)`` -> 64, ``4096(0x1000) KB`` -> 4096, ``0x74a1`` -> 0x74a1."""
    if is_missing(value):
        return None
    s = value.strip()
    if s.lower().startswith("0x"):
        try:
            return int(s.split()[0].rstrip(","), 16)
        except ValueError:
            return None
    m = _DEC_HEX.match(s)
    return int(m.group(1)) if m else None


def number(value: str | None) -> float | None:
    """A float from tool text: strips thousands separators (``"3,183,673,469.39"``); exponent forms
    (``5.384e-04``) are fine; returns None for N/A and for non-numeric text (``PolicySpread``)."""
    if is_missing(value):
        return None
    s = value.strip().replace(",", "")
    try:
        return float(s)
    except ValueError:
        return None


def integer(value: str | None) -> int | None:
    """An int from tool text (thousands separators allowed; a float that is whole is accepted)."""
    f = number(value)
    if f is None or f != f or f in (float("inf"), float("-inf")):
        return None
    return int(f) if float(int(f)) == f else None


def int_triple(value: str | None) -> tuple[int, int, int] | None:
    """``"(128, 1, 1)"`` or ``[128, 1, 1]`` -> (128, 1, 1)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        parts = [int(v) for v in value]
    else:
        nums = re.findall(r"-?\d+", str(value).replace(",", " , "))
        parts = [int(n) for n in nums]
    if len(parts) != 3:
        return None
    return parts[0], parts[1], parts[2]


def csv_rows(text: str) -> list[list[str]]:
    """RFC-4180 rows (names with commas inside quotes stay whole); blank lines dropped; no newline at the end is
    fine."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    return [row for row in reader if row and any(cell.strip() for cell in row)]


def csv_records(text: str) -> list[dict[str, str]]:
    """Rows of a CSV with a header line, as dicts keyed by the header names."""
    rows = csv_rows(text)
    if not rows:
        return []
    header = [h.strip() for h in rows[0]]
    return [dict(zip(header, row)) for row in rows[1:]]
