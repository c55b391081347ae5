"""Shared pieces of the injection tests: a counter of the kernel calls the injected code makes, the bf16
comparison, and torch.compile helpers (a backend that records Dynamo's graphs, undoing compilation).  Without a
GPU the kernels run through Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1)."""

import sys
from collections import Counter

import torch

BF16 = torch.bfloat16


class KernelCalls:
    """Counts calls of kernelfleet's kernel functions made by the injection code while active.

    The injection modules import the kernels by name (``from kernels import rms_norm``); inside the context each
    such name is a counting wrapper around the same function.  (Counting torch-op dispatches would miss the
    kernels' eager fast path, which launches without going through the op.)  The rewrites' GEMM functions that
    are not Triton kernels (``linear_gelu``) are counted the same way."""

    def __init__(self):
        self.calls: Counter[str] = Counter()
        self._patched: list[tuple[object, str, object]] = []

    def _wrap(self, name, fn):
        def counted(*args, **kwargs):
            self.calls[name] += 1
            return fn(*args, **kwargs)

        return counted

    def __enter__(self):
        import kernels
        from kernels.inject.linear_gelu import linear_gelu

        counted = {**{name: getattr(kernels, name) for name in kernels.__all__}, "linear_gelu": linear_gelu}
        for modname, mod in list(sys.modules.items()):
            if mod is None or not modname.startswith("kernels.inject"):
                continue
            for name, fn in counted.items():
                if getattr(mod, name, None) is fn:
                    self._patched.append((mod, name, fn))
                    setattr(mod, name, self._wrap(name, fn))
        return self

    def __exit__(self, *exc):
        for mod, name, fn in reversed(self._patched):
            setattr(mod, name, fn)
        self._patched.clear()
        return False


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
        assert (o64 - r64).abs().max() <= 8 * 2**-8 * r64.abs().max(), "max-abs beyond a few bf16 ulps"


def assert_equal(out, ref):
    for o, r in zip(outputs(out), outputs(ref)):
        assert torch.equal(o, r)


class GraphRecorder:
    """A torch.compile backend that keeps every FX graph Dynamo hands over, then runs it as it is or, with
    ``inductor=True``, compiles it with Inductor."""

    def __init__(self, inductor: bool = False):
        self.inductor = inductor
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        if not self.inductor:
            return gm.forward
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(gm, example_inputs)

    def linears(self) -> list[int]:
        """F.linear calls per graph."""
        return [
            sum(n.op == "call_function" and n.target is torch._C._nn.linear for n in gm.graph.nodes)
            for gm in self.graphs
        ]


def uncompile(model):
    """Drop what ``compile_repeated_blocks``/``module.compile`` installed, and Dynamo's caches."""
    for m in model.modules():
        if getattr(m, "_compiled_call_impl", None) is not None:
            m._compiled_call_impl = None
    torch._dynamo.reset()
