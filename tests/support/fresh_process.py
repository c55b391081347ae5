"""What a statement imports, run in a fresh Python process (a test's own process has imported everything already)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "MODULES "


def modules_after(statement: str) -> tuple[str, set[str]]:
    """(what ``statement`` printed, the names in ``sys.modules`` after it), run from the repository's root."""
    code = f"{statement}\nimport json, sys\nprint({MARK!r} + json.dumps(sorted(sys.modules)))"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out, _, modules = p.stdout.rpartition(MARK)
    return out, set(json.loads(modules))


def kernel_modules(modules: set[str]) -> list[str]:
    """Those of ``modules`` that are torch, Triton, or a module of ``kernels`` other than the declarations."""
    return sorted(
        m
        for m in modules
        if m.split(".")[0] in ("torch", "triton") or (m.startswith("kernels.") and not m.startswith("kernels.metadata"))
    )
