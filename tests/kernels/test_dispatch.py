"""Plain eager calls launch the kernel directly (no op dispatch cost); anything that traces sees the torch op."""
from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import kernels
from kernels.launch import eager_direct


def _ops(fn, *args):
    g = make_fx(fn)(*args)
    return {str(n.target) for n in g.graph.nodes if n.op == "call_function"}


def test_eager_calls_go_direct():
    x = torch.randn(4, 64)
    assert eager_direct(x, None)


def test_tensors_that_need_grad_go_through_the_op():
    x = torch.randn(4, 64, requires_grad=True)
    assert not eager_direct(x)
    with torch.no_grad():
        assert eager_direct(x)


def test_make_fx_records_the_ops():
    x, w = torch.randn(2, 8, 64), torch.randn(64)
    assert "kernelfleet.rms_norm.default" in _ops(lambda x, w: kernels.rms_norm(x, w), x, w)
    scale, shift = torch.randn(2, 1, 64), torch.randn(2, 1, 64)
    assert "kernelfleet.adaln_rms.default" in _ops(lambda x, a, b: kernels.adaln_rms(x, a, b), x, scale, shift)
    cos, sin = torch.randn(8, 64), torch.randn(8, 64)
    assert "kernelfleet.rope_interleaved.default" in _ops(lambda x, c, s: kernels.rope_interleaved(x, c, s),
                                                          x, cos, sin)
    assert "kernelfleet.gelu_tanh.default" in _ops(lambda x: kernels.gelu_tanh(x), x)


def test_module_weights_go_direct_under_no_grad():
    """A module's weight is an nn.Parameter: with grad off it takes the direct launch like a plain tensor."""
    x, norm = torch.randn(2, 8, 64), torch.nn.RMSNorm(64)
    with torch.no_grad():
        assert eager_direct(x, norm.weight)
    assert not eager_direct(x, norm.weight)  # grad on and the weight requires grad: the op records it


def test_other_tensor_subclasses_go_through_the_op():
    class Sub(torch.Tensor):
        pass

    with torch.no_grad():
        assert not eager_direct(torch.randn(4).as_subclass(Sub))
