"""Command-line value types shared by the benchmark scripts."""

from __future__ import annotations

import argparse


def shape(text: str) -> list[int]:
    """``2x1320x2048`` -> [2, 1320, 2048]."""
    try:
        dims = [int(d) for d in text.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r}: expected sizes joined by x, e.g. 2x1320x2048") from None
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"shape {text!r}: sizes must be positive")
    return dims


def case(text: str) -> tuple[str, list[int]]:
    """``rmsnorm:2x1320x2048`` -> ("rmsnorm", [2, 1320, 2048])."""
    name, sep, dims = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"case {text!r}: expected KERNEL:SHAPE, e.g. rmsnorm:2x1320x2048")
    return name, shape(dims)


def launch(text: str) -> tuple[int, int]:
    """``1x4`` -> (rows per program 1, warps 4)."""
    dims = shape(text)
    if len(dims) != 2:
        raise argparse.ArgumentTypeError(f"launch config {text!r}: expected ROWSxWARPS, e.g. 1x4")
    return dims[0], dims[1]
