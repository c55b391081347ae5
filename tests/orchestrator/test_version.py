"""python -m orchestrator --version: torch, Triton with its distribution, the launch path and the device stack,
without importing Ray or Hydra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
import triton

from workers.device.stack import format_stack

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from orchestrator.__main__ import main
code = main(["--version"])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"ray", "hydra", "omegaconf", "sqlalchemy", "dash"})
print("heavy:", ",".join(heavy) or "none")
sys.exit(code)
"""


def test_version_prints_the_stack_without_ray_or_hydra():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["torch", torch.__version__]
    assert lines[1].split() == ["triton", triton.__version__, "(triton)"]
    assert lines[2].startswith("launch path  ")
    if not torch.cuda.is_available():
        assert (
            lines[2]
            == f"launch path  triton: triton {triton.__version__}, no GPU: Triton's interpreter runs the kernels"
        )
        assert lines[3] == "device       cpu"
    assert lines[-1] == "heavy: none"


def test_the_lines_of_a_gpu_stack():
    s = {
        "torch": "2.11.0+cu130",
        "triton": {"distribution": "triton", "version": "3.6.0"},
        "launch_path": {"path": "fast", "reason": "triton 3.6.0 on cuda was checked against the fast launch"},
        "device": {"backend": "cuda", "runtime": "cuda 13.0", "driver": "580.95.05", "gpus": 1},
    }
    assert format_stack(s).splitlines() == [
        "torch        2.11.0+cu130",
        "triton       3.6.0 (triton)",
        "launch path  fast: triton 3.6.0 on cuda was checked against the fast launch",
        "device       cuda 13.0, driver 580.95.05, 1 GPU(s)",
    ]
    rocm = {
        **s,
        "triton": {"distribution": "pytorch-triton-rocm", "version": "3.5.1"},
        "device": {"backend": "hip", "runtime": "hip 7.0.51831", "driver": None, "gpus": 8},
    }
    lines = format_stack(rocm).splitlines()
    assert lines[1] == "triton       3.5.1 (pytorch-triton-rocm)"
    assert lines[3] == "device       hip 7.0.51831, driver unknown, 8 GPU(s)"
