"""kernels.residual_norm: LTX-Video's residual add + norm2 + modulate, on the CPU through Triton's interpreter."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.entries.residual_norm import ENTRIES
from kernels.registry import DTYPES
from kernels.residual_norm import add_rms_norm_modulate, add_rms_norm_modulate_into
from tests.support.kernel_tests import assert_impls_match_reference, gpu_test, rand

HALF = (torch.bfloat16, torch.float16)
TOL = {torch.float32: 1e-6, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def inputs(n_b, seq, width, dtype, per_token=False, seed=0, device="cpu"):
    rows = seq if per_token else 1
    return (
        rand((n_b, seq, width), dtype, seed).to(device),
        rand((n_b, seq, width), dtype, seed + 1).to(device),
        rand((n_b, rows, width), dtype, seed + 2, 0.3).to(device),
        rand((n_b, rows, width), dtype, seed + 3, 0.3).to(device),
    )


def reference(x, residual, scale, shift, eps=1e-6):
    h = residual.double() + x.double()
    normed = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return h, normed * (1 + scale.double()) + shift.double()


def eager_chain(x, residual, scale, shift, eps=1e-6):
    """The LTX block lines with the real diffusers RMSNorm module as norm2."""
    from diffusers.models.normalization import RMSNorm

    norm2 = RMSNorm(x.shape[-1], eps=eps, elementwise_affine=False)
    hidden_states = residual + x
    return hidden_states, norm2(hidden_states) * (1 + scale) + shift


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def assert_matches_eager(out, expected):
    """Bit-exact for half dtypes except, rarely, an ulp where the fp32 row sum's order (not mirrorable) tips the
    norm's rounding, carried through the modulation.  Also used between two launches of the kernel: on a GPU the
    sum's order follows the compiled layout (strides, launch knobs)."""
    assert out.dtype == expected.dtype and out.shape == expected.shape
    diff = (out.double() - expected.double()).abs()
    bound = 8 * torch.finfo(expected.dtype).eps * max(1.0, expected.double().abs().max().item())
    assert diff.max().item() <= bound, f"max diff {diff.max().item()}"
    if expected.dtype in HALF:
        n_diff = int((diff > 0).sum())
        assert n_diff <= 1 + 1e-3 * out.numel(), f"{n_diff} of {out.numel()} elements differ"


@pytest.mark.parametrize("dtype", list(DTYPES.values()))
@pytest.mark.parametrize("width", [1000, 3000])
@pytest.mark.parametrize("per_token", [False, True])
def test_matches_float64_reference(dtype, width, per_token, device):
    args = inputs(2, 3, width, dtype, per_token, device=device)
    new_residual, normed = add_rms_norm_modulate(*args)
    ref_residual, ref_normed = reference(*args)
    assert new_residual.dtype == normed.dtype == dtype
    assert rel_err(new_residual, ref_residual) < TOL[dtype]
    assert rel_err(normed, ref_normed) < TOL[dtype]


@pytest.mark.parametrize("dtype", HALF + (torch.float32,))
@pytest.mark.parametrize("per_token", [False, True])
def test_equals_eager_chain(dtype, per_token, device):
    args = inputs(2, 5, 1000, dtype, per_token, seed=3, device=device)
    new_residual, normed = add_rms_norm_modulate(*args)
    exp_residual, exp_normed = eager_chain(*args)
    assert torch.equal(new_residual, exp_residual)  # the add rounds once, as eager's add
    assert_matches_eager(normed, exp_normed)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("per_token", [False, True])
