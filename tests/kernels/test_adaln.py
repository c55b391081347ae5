"""kernels.adaln: RMSNorm / LayerNorm + ``* (1 + scale) + shift``, on the CPU through Triton's interpreter."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.adaln import adaln_layer_norm, adaln_layer_norm_into, adaln_rms, adaln_rms_into
from kernels.entries.adaln import ENTRIES
from kernels.registry import DTYPES
from tests.support.kernel_tests import assert_impls_match_reference, gpu_test, rand

HALF = (torch.bfloat16, torch.float16)
ENTRY = {e.name: e for e in ENTRIES}


def modulation(n_b, seq, width, dtype, per_token, seed=10):
    rows = seq if per_token else 1
    return rand((n_b, rows, width), dtype, seed, 0.3), rand((n_b, rows, width), dtype, seed + 1, 0.3)


def ref_rms(x, scale, shift, eps, weight=None):
    x = x.double()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    return y * (1 + scale.double()) + shift.double()


def ref_layer_norm(x, scale, shift, eps, weight=None, bias=None):
    x = x.double()
    c = x - x.mean(-1, keepdim=True)
    y = c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y * (1 + scale.double()) + shift.double()


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def assert_matches_eager(out, expected):
    """Bit-exact for half dtypes except, rarely, where the fp32 row sum's order (not mirrorable) tips the norm's
    rounding by an ulp, which the modulation then carries (scaled by at most |1 + scale|).  Also used between two
    launches of the kernel: on a GPU the sum's order follows the compiled layout (strides, launch knobs)."""
    assert out.dtype == expected.dtype and out.shape == expected.shape
    diff = (out.double() - expected.double()).abs()
    bound = 8 * torch.finfo(expected.dtype).eps * max(1.0, expected.double().abs().max().item())
    assert diff.max().item() <= bound, f"max diff {diff.max().item()}"
    if expected.dtype in HALF:
        n_diff = int((diff > 0).sum())
        assert n_diff <= 1 + 1e-3 * out.numel(), f"{n_diff} of {out.numel()} elements differ"


TOL = {torch.float32: 1e-6, torch.bfloat16: 1e-2, torch.float16: 2e-3}


# ------------------------------------------------------------------------------------------------ float64 reference
@pytest.mark.parametrize("dtype", list(DTYPES.values()))
@pytest.mark.parametrize("width", [1000, 3000])
@pytest.mark.parametrize("per_token", [False, True])
def test_matches_float64_reference(dtype, width, per_token, device):
    x = rand((2, 3, width), dtype).to(device)
    scale, shift = (t.to(device) for t in modulation(2, 3, width, dtype, per_token))
    assert rel_err(adaln_rms(x, scale, shift), ref_rms(x, scale, shift, 1e-6)) < TOL[dtype]
    assert rel_err(adaln_layer_norm(x, scale, shift), ref_layer_norm(x, scale, shift, 1e-6)) < TOL[dtype]


@pytest.mark.parametrize("dtype", list(DTYPES.values()))
def test_weight_and_bias(dtype, device):
    x = rand((2, 4, 300), dtype).to(device)
    scale, shift = (t.to(device) for t in modulation(2, 4, 300, dtype, False))
    w = rand((300,), dtype, 3, 0.2, 1.0).to(device)
    b = rand((300,), dtype, 4, 0.2).to(device)
    assert rel_err(adaln_rms(x, scale, shift, w), ref_rms(x, scale, shift, 1e-6, w)) < TOL[dtype]
    out = adaln_layer_norm(x, scale, shift, w, b, eps=1e-5)
    assert rel_err(out, ref_layer_norm(x, scale, shift, 1e-5, w, b)) < TOL[dtype]
    assert (
        rel_err(adaln_layer_norm(x, scale, shift, None, b), ref_layer_norm(x, scale, shift, 1e-6, None, b)) < TOL[dtype]
    )


