"""Integer arguments of the store commands, checked where argparse reads them: a run id or a count the store's
integer columns can hold (an out-of-range number is argparse's one-line usage error, exit 2, never a database
overflow traceback), and the regression rule's ``--threshold``, checked where the command starts."""

from __future__ import annotations

import argparse
import sys

INT32_MAX = 2**31 - 1  # the runs table's id is a 32-bit integer on PostgreSQL


def run_id(text: str) -> int:
    """A run id: 1 to INT32_MAX."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run id (a whole number)") from None
    if not 1 <= value <= INT32_MAX:
        raise argparse.ArgumentTypeError(f"{text} is not a run id (1 to {INT32_MAX})")
    return value


def count(text: str) -> int:
    """How many rows to show: a whole number >= 1; larger than any store holds means all of them."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a count >= 1")
    return min(value, INT32_MAX)


def bad_threshold(value: float) -> bool:
    """Whether ``--threshold`` is not a fraction such as 0.05 (then the error is printed): the compare and
    regressions commands exit 2 on it."""
    if 0 < value < 10:
        return False
    print(f"error: --threshold {value}: a fraction such as 0.05", file=sys.stderr)
    return True
