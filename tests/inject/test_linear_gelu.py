"""The linear_gelu rewrite (kernels.inject.linear_gelu): a GELU-tanh projection as one GEMM with the activation in
its epilogue, what it computes, when it applies, and how LTX-Video's blocks use it."""

import pytest
import torch
import torch.nn.functional as F

from kernels.inject import inject, restore
from kernels.inject.linear_gelu import linear_gelu, linear_gelu_ok
from tests.inject.conftest import BF16, KernelCalls, assert_close_bf16, assert_equal
from tests.inject.test_ltx import LAYERS, PER_FORWARD, _inputs, _run, _transformer


def _args(dtype, rows=(3, 7), width=48, out=80, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*rows, width, generator=g).to(dtype)
    w = (torch.randn(out, width, generator=g) / width**0.5).to(dtype)
    b = torch.randn(out, generator=g).to(dtype)
    return x, w, b


DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU (the BLAS epilogue)"),
        ],
    ),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, BF16, torch.float16])
def test_matches_gelu_of_linear(dtype, device):
    x, w, b = (t.to(device) for t in _args(dtype, rows=(5, 67), width=256, out=384))
    assert linear_gelu_ok(x, w, b)
    out = linear_gelu(x, w, b)
    ref = F.gelu(F.linear(x, w, b), approximate="tanh")
    assert out.shape == ref.shape == (5, 67, 384) and out.dtype == dtype
    pre = F.linear(x.double(), w.double(), b.double())
    exact = F.gelu(pre, approximate="tanh")
    tol = {torch.float32: 1e-4, BF16: 2e-2, torch.float16: 2e-3}[dtype]  # fp32: TF32 may be on for the GEMM
    torch.testing.assert_close(out.double(), exact, rtol=tol, atol=tol)
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol)
    if dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32:
        # the tanh approximation, not the erf GELU (they differ by up to 4.7e-4)
        err_tanh = (out.double() - exact).abs().max().item()
        assert err_tanh < 1e-5 < (out.double() - F.gelu(pre)).abs().max().item()


@pytest.mark.parametrize("device", DEVICES)
def test_the_op_under_compile_is_addmm_with_the_gelu(device):
    """``kernelfleet::addmm_gelu_tanh`` (what linear_gelu calls while torch.compile traces): 2-D like addmm, with a
    fake kernel for tracing (opcheck)."""
    x, w, b = (t.to(device) for t in _args(torch.float32, rows=(37,), width=64, out=96))
    out = torch.ops.kernelfleet.addmm_gelu_tanh(b, x, w.t())
    torch.testing.assert_close(out, F.gelu(F.linear(x, w, b), approximate="tanh"), rtol=1e-3, atol=1e-3)
    torch.library.opcheck(torch.ops.kernelfleet.addmm_gelu_tanh.default, (b, x, w.t()))


def test_non_contiguous_input_and_one_row(device):
    x, w, b = (t.to(device) for t in _args(torch.float32, rows=(7, 3)))
    xt = x.transpose(0, 1)  # [3, 7, 48], not contiguous
    torch.testing.assert_close(linear_gelu(xt, w, b), F.gelu(F.linear(xt, w, b), approximate="tanh"))
    x1 = x[:1, :1]
    torch.testing.assert_close(linear_gelu(x1, w, b), F.gelu(F.linear(x1, w, b), approximate="tanh"))


def test_when_it_does_not_apply(device):
    x, w, b = (t.to(device) for t in _args(torch.float32))
    assert not linear_gelu_ok(x, w, None)  # no bias: nothing to carry the epilogue's bias
    assert not linear_gelu_ok(x, w.to(BF16), b)
    assert not linear_gelu_ok(x[..., :40], w, b)
    assert not linear_gelu_ok(x[:0], w, b)
    # a call that wants a gradient is the caller's to refuse (kernels.inject.grad; tests/inject/test_grad.py)
    assert linear_gelu_ok(x.requires_grad_(), w, b)


def test_ltx_blocks_use_it_and_fall_back_when_the_feed_forward_changes():
    model = _transformer()
    kw = _inputs()
    ref = _run(model, kw)
    rep = inject(model)
    by_path = {r.path: r for r in rep.replaced}
    assert "feed-forward projection + GELU-tanh as one GEMM" in by_path["transformer_blocks.0"].note
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert kc.calls["linear_gelu"] == LAYERS
    assert_close_bf16(out, ref)
    # a hook on the GELU module after injection: that block computes its feed-forward through the modules again
    seen = []
    model.transformer_blocks[1].ff.net[0].register_forward_hook(lambda m, a, o: seen.append(o.shape))
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert kc.calls["linear_gelu"] == LAYERS - 1 and len(seen) == 1
    assert_close_bf16(out, ref)
    restore(model)
    model.transformer_blocks[1].ff.net[0]._forward_hooks.clear()
    assert_equal(_run(model, kw), ref)


def test_not_selected_leaves_the_gelu_with_its_reason():
    model = _transformer()
    kw = _inputs()
    ref = _run(model, kw)
    rep = inject(model, kernels=[k for k in PER_FORWARD if k != "linear_gelu"] + ["fused_qkv"])
    left = {x.path: x.reason for x in rep.left}
    assert "the linear_gelu rewrite" in left["transformer_blocks.0.ff.net.0"]
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert "linear_gelu" not in kc.calls
    assert_close_bf16(out, ref)
    restore(model)


def test_sd3_gelu_projections_and_the_ones_left():
    """FLUX/SD3 keep their feed-forward code: each GELU-tanh projection module gets the one-GEMM forward; an erf GELU
    is left with the reason, and a projection hooked after injection makes that module fall back to its own
    forward."""
    from tests.inject.test_flux_sd3 import _run as run_sd3
    from tests.inject.test_flux_sd3 import _sd3, _sd3_inputs

    model, kw = _sd3(BF16, 2, qk_norm=None, dual=()), _sd3_inputs()
    erf = model.transformer_blocks[0].ff_context.net[0]
    erf.approximate = "none"
    ref = run_sd3(model, kw)
    rep = inject(model)
    replaced = {r.path for r in rep.replaced if r.kind == "activation_forward"}
    assert replaced == {"transformer_blocks.0.ff.net.0", "transformer_blocks.1.ff.net.0"}
    assert "not the tanh approximation" in {x.path: x.reason for x in rep.left}["transformer_blocks.0.ff_context.net.0"]
    with KernelCalls() as kc:
        out = run_sd3(model, kw)
    assert kc.calls["linear_gelu"] == 2
    assert_close_bf16(out, ref)
    model.transformer_blocks[1].ff.net[0].proj.register_forward_hook(lambda m, a, o: None)
    with KernelCalls() as kc:
        assert_close_bf16(run_sd3(model, kw), ref)
    assert kc.calls["linear_gelu"] == 1
    restore(model)