def test_equals_ltx_block_forward(dtype, per_token, device):
    """The real LTX block: attn2's input + attn2's output -> residual, and what reaches ff is the normed result."""
    from diffusers.models.transformers.transformer_ltx import LTXVideoTransformerBlock

    n_b, seq, dim = 2, 6, 64
    block = LTXVideoTransformerBlock(dim, 2, 32, cross_attention_dim=dim).to(device=device, dtype=dtype).eval()
    seen = {}

    def before_attn2(module, args, kwargs):
        seen["residual"] = args[0] if args else kwargs["hidden_states"]

    def after_attn2(module, args, output):
        seen["attn2_out"] = output

    def before_ff(module, args):
        seen["ff_in"] = args[0]

    hooks = [
        block.attn2.register_forward_pre_hook(before_attn2, with_kwargs=True),
        block.attn2.register_forward_hook(after_attn2),
        block.ff.register_forward_pre_hook(before_ff),
    ]
    x = rand((n_b, seq, dim), dtype).to(device)
    temb = rand((n_b, seq if per_token else 1, 6 * dim), dtype, 1, 0.3).to(device)
    with torch.no_grad():
        block(x, rand((n_b, 5, dim), dtype, 2).to(device), temb)
    for h in hooks:
        h.remove()
    ada = block.scale_shift_table[None, None] + temb.reshape(n_b, temb.size(1), 6, -1)
    shift_mlp, scale_mlp = ada.unbind(dim=2)[3:5]  # strided views, as the block uses them
    with torch.no_grad():
        new_residual, normed = add_rms_norm_modulate(seen["attn2_out"], seen["residual"], scale_mlp, shift_mlp)
    assert torch.equal(new_residual, seen["residual"] + seen["attn2_out"])
    assert_matches_eager(normed, seen["ff_in"])


def test_non_contiguous_inputs(device):
    x, residual, scale, shift = inputs(3, 4, 2 * 150, torch.bfloat16, True, device=device)
    x, residual = x[:, :, ::2], residual.transpose(0, 1).contiguous().transpose(0, 1)[:, :, :150]
    scale = scale[:, :, ::2]
    shift = rand((1, 1, 150), torch.bfloat16, 9, 0.3).to(device).expand(3, 4, 150)
    got = add_rms_norm_modulate(x, residual, scale, shift)
    expected = add_rms_norm_modulate(x.contiguous(), residual.contiguous(), scale.contiguous(), shift.contiguous())
    assert torch.equal(got[0], expected[0])
    assert_matches_eager(got[1], expected[1])


@pytest.mark.parametrize("shape", [(1, 1, 2048), (4, 2, 64), (1, 7, 1)])
def test_shapes(shape, device):
    args = inputs(*shape, torch.float32, device=device)
    for out, ref in zip(add_rms_norm_modulate(*args), reference(*args)):
        assert rel_err(out, ref) < 1e-6


def test_zero_size(device):
    x = torch.empty(2, 0, 64, device=device)
    s = torch.empty(2, 1, 64, device=device)
    new_residual, normed = add_rms_norm_modulate(x, x, s, s)
    assert new_residual.shape == normed.shape == x.shape


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_b=st.integers(1, 3),
    seq=st.integers(1, 5),
    width=st.integers(1, 260),
    dtype=st.sampled_from(list(DTYPES.values())),
    per_token=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_shapes(n_b, seq, width, dtype, per_token, seed, device):
    args = inputs(n_b, seq, width, dtype, per_token, seed, device)
    tol = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 3e-3}[dtype]
    for out, ref in zip(add_rms_norm_modulate(*args), reference(*args)):
        assert out.shape == (n_b, seq, width) and not torch.isnan(out).any()
        assert (out.double() - ref).abs().max().item() <= tol * (ref.abs().max().item() + 1)


def test_into_writes_poisoned_outs(device):
    args = inputs(2, 5, 96, torch.bfloat16, device=device)
    expected = add_rms_norm_modulate(*args)
    for config in (None, (1, 1), (8, 4)):
        out = (torch.full_like(args[0], float("nan")), torch.full_like(args[0], float("nan")))
        got = add_rms_norm_modulate_into(out, *args, _config=config)
        assert got[0] is out[0] and got[1] is out[1]
        assert torch.equal(out[0], expected[0])
        assert_matches_eager(out[1], expected[1])
    with pytest.raises(TypeError, match="out must be a pair"):
        add_rms_norm_modulate_into(out[0], *args)
    with pytest.raises(TypeError, match=r"out\[1\] \(normed\) has dtype"):
        add_rms_norm_modulate_into((out[0], out[1].float()), *args)


