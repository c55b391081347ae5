"""Shared pieces of the injection tests: tiny models of each family, a counter of kernelfleet op calls, and the
bf16 comparison.  Kernels run through Triton's interpreter on the CPU (TRITON_INTERPRET=1, set before import)."""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")

from collections import Counter  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

BF16 = torch.bfloat16


class KernelCalls(TorchDispatchMode):
    """Counts calls of kernelfleet's ops (``kernelfleet::<name>``) made while it is active."""

    def __init__(self):
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ns, _, rest = str(func).partition(".")
        if ns == "kernelfleet":
            self.calls[rest.split(".")[0]] += 1
        return func(*args, **(kwargs or {}))


def outputs(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def assert_close_bf16(out, ref, rel_l2=1e-2):
    """Within bf16 rounding of the reference: relative L2 error and a max-abs bound of a few bf16 ulps."""
    for o, r in zip(outputs(out), outputs(ref)):
        assert o.shape == r.shape and o.dtype == r.dtype
        o64, r64 = o.double(), r.double()
        assert torch.isfinite(o64).all()
        err = torch.linalg.vector_norm(o64 - r64) / torch.linalg.vector_norm(r64)
        assert err <= rel_l2, f"rel_l2 {err:.3g} > {rel_l2}"
        assert (o64 - r64).abs().max() <= 8 * 2 ** -8 * r64.abs().max(), "max-abs beyond a few bf16 ulps"


def assert_equal(out, ref):
    for o, r in zip(outputs(out), outputs(ref)):
        assert torch.equal(o, r)


@pytest.fixture
def count_kernels():
    return KernelCalls