# ------------------------------------------------------------------------------------------- the modules it mirrors
@pytest.mark.parametrize("dtype", HALF + (torch.float32,))
@pytest.mark.parametrize("per_token", [False, True])
def test_rms_equals_ltx_block_norm1_chain(dtype, per_token, device):
    """The real LTX block's forward: what reaches attn1 is norm1(x) * (1 + scale_msa) + shift_msa."""
    from diffusers.models.transformers.transformer_ltx import LTXVideoTransformerBlock

    n_b, seq, dim = 2, 6, 64
    block = LTXVideoTransformerBlock(dim, 2, 32, cross_attention_dim=dim).to(device=device, dtype=dtype).eval()
    x = rand((n_b, seq, dim), dtype).to(device)
    temb = rand((n_b, seq if per_token else 1, 6 * dim), dtype, 1, 0.3).to(device)
    seen = {}

    def capture(module, args, kwargs):
        seen["attn1_in"] = kwargs["hidden_states"]

    hook = block.attn1.register_forward_pre_hook(capture, with_kwargs=True)
    with torch.no_grad():
        block(x, rand((n_b, 5, dim), dtype, 2).to(device), temb)
    hook.remove()
    ada = block.scale_shift_table[None, None] + temb.reshape(n_b, temb.size(1), 6, -1)
    shift_msa, scale_msa = ada.unbind(dim=2)[:2]  # strided views into ada, as the block uses them
    with torch.no_grad():
        assert_matches_eager(adaln_rms(x, scale_msa, shift_msa), seen["attn1_in"])


@pytest.mark.parametrize("dtype", HALF + (torch.float32,))
def test_layer_norm_equals_ada_layer_norm_zero(dtype, device):
    from diffusers.models.normalization import AdaLayerNormZero, AdaLayerNormZeroSingle

    n_b, seq, dim = 2, 7, 96
    x = rand((n_b, seq, dim), dtype).to(device)
    emb = rand((n_b, dim), dtype, 1).to(device)
    with torch.no_grad():
        zero = AdaLayerNormZero(dim).to(device=device, dtype=dtype)
        expected = zero(x, emb=emb)[0]
        shift, scale = zero.linear(zero.silu(emb)).chunk(6, dim=1)[:2]
        assert_matches_eager(adaln_layer_norm(x, scale[:, None], shift[:, None]), expected)

        single = AdaLayerNormZeroSingle(dim).to(device=device, dtype=dtype)
        expected = single(x, emb=emb)[0]
        shift, scale = single.linear(single.silu(emb)).chunk(3, dim=1)[:2]
        assert_matches_eager(adaln_layer_norm(x, scale[:, None], shift[:, None]), expected)


@pytest.mark.parametrize("dtype", HALF)
def test_affine_layer_norm_equals_nn_layer_norm(dtype, device):
    ln = torch.nn.LayerNorm(1000, eps=1e-5).to(device=device, dtype=dtype)
    with torch.no_grad():
        ln.weight.copy_(rand((1000,), dtype, 5, 0.2, 1.0))
        ln.bias.copy_(rand((1000,), dtype, 6, 0.2))
        x = rand((2, 5, 1000), dtype).to(device)
        scale, shift = (t.to(device) for t in modulation(2, 5, 1000, dtype, True))
        expected = ln(x) * (1 + scale) + shift
        assert_matches_eager(adaln_layer_norm(x, scale, shift, ln.weight, ln.bias, eps=1e-5), expected)


@pytest.mark.parametrize("dtype", HALF)
def test_rms_with_weight_equals_diffusers_rmsnorm_chain(dtype, device):
    from diffusers.models.normalization import RMSNorm

    m = RMSNorm(500, eps=1e-6).to(device=device, dtype=dtype)
    with torch.no_grad():
        m.weight.copy_(rand((500,), dtype, 5, 0.2, 1.0))
        x = rand((3, 4, 500), dtype).to(device)
        scale, shift = (t.to(device) for t in modulation(3, 4, 500, dtype, False))
        assert_matches_eager(adaln_rms(x, scale, shift, m.weight), m(x) * (1 + scale) + shift)


def test_rounding_after_each_step_matters(device):
    """Keeping fp32 through the modulate would differ from eager: the per-step rounding is what makes it exact."""
    x = rand((4, 8, 512), torch.bfloat16).to(device)
    scale, shift = (t.to(device) for t in modulation(4, 8, 512, torch.bfloat16, True))
    variance = x.float().pow(2).mean(-1, keepdim=True)
    eager = (x * torch.rsqrt(variance + 1e-6)).to(x.dtype) * (1 + scale) + shift
    fused_fp32 = ((x.float() * torch.rsqrt(variance + 1e-6)) * (1 + scale.float()) + shift.float()).to(x.dtype)
    assert not torch.equal(eager, fused_fp32)
    assert_matches_eager(adaln_rms(x, scale, shift), eager)