@pytest.mark.parametrize(
    "mutate,exc,match",
    [
        (
            lambda a: {**a, "residual": a["residual"][:, :3]},
            ValueError,
            r"residual has shape \[2, 3, 32\]; expected x's",
        ),
        (lambda a: {**a, "residual": a["residual"].half()}, TypeError, "residual has dtype torch.float16"),
        (lambda a: {**a, "residual": a["residual"][0]}, ValueError, "residual has shape"),
        (lambda a: {**a, "x": 3.0}, TypeError, "x must be a torch.Tensor"),
        (lambda a: {**a, "scale": a["scale"][..., :31]}, ValueError, r"scale has shape \[2, 1, 31\]"),
        (lambda a: {**a, "shift": a["shift"].double()}, TypeError, "shift has dtype"),
        (lambda a: {**a, "eps": -1e-6}, ValueError, "eps"),
    ],
)
def test_bad_input_raises(mutate, exc, match, device):
    args = {
        name: torch.randn(2, rows, 32, device=device)
        for name, rows in (("x", 4), ("residual", 4), ("scale", 1), ("shift", 1))
    }
    with pytest.raises(exc, match=match):
        add_rms_norm_modulate(**mutate(args))


def test_backward_raises(device):
    x, residual, scale, shift = inputs(2, 3, 32, torch.float32, device=device)
    x.requires_grad_()
    new_residual, normed = add_rms_norm_modulate(x, residual, scale, shift)
    with pytest.raises(RuntimeError, match="forward-only"):
        (new_residual.sum() + normed.sum()).backward()


# ------------------------------------------------------------------------------------------------ registry entry
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(dtype_name, device):
    (entry,) = ENTRIES
    ins = entry.make_inputs([2, 3, 1000], DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    refs = entry.reference(ins)
    assert_impls_match_reference(entry, ins, refs, dtype_name, device)
    max_rel = entry.tolerances[dtype_name][0]
    wrong = entry.impls["eager"].make()(**{**ins, "residual": ins["x"]})
    assert rel_err(wrong[0], refs[0]) > max_rel


def test_entry_compile_on_a_tiny_shape(device):
    (entry,) = ENTRIES
    ins = entry.make_inputs([1, 2, 32], torch.float32, device, torch.Generator().manual_seed(1))
    for o, r in zip(entry.impls["compile"].make()(**ins), entry.reference(ins)):
        assert rel_err(o, r) <= entry.tolerances["fp32"][0]


def test_entry_model():
    (entry,) = ENTRIES
    assert entry.bytes_moved([2, 1320, 2048], torch.bfloat16) == (4 * 2 * 1320 * 2048 + 2 * 2 * 2048) * 2
    with pytest.raises(ValueError, match=r"\[B, S, C\]"):
        entry.check_shape([2, 1320, 0])


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_torch_compile_fullgraph_traces_the_op():
    args = inputs(2, 1320, 2048, torch.bfloat16, device="cuda")

    def f(x, residual, scale, shift):
        new_residual, normed = add_rms_norm_modulate(x, residual, scale, shift)
        return new_residual * 2, normed

    got, expected = torch.compile(f, fullgraph=True)(*args), f(*args)
    assert torch.equal(got[0], expected[0])
    assert_matches_eager(got[1], expected[1])


@gpu_test
def test_opcheck():
    args = inputs(2, 100, 1000, torch.bfloat16, True, device="cuda")
    torch.library.opcheck(
        torch.ops.kernelfleet.add_rms_norm_modulate.default,
        (*args, 1e-6),
        test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"),
    )


@gpu_test
def test_gpu_matches_eager_chain():
    (entry,) = ENTRIES
    for per_token in (False, True):
        args = inputs(2, 6336, 2048, torch.bfloat16, per_token, device="cuda")
        got = add_rms_norm_modulate(*args)
        expected = entry.impls["eager"].make()(*args, 1e-6)
        assert torch.equal(got[0], expected[0])
        assert_matches_eager(got[1], expected[1])
