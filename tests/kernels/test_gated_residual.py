"""kernels.gated_residual: LTX-Video's ``hidden_states + branch_output * gate``, on the CPU through Triton's
interpreter; bit-exact with the eager line (the product rounded, then the sum)."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.entries.gated_residual import ENTRIES
from kernels.gated_residual import gated_residual, gated_residual_into
from kernels.registry import DTYPES
from tests.support.kernel_tests import assert_impls_match_reference, gpu_test, rand

TOL = {torch.float32: 1e-6, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def inputs(n_b, seq, width, dtype, per_token=False, seed=0, device="cpu"):
    return (
        rand((n_b, seq, width), dtype, seed).to(device),
        rand((n_b, seq, width), dtype, seed + 1).to(device),
        rand((n_b, seq if per_token else 1, width), dtype, seed + 2, 0.3).to(device),
    )


def reference(residual, x, gate):
    return residual.double() + x.double() * gate.double()


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("dtype", list(DTYPES.values()))
@pytest.mark.parametrize("width", [1000, 3000])
@pytest.mark.parametrize("per_token", [False, True])
def test_matches_float64_reference(dtype, width, per_token, device):
    args = inputs(2, 3, width, dtype, per_token, device=device)
    out = gated_residual(*args)
    assert out.dtype == dtype and out.shape == args[0].shape
    assert rel_err(out, reference(*args)) < TOL[dtype]


@pytest.mark.parametrize("dtype", list(DTYPES.values()))
@pytest.mark.parametrize("per_token", [False, True])
def test_equals_the_eager_line_bit_for_bit(dtype, per_token, device):
    residual, x, gate = inputs(2, 7, 1000, dtype, per_token, seed=3, device=device)
    assert torch.equal(gated_residual(residual, x, gate), residual + x * gate)


@pytest.mark.parametrize("per_token", [False, True])
def test_equals_ltx_block_forward(per_token, device):
    """The real LTX block: the residual after attn1 is exactly ``gated_residual(x, attn1(...), gate_msa)`` with
    gate_msa a strided view of the ada values, as the block takes it."""
    from diffusers.models.transformers.transformer_ltx import LTXVideoTransformerBlock

    n_b, seq, dim, dtype = 2, 6, 64, torch.bfloat16
    block = LTXVideoTransformerBlock(dim, 2, 32, cross_attention_dim=dim).to(device=device, dtype=dtype).eval()
    seen = {}
    hooks = [
        block.attn1.register_forward_hook(lambda m, a, out: seen.__setitem__("attn1", out)),
        block.attn2.register_forward_pre_hook(
            lambda m, a, kw: seen.__setitem__("after", a[0] if a else kw["hidden_states"]), with_kwargs=True
        ),
    ]
    x = rand((n_b, seq, dim), dtype).to(device)
    temb = rand((n_b, seq if per_token else 1, 6 * dim), dtype, 1, 0.3).to(device)
    with torch.no_grad():
        block(x, rand((n_b, 5, dim), dtype, 2).to(device), temb)
    for h in hooks:
        h.remove()
    gate_msa = (block.scale_shift_table[None, None] + temb.reshape(n_b, temb.size(1), 6, -1)).unbind(dim=2)[2]
    with torch.no_grad():
        assert torch.equal(gated_residual(x, seen["attn1"], gate_msa), seen["after"])


def test_non_contiguous_inputs(device):
    residual, x, gate = inputs(3, 4, 2 * 150, torch.bfloat16, True, device=device)
    residual, x, gate = residual[:, :, ::2], x.transpose(0, 1).contiguous().transpose(0, 1)[:, :, :150], gate[..., 1::2]
    expected = gated_residual(residual.contiguous(), x.contiguous(), gate.contiguous())
    assert torch.equal(gated_residual(residual, x, gate), expected)
    shared = rand((1, 1, 150), torch.bfloat16, 9, 0.3).to(device).expand(3, 1, 150)  # stride 0 over the batch
    assert torch.equal(gated_residual(residual, x, shared), residual + x * shared)


@pytest.mark.parametrize("shape", [(1, 1, 2048), (4, 2, 64), (1, 7, 1)])
def test_shapes(shape, device):
    args = inputs(*shape, torch.float32, device=device)
    assert rel_err(gated_residual(*args), reference(*args)) < 1e-6


def test_zero_size(device):
    x = torch.empty(2, 0, 64, device=device)
    assert gated_residual(x, x, torch.empty(2, 1, 64, device=device)).shape == x.shape


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
    residual, x, gate = inputs(n_b, seq, width, dtype, per_token, seed, device)
    assert torch.equal(gated_residual(residual, x, gate), residual + x * gate)


def test_into_writes_poisoned_out(device):
    args = inputs(2, 5, 96, torch.bfloat16, device=device)
    expected = gated_residual(*args)
    for config in (None, (1, 1), (8, 4)):
        out = torch.full_like(args[0], float("nan"))
        assert gated_residual_into(out, *args, _config=config) is out
        assert torch.equal(out, expected)
    with pytest.raises(TypeError, match="out has dtype"):
        gated_residual_into(out.float(), *args)


@pytest.mark.parametrize(
    "mutate,exc,match",
    [
        (
            lambda a: {**a, "residual": a["residual"][:, :3]},
            ValueError,
            r"residual has shape \[2, 3, 32\]; expected x's",
        ),
        (lambda a: {**a, "residual": a["residual"].half()}, TypeError, "residual has dtype torch.float16"),
        (lambda a: {**a, "x": a["x"][0]}, ValueError, "x has shape"),
        (lambda a: {**a, "x": 3.0}, TypeError, "x must be a torch.Tensor"),
        (lambda a: {**a, "gate": a["gate"][..., :31]}, ValueError, r"gate has shape \[2, 1, 31\]"),
        (lambda a: {**a, "gate": a["gate"].double()}, TypeError, "gate has dtype"),
        (lambda a: {**a, "gate": a["gate"].int()}, TypeError, "gate has dtype torch.int32"),
    ],
)
def test_bad_input_raises(mutate, exc, match, device):
    args = {name: torch.randn(2, rows, 32, device=device) for name, rows in (("residual", 4), ("x", 4), ("gate", 1))}
    with pytest.raises(exc, match=match):
        gated_residual(**mutate(args))


def test_backward_raises(device):
    residual, x, gate = inputs(2, 3, 32, torch.float32, device=device)
    x.requires_grad_()
    with pytest.raises(RuntimeError, match="forward-only"):
        gated_residual(residual, x, gate).sum().backward()


# ------------------------------------------------------------------------------------------------ registry entry
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(dtype_name, device):
    (entry,) = ENTRIES
    ins = entry.make_inputs([2, 3, 1000], DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    ref = entry.reference(ins)
    assert_impls_match_reference(entry, ins, ref, dtype_name, device)
    wrong = entry.impls["eager"].make()(**{**ins, "x": ins["residual"]})
    assert rel_err(wrong, ref) > entry.tolerances[dtype_name][0]


def test_entry_model():
    (entry,) = ENTRIES
    assert entry.bytes_moved([2, 1320, 2048], torch.bfloat16) == (3 * 2 * 1320 * 2048 + 2 * 2048) * 2
    with pytest.raises(ValueError, match=r"\[B, S, C\]"):
        entry.check_shape([2, 1320])


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_torch_compile_fullgraph_traces_the_op():
    args = inputs(2, 1320, 2048, torch.bfloat16, device="cuda")

    def f(residual, x, gate):
        return gated_residual(residual, x, gate) * 2

    assert torch.equal(torch.compile(f, fullgraph=True)(*args), f(*args))


@gpu_test
def test_opcheck():
    args = inputs(2, 100, 1000, torch.bfloat16, True, device="cuda")
    torch.library.opcheck(
        torch.ops.kernelfleet.gated_residual.default,
        args,
        test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"),
    )


@gpu_test
def test_gpu_equals_the_eager_line():
    for per_token in (False, True):
        residual, x, gate = inputs(2, 6336, 2048, torch.bfloat16, per_token, device="cuda")
        assert torch.equal(gated_residual(residual, x, gate), residual + x * gate)