# ------------------------------------------------------------------------------------------------ layouts and sizes
def test_non_contiguous_inputs(device):
    x = rand((3, 5, 2 * 200), torch.bfloat16).to(device)[:, :, ::2]
    xt = rand((5, 3, 200), torch.bfloat16, 1).to(device).transpose(0, 1)
    scale = rand((3, 200), torch.bfloat16, 2, 0.3).to(device)[:, None, :]
    shift = rand((3, 5, 200), torch.bfloat16, 3, 0.3).to(device)  # per token, while scale is broadcast
    expanded = rand((1, 1, 200), torch.bfloat16, 4, 0.3).to(device).expand(3, 5, 200)  # stride 0 everywhere
    for fn in (adaln_rms, adaln_layer_norm):
        for xx in (x, xt):
            for sc, sh in (
                (scale, shift),
                (expanded, scale),
                (shift.transpose(0, 1).contiguous().transpose(0, 1), expanded),
            ):
                assert_matches_eager(fn(xx, sc, sh), fn(xx.contiguous(), sc.contiguous(), sh.contiguous()))


@pytest.mark.parametrize("shape", [(1, 1, 64), (4, 2, 3000), (1, 9, 1)])
def test_shapes(shape, device):
    n_b, seq, width = shape
    x = rand(shape, torch.float32).to(device)
    scale, shift = (t.to(device) for t in modulation(n_b, seq, width, torch.float32, False))
    assert rel_err(adaln_rms(x, scale, shift), ref_rms(x, scale, shift, 1e-6)) < 1e-6
    if width > 1:  # LayerNorm of one element is 0 * rstd + shift: the relative error of shift alone
        assert rel_err(adaln_layer_norm(x, scale, shift), ref_layer_norm(x, scale, shift, 1e-6)) < 1e-6


def test_zero_size(device):
    x = torch.empty(2, 0, 64, device=device)
    s = torch.empty(2, 1, 64, device=device)
    assert adaln_rms(x, s, s).shape == x.shape
    assert adaln_layer_norm(x, s, s).shape == x.shape


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_b=st.integers(1, 3),
    seq=st.integers(1, 5),
    width=st.integers(2, 260),
    dtype=st.sampled_from(list(DTYPES.values())),
    per_token=st.booleans(),
    layer_norm=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_shapes(n_b, seq, width, dtype, per_token, layer_norm, seed, device):
    x = rand((n_b, seq, width), dtype, seed).to(device)
    scale, shift = (t.to(device) for t in modulation(n_b, seq, width, dtype, per_token, seed + 1))
    fn, ref = (adaln_layer_norm, ref_layer_norm) if layer_norm else (adaln_rms, ref_rms)
    out = fn(x, scale, shift)
    expected = ref(x, scale, shift, 1e-6)
    tol = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 3e-3}[dtype]
    assert out.shape == x.shape and not torch.isnan(out).any()
    assert (out.double() - expected).abs().max().item() <= tol * (expected.abs().max().item() + 1)


# ------------------------------------------------------------------------------------------------ out= launchers
@pytest.mark.parametrize("into,fn", [(adaln_rms_into, adaln_rms), (adaln_layer_norm_into, adaln_layer_norm)])
def test_into_writes_poisoned_out(into, fn, device):
    x = rand((2, 5, 96), torch.bfloat16).to(device)
    scale, shift = (t.to(device) for t in modulation(2, 5, 96, torch.bfloat16, False))
    expected = fn(x, scale, shift)
    for config in (None, (1, 1), (8, 4)):
        out = torch.full_like(x, float("nan"))
        assert into(out, x, scale, shift, _config=config) is out
        assert_matches_eager(out, expected)
    with pytest.raises(ValueError, match="out has shape"):
        into(torch.empty(2, 5, 95, dtype=torch.bfloat16, device=device), x, scale, shift)


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("fn", [adaln_rms, adaln_layer_norm])
@pytest.mark.parametrize(
    "mutate,exc,match",
    [
        (lambda a: {**a, "x": a["x"][0]}, ValueError, r"x has shape \[4, 32\]; expected 3 dimensions \[B, S, C\]"),
        (lambda a: {**a, "x": a["x"].tolist()}, TypeError, "x must be a torch.Tensor"),
        (
            lambda a: {**a, "scale": a["scale"][:, :, :16]},
            ValueError,
            r"scale has shape \[2, 1, 16\]; expected \[B, 1, C\]",
        ),
        (lambda a: {**a, "shift": a["shift"][0]}, ValueError, "shift has shape"),
        (lambda a: {**a, "shift": a["x"][:, :3]}, ValueError, r"or \[B, S, C\] = \[2, 4, 32\]"),
        (lambda a: {**a, "scale": a["scale"].half()}, TypeError, "scale has dtype torch.float16; expected x's dtype"),
        (lambda a: {**a, "weight": a["x"][0, 0, :31]}, ValueError, r"weight has shape \[31\]; expected \[32\]"),
        (lambda a: {**a, "weight": a["x"][0, 0].double()}, TypeError, "weight has dtype"),
        (lambda a: {**a, "eps": float("nan")}, ValueError, "eps"),
    ],
)
def test_bad_input_raises(fn, mutate, exc, match, device):
    args = {
        "x": torch.randn(2, 4, 32, device=device),
        "scale": torch.randn(2, 1, 32, device=device),
        "shift": torch.randn(2, 1, 32, device=device),
    }
    with pytest.raises(exc, match=match):
        fn(**mutate(args))


