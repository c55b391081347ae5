"""The kernels' portability rules, checked on their source: what runs on CUDA must also run on ROCm.

Inside every @triton.jit function: no libdevice / tl.math.tanh (not in ROCm's Triton), no Python min/max (use
tl.minimum/tl.maximum), no break/continue.  Nowhere in kernels/: @triton.autotune (a row block must never be tuned
below the row width).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
SOURCES = sorted(p for p in KERNELS.rglob("*.py"))


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _jit_functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if _dotted(target) in ("triton.jit", "jit"):
                    yield node


def violations(source: str) -> list[str]:
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if _dotted(target).endswith("autotune"):
                    found.append(f"line {dec.lineno}: @autotune on {node.name}")
    for fn in _jit_functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, (ast.Break, ast.Continue)):
                found.append(f"{fn.name} line {node.lineno}: {type(node).__name__.lower()} in a kernel")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
                found.append(f"{fn.name} line {node.lineno}: Python {node.func.id}() in a kernel")
            if isinstance(node, ast.Attribute):
                name = _dotted(node)
                if "libdevice" in name or name.endswith("math.tanh"):
                    found.append(f"{fn.name} line {node.lineno}: {name} is not portable to ROCm")
    return found


def test_the_kernels_have_jit_functions_to_check():
    n = sum(len(list(_jit_functions(ast.parse(p.read_text())))) for p in SOURCES)
    assert n >= 6


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(KERNELS)) for p in SOURCES])
def test_portability_rules_hold(path):
    assert violations(path.read_text()) == []


def test_the_checker_catches_each_rule():
    bad = """
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, n):
    a = tl.math.tanh(1.0)
    b = tl.extra.cuda.libdevice.tanh(1.0)
    c = min(1, 2)
    for i in range(4):
        break

@triton.autotune(configs=[], key=["n"])
@triton.jit
def k2(x_ptr, n):
    pass
"""
    found = violations(bad)
    assert any("math.tanh" in f for f in found)
    assert any("libdevice" in f for f in found)
    assert any("min()" in f for f in found)
    assert any("break" in f for f in found)
    assert any("@autotune" in f for f in found)
