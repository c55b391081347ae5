"""The one device the kernel, injection and worker tests run on.

A CUDA or ROCm GPU when torch sees one and Triton compiles (the kernels then run as users run them); the CPU with
Triton's interpreter otherwise (tests/conftest.py sets TRITON_INTERPRET=1 there).  With TRITON_INTERPRET=1 set on a
GPU host the tests take the CPU path too: the interpreter is the reference behaviour CI checks.  Tests take it from
the ``device`` fixture (tests/conftest.py), or from ``TEST_DEVICE`` where a module-level table or a module-scoped
fixture builds tensors or models."""

from __future__ import annotations

import pytest
import torch

from kernels.arch import interpreting

TEST_DEVICE = torch.device("cuda") if torch.cuda.is_available() and not interpreting() else torch.device("cpu")
ON_GPU = TEST_DEVICE.type == "cuda"

# A test whose expectation holds only for the interpreter on the CPU (not a GPU-only path): skipped on a GPU host with
# the reason, never on the CPU.
interpreter_only = pytest.mark.skipif(ON_GPU, reason="checks the interpreter's behaviour on the CPU")


def on_device(*tensors: torch.Tensor):
    """The tensors moved to the test device (one tensor, or a tuple of them)."""
    moved = tuple(t.to(TEST_DEVICE) for t in tensors)
    return moved[0] if len(moved) == 1 else moved


# The environment of a subprocess that must take the CPU path whatever the host (the tiny CPU variants CI runs, the
# CPU's pricing of a GPU-sized sweep): no GPU visible to torch or Ray, Triton through its interpreter.
CPU_ONLY_ENV = {
    "CUDA_VISIBLE_DEVICES": "",
    "HIP_VISIBLE_DEVICES": "",
    "ROCR_VISIBLE_DEVICES": "",
    "TRITON_INTERPRET": "1",
}
