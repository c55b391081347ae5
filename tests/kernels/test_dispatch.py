"""Plain eager calls launch the kernel directly (no op dispatch cost); anything that traces sees the torch op."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import kernels
from kernels.arch import interpreting
from kernels.launch import eager_direct
from tests.support.kernel_tests import gpu_test


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
    device = "cpu" if interpreting() else "cuda"  # CPU tensors need the interpreter; a GPU host compiles
    x, w = torch.randn(2, 8, 64, device=device), torch.randn(64, device=device)
    assert "kernelfleet.rms_norm.default" in _ops(lambda x, w: kernels.rms_norm(x, w), x, w)
    scale, shift = torch.randn(2, 1, 64, device=device), torch.randn(2, 1, 64, device=device)
    assert "kernelfleet.adaln_rms.default" in _ops(lambda x, a, b: kernels.adaln_rms(x, a, b), x, scale, shift)
    cos, sin = torch.randn(8, 64, device=device), torch.randn(8, 64, device=device)
    assert "kernelfleet.rope_interleaved.default" in _ops(
        lambda x, c, s: kernels.rope_interleaved(x, c, s), x, cos, sin
    )
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


def test_fast_launch_key_follows_tritons_specialisation():
    from kernels.fast_launch import _specialise

    def _arg_key(a):
        return _specialise((a,))[0][0]

    base = torch.empty(64)
    assert _arg_key(base) == (torch.float32, True)
    assert _arg_key(base[1:]) == (torch.float32, False)  # 4-byte offset: not 16-byte aligned, another binary
    # an int's key: bit 0 = is 1, bit 1 = divisible by 16, bit 2 = past int32 (Triton passes it as int64)
    assert (_arg_key(1), _arg_key(32), _arg_key(33), _arg_key(-48)) == (1, 2, 0, 2)
    assert _arg_key(1 << 40) == 6 and _arg_key(-(1 << 31)) == 2 and _arg_key((1 << 31) + 1) == 4
    assert _arg_key(1e-6) is float and _arg_key(True) is True and _arg_key(None) is None
    with pytest.raises(TypeError, match="unsupported argument type str"):
        _arg_key("x")


def test_fast_launch_passes_tensors_as_addresses():
    from kernels.fast_launch import _specialise

    t = torch.empty(8, dtype=torch.bfloat16)
    key, values = _specialise((t, 3, 1e-6, None, torch.nn.Parameter(t)))
    assert values == [t.data_ptr(), 3, 1e-6, None, t.data_ptr()]
    assert key == ((torch.bfloat16, True), 0, float, None, (torch.bfloat16, True))


def _public_calls(device, seed=0):
    g = torch.Generator(device=device).manual_seed(seed)

    def r(*shape, dtype=torch.bfloat16):
        return torch.randn(*shape, generator=g, device=device, dtype=torch.float32).to(dtype)

    x, res = r(2, 40, 256), r(2, 40, 256)
    sc, sh, w, w2 = r(2, 1, 256), r(2, 40, 256), r(256), r(256)
    cos, sin = r(40, 256, dtype=torch.float32), r(40, 256, dtype=torch.float32)
    return {
        "rms_norm": lambda: kernels.rms_norm(x, w),
        "rms_norm misaligned": lambda: kernels.rms_norm(x.flatten()[1:].view(1, -1)[:, : 255 * 2].view(2, 255), None),
        "adaln_rms": lambda: kernels.adaln_rms(x, sc, sh),
        # weight and bias apart: one tensor passed twice leaves a call without a launch plan (kernels/launch_plans.py)
        "adaln_layer_norm": lambda: kernels.adaln_layer_norm(x, sc, sh, w, w2),
        "add_rms_norm_modulate": lambda: kernels.add_rms_norm_modulate(x, res, sc, sh),
        "gated_residual": lambda: kernels.gated_residual(res, x, sh),
        "qk_norm_rope": lambda: kernels.qk_norm_rope(x, res, w, w2, cos, sin),
        "qk_norm_rope one weight": lambda: kernels.qk_norm_rope(x, res, w, w, cos, sin),
        "rope_interleaved": lambda: kernels.rope_interleaved(x, cos, sin),
        "rope_rotate_half": lambda: kernels.rope_rotate_half(x.view(2, 40, 4, 64), cos[:, :64], sin[:, :64]),
        "gelu_tanh": lambda: kernels.gelu_tanh(x),
        "geglu": lambda: kernels.geglu(x),
    }


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


@gpu_test
def test_fast_launch_matches_tritons_launch(monkeypatch):
    """Every public kernel gives bit-identical results through the fast launcher and through Triton's own launch
    path, on repeat calls (the cached path) and with a misaligned input (another specialisation)."""
    from kernels import fast_launch

    calls = _public_calls(torch.device("cuda"))
    with torch.no_grad():
        monkeypatch.setattr(fast_launch, "FAST_LAUNCH", False)
        slow = {name: _as_tuple(fn()) for name, fn in calls.items()}
        monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
        for _ in range(3):
            for name, fn in calls.items():
                for got, want in zip(_as_tuple(fn()), slow[name]):
                    assert torch.equal(got, want), name
    assert fast_launch.launch_path().fast, fast_launch.launch_path().reason  # a checked Triton build
    assert all(l.cache for l in fast_launch._DIRECT.values())  # every kernel took the cached path


@gpu_test
def test_replayed_launches_match_tritons_launch_on_other_tensors(monkeypatch):
    """Launch plans recorded on one set of tensors and replayed on another of the same geometry give, bit for bit,
    what Triton's own launch path gives on the second set."""
    from kernels import fast_launch, launch_plans

    first, second = _public_calls(torch.device("cuda"), 0), _public_calls(torch.device("cuda"), 1)
    with torch.no_grad():
        monkeypatch.setattr(fast_launch, "FAST_LAUNCH", False)
        want = {name: _as_tuple(fn()) for name, fn in second.items()}
        monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
        for fn in first.values():
            fn()  # compiles (cached), records the plan
            fn()
        for name, fn in second.items():
            for got, expected in zip(_as_tuple(fn()), want[name]):
                assert torch.equal(got, expected), name
    for name in (
        "adaln_rms",
        "adaln_layer_norm",
        "add_rms_norm_modulate",
        "gated_residual",
        "rms_norm",
        "qk_norm_rope",
    ):
        assert any(isinstance(p, launch_plans._Plan) for p in launch_plans.PLANS[name].plans.values()), name


@pytest.mark.skipif(not interpreting(), reason="needs Triton's interpreter (TRITON_INTERPRET=1), as on a CPU host")
def test_direct_launch_under_the_interpreter_takes_tritons_path():
    from kernels import fast_launch

    with torch.no_grad():
        outs = {name: fn() for name, fn in _public_calls(torch.device("cpu")).items()}
    assert outs and not any(l.cache for l in fast_launch._DIRECT.values())