def test_layer_norm_bias_checked(device):
    x, s = torch.randn(2, 4, 32, device=device), torch.randn(2, 1, 32, device=device)
    with pytest.raises(ValueError, match=r"bias has shape \[2, 32\]"):
        adaln_layer_norm(x, s, s, bias=torch.zeros(2, 32, device=device))


@pytest.mark.parametrize("fn", [adaln_rms, adaln_layer_norm])
def test_backward_raises(fn, device):
    x = rand((2, 3, 32), torch.float32).to(device).requires_grad_()
    s = rand((2, 1, 32), torch.float32, 1).to(device)
    with pytest.raises(RuntimeError, match="forward-only"):
        fn(x, s, s).sum().backward()


# ------------------------------------------------------------------------------------------------ registry entries
@pytest.mark.parametrize("name", sorted(ENTRY))
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(name, dtype_name, device):
    entry = ENTRY[name]
    inputs = entry.make_inputs([2, 3, 1000], DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    assert inputs["scale"].shape == (2, 1, 1000)
    ref = entry.reference(inputs)
    assert_impls_match_reference(entry, inputs, ref, dtype_name, device)
    max_rel = entry.tolerances[dtype_name][0]
    assert rel_err(entry.impls["eager"].make()(**{**inputs, "shift": -inputs["shift"]}), ref) > max_rel


@pytest.mark.parametrize("name", sorted(ENTRY))
def test_entry_compile_on_a_tiny_shape(name, device):
    entry = ENTRY[name]
    inputs = entry.make_inputs([1, 2, 32], torch.float32, device, torch.Generator().manual_seed(1))
    out = entry.impls["compile"].make()(**inputs)
    assert rel_err(out, entry.reference(inputs)) <= entry.tolerances["fp32"][0]


@pytest.mark.parametrize("name", sorted(ENTRY))
def test_entry_model(name):
    entry = ENTRY[name]
    assert entry.bytes_moved([2, 1320, 2048], torch.bfloat16) == (2 * 2 * 1320 * 2048 + 2 * 2 * 2048) * 2
    with pytest.raises(ValueError, match=r"\[B, S, C\]"):
        entry.check_shape([1320, 2048])


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_torch_compile_fullgraph_traces_the_ops():
    x = torch.randn(2, 1320, 2048, device="cuda", dtype=torch.bfloat16)
    scale = torch.randn(2, 1, 2048, device="cuda", dtype=torch.bfloat16) * 0.3
    shift = torch.randn(2, 1320, 2048, device="cuda", dtype=torch.bfloat16) * 0.3

    def f(x, scale, shift):
        return adaln_rms(x, scale, shift) + adaln_layer_norm(x, scale, shift)

    assert_matches_eager(torch.compile(f, fullgraph=True)(x, scale, shift), f(x, scale, shift))


@gpu_test
def test_opcheck():
    x = torch.randn(2, 100, 1000, device="cuda", dtype=torch.bfloat16)
    s = torch.randn(2, 1, 1000, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1000, device="cuda", dtype=torch.bfloat16)
    utils = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")
    torch.library.opcheck(torch.ops.kernelfleet.adaln_rms.default, (x, s, s, None, 1e-6), test_utils=utils)
    torch.library.opcheck(torch.ops.kernelfleet.adaln_rms.default, (x, s, s, w, 1e-6), test_utils=utils)
    torch.library.opcheck(torch.ops.kernelfleet.adaln_layer_norm.default, (x, s, s, w, w, 1e-6), test_utils=utils)


@gpu_test
def test_gpu_matches_eager_chains():
    x = torch.randn(2, 6336, 2048, device="cuda", dtype=torch.bfloat16)
    for rows in (1, 6336):
        scale = torch.randn(2, rows, 2048, device="cuda", dtype=torch.bfloat16) * 0.3
        shift = torch.randn(2, rows, 2048, device="cuda", dtype=torch.bfloat16) * 0.3
        assert_matches_eager(adaln_rms(x, scale, shift), ENTRY["adaln"].impls["eager"].make()(x, scale, shift, 1e-6))
        ln = torch.nn.LayerNorm(2048, eps=1e-6, elementwise_affine=False)
        assert_matches_eager(adaln_layer_norm(x, scale, shift), ln(x) * (1 + scale) + shift)
