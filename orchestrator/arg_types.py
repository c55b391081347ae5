"""Integer arguments of the store commands, checked where argparse reads them: a run id or a count the store's
integer columns can hold (an out-of-range number is argparse's one-line usage error, exit 2, never a database
overflow traceback)."""

from __future__ import annotations

import argparse

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
