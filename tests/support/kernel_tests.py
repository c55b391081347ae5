"""What the kernel test modules share: the GPU-test marker, seeded inputs, the conf folder."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernels.launch import interpreting

CONF_DIR = Path(__file__).resolve().parents[2] / "conf" / "kernel"
FLOATS = (torch.float32, torch.bfloat16, torch.float16)

GPU_TEST_MARKS = (
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
    pytest.mark.skipif(interpreting(), reason="torch.compile/opcheck need compiled Triton: set TRITON_INTERPRET=0"),
)


def gpu_test(fn):
    """A test that needs a GPU and compiled Triton (skipped, with the reason, on the CPU interpreter)."""
    for mark in GPU_TEST_MARKS:
        fn = mark(fn)
    return fn


def rand(shape, dtype=torch.float32, seed=0, scale=1.0, offset=0.0):
    """Seeded normal data (never zeros), drawn on the CPU and cast."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale + offset).to(dtype)
