"""What the kernel test modules share: the GPU-test marker, seeded inputs, the conf folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernels.arch import interpreting
from workers.jobs import correctness

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


def assert_impls_match_reference(
    entry, inputs: dict, refs, dtype_name: str, device, impls=("triton", "eager"), dtype_of: str = "x"
) -> None:
    """Every listed implementation of a registry entry, on ``inputs``, within the entry's tolerances of ``refs``
    (its float64 reference) by the correctness job's rule (:func:`workers.jobs.correctness.compare`: shapes, NaN/inf,
    relative L2 and max-abs); outputs given for poisoning (NaN) are the ones written and returned."""
    refs = refs if isinstance(refs, tuple) else (refs,)
    tolerance = entry.tolerances[dtype_name]
    for name in impls:
        impl = entry.impls[name]
        assert impl.unavailable(device) is None, name
        fn = impl.make()
        if impl.accepts_out:
            out = entry.alloc_out(inputs)
            out_t = out if isinstance(out, tuple) else (out,)
            for t in out_t:
                t.fill_(float("nan"))
            got = fn(**inputs, out=out)
            got_t = got if isinstance(got, tuple) else (got,)
            assert all(g is o for g, o in zip(got_t, out_t)), f"{name} did not return its out= tensors"
        else:
            got = fn(**inputs)
            got_t = got if isinstance(got, tuple) else (got,)
        assert len(got_t) == len(refs), f"{name}: {len(got_t)} outputs, the reference has {len(refs)}"
        for i, g in enumerate(got_t):
            assert g.dtype == inputs[dtype_of].dtype, f"{name}: output {i} is {g.dtype}, not {inputs[dtype_of].dtype}"
        check = correctness.compare(got_t, refs, tolerance)  # the correctness job's own rule
        assert check.ok, f"{name} ({dtype_name}): {check.note}"
