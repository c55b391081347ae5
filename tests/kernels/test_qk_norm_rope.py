"""kernels.qk_norm_rope: LTX attn1's torch.nn.RMSNorm (across heads) + interleaved RoPE on q and k, one pass."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.entries.ltx_rope import interleaved_reference, ltx_rope_tables
from kernels.entries.qk_norm_rope import ENTRIES, eager
from kernels.qk_norm_rope import (
    QkNormRopeConfig,
    qk_norm_rope,
    qk_norm_rope_config,
    qk_norm_rope_into,
    shared_table_config,
)
from kernels.registry import DTYPES
from tests.support.devices import TEST_DEVICE
from tests.support.kernel_tests import FLOATS, assert_impls_match_reference, gpu_test, rand


def make(batch, seq, dim, dtype, seed=0, per_batch=True):
    q = rand((batch, seq, dim), dtype, seed, scale=2.0)
    k = rand((batch, seq, dim), dtype, seed + 1, scale=3.0)
    qw = rand((dim,), dtype, seed + 2, scale=0.1, offset=1.0)
    kw = rand((dim,), dtype, seed + 3, scale=0.1, offset=1.0)
    cos, sin = ltx_rope_tables(torch.tensor([0, 5][:batch] + [7] * max(0, batch - 2)), seq, dim)
    if not per_batch:
        cos, sin = cos[0], sin[0]
    return q, k, qw, kw, cos, sin


def on(device, *tensors):
    return [None if t is None else t.to(device) for t in tensors]


def ltx_chain(q, k, qw, kw, cos, sin, eps=1e-5):
    """The LTX processor's own lines: torch.nn.RMSNorm modules, then diffusers' apply_rotary_emb."""
    from diffusers.models.transformers.transformer_ltx import apply_rotary_emb

    dim = q.shape[-1]
    norm_q = torch.nn.RMSNorm(dim, eps=eps, elementwise_affine=qw is not None, dtype=q.dtype)
    norm_k = torch.nn.RMSNorm(dim, eps=eps, elementwise_affine=kw is not None, dtype=k.dtype)
    with torch.no_grad():
        if qw is not None:
            norm_q.weight.copy_(qw)
        if kw is not None:
            norm_k.weight.copy_(kw)
        return apply_rotary_emb(norm_q(q), (cos, sin)), apply_rotary_emb(norm_k(k), (cos, sin))


def reference64(q, k, qw, kw, cos, sin, eps=1e-5):
    def norm(x, w):
        x = x.double()
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return y if w is None else y * w.double()

    return (
        interleaved_reference(norm(q, qw), cos.double(), sin.double()),
        interleaved_reference(norm(k, kw), cos.double(), sin.double()),
    )


def assert_matches_model(outs, expected):
    """Same dtype and shape; for bf16/fp16 bit-exact except, rarely, where the fp32 row sum's order (the one
    thing a kernel cannot mirror) tips the rounding of a normalised element by an ulp, which RoPE carries into
    both outputs of its pair (at most an ulp of the pair's norm each); for fp32 within a few ulps."""
    for got, exp in zip(outs, expected):
        got, exp = got.cpu(), exp.cpu()
        assert got.dtype == exp.dtype and got.shape == exp.shape
        e = exp.double()
        diff = (got.double() - e).abs()
        eps = torch.finfo(exp.dtype).eps
        if exp.dtype == torch.float32:
            assert bool((diff <= 8 * eps * (e.abs() + 1)).all()), f"max diff {diff.max().item()}"
        else:
            pair_norm = e.unflatten(-1, (-1, 2)).norm(dim=-1).repeat_interleave(2, dim=-1)
            assert bool((diff <= 2 * eps * pair_norm + 1e-7).all()), f"max diff {diff.max().item()}"
            assert int((diff > 0).sum()) <= 2 + 2e-3 * got.numel()


# ------------------------------------------------------------------------------------------------ numerics
@pytest.mark.parametrize("dtype", FLOATS)
def test_matches_ltx_processor_chain(dtype, device):
    q, k, qw, kw, cos, sin = make(2, 7, 256, dtype)
    outs = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin))
    assert_matches_model(outs, ltx_chain(q, k, qw, kw, cos, sin))


@pytest.mark.parametrize("dtype,rel", [(torch.float32, 1e-6), (torch.bfloat16, 8e-3), (torch.float16, 1e-3)])
@pytest.mark.parametrize("dim", [2, 6, 34, 2048])
def test_matches_float64_reference(dtype, rel, dim, device):
    q, k, qw, kw, cos, sin = make(2, 3, dim, dtype, seed=dim)
    outs = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin))
    for out, ref in zip(outs, reference64(q, k, qw, kw, cos, sin)):
        assert not torch.isnan(out).any()
        assert ((out.cpu().double() - ref).norm() / ref.norm()).item() <= rel


def test_rounds_after_the_norm_like_the_model(device):
    """The model rounds the normalised row to bf16 before RoPE: without that rounding the result differs."""
    q, k, qw, kw, cos, sin = make(2, 16, 512, torch.bfloat16, seed=11)
    q_out, _ = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin))
    normed_fp32 = F.rms_norm(q.float(), (512,), qw.float(), 1e-5)  # no intermediate rounding
    unrounded = interleaved_reference(normed_fp32, cos, sin).to(torch.bfloat16)
    assert_matches_model([q_out], ltx_chain(q, k, qw, kw, cos, sin)[:1])
    assert int((q_out.cpu() != unrounded).sum()) > 10 * (1 + 1e-3 * q_out.numel())


def test_eps_is_used(device):
    q, k, qw, kw, cos, sin = make(1, 4, 64, torch.float32, seed=2)
    small = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin), eps=1e-5)[0]
    big = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin), eps=10.0)[0]
    assert torch.allclose(big.cpu().double(), reference64(q, k, qw, kw, cos, sin, eps=10.0)[0], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(small, big)


def test_without_weights(device):
    q, k, _, kw, cos, sin = make(2, 5, 64, torch.bfloat16, seed=3)
    outs = qk_norm_rope(*on(device, q, k, None, kw, cos, sin))
    assert_matches_model(outs, ltx_chain(q, k, None, kw, cos, sin))


def test_shared_and_per_batch_tables(device):
    q, k, qw, kw, cos, sin = make(2, 6, 64, torch.bfloat16, seed=4)
    assert not torch.equal(cos[0], cos[1])
    per_batch = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin))
    assert_matches_model(per_batch, ltx_chain(q, k, qw, kw, cos, sin))
    shared = qk_norm_rope(*on(device, q, k, qw, kw, cos[0], sin[0]))
    assert_matches_model(shared, ltx_chain(q, k, qw, kw, cos[:1].expand(2, -1, -1), sin[:1].expand(2, -1, -1)))
    assert torch.equal(shared[0].cpu()[0], per_batch[0].cpu()[0]) and not torch.equal(shared[0][1], per_batch[0][1])
    one = qk_norm_rope(*on(device, q, k, qw, kw, cos[:1], sin[:1]))
    assert torch.equal(one[0], shared[0])
    # [B, S, C] with a batch stride of 0 (the injected LTX model's tables): token-major rows, the same values
    qd, kd, qwd, kwd, c1, s1 = on(device, q, k, qw, kw, cos[:1], sin[:1])
    expanded = qk_norm_rope(qd, kd, qwd, kwd, c1.expand(2, -1, -1), s1.expand(2, -1, -1))
    assert torch.equal(expanded[0], shared[0]) and torch.equal(expanded[1], shared[1])


def test_shared_tables_one_program_per_token(device):
    """Tables shared by the batch: one program taking a token's B rows (its table row read once) writes what one
    row per program writes, bit for bit; the default launch takes it where the B rows fill 2048-8192 elements."""
    assert shared_table_config(2, 1024).block_rows == 2 and shared_table_config(2, 2048).block_rows == 2
    for batch, width in ((3, 1024), (2, 64), (4, 4096)):  # B not a power of two; too narrow; too wide
        assert shared_table_config(batch, width) == qk_norm_rope_config(width)
    q, k, qw, kw, cos, sin = make(2, 5, 1024, torch.bfloat16, seed=11, per_batch=False)
    default = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin))
    assert_matches_model(default, ltx_chain(q, k, qw, kw, cos.expand(2, -1, -1), sin.expand(2, -1, -1)))
    cases = [(2, 1024, QkNormRopeConfig(1, 4)), (2, 1024, QkNormRopeConfig(2, 2)), (4, 64, QkNormRopeConfig(4, 1))]
    for batch, width, cfg in cases:
        q, k, qw, kw, cos, sin = on(device, *make(batch, 5, width, torch.bfloat16, seed=12, per_batch=False))
        row_each = qk_norm_rope(
            q, k, qw, kw, cos.expand(batch, -1, -1).contiguous(), sin.expand(batch, -1, -1).contiguous()
        )  # per-batch tables: batch-major rows
        out = (torch.full_like(q, float("nan")), torch.full_like(k, float("nan")))
        qk_norm_rope_into(out, q, k, qw, kw, cos, sin, 1e-5, _config=cfg)
        assert torch.equal(out[0], row_each[0]) and torch.equal(out[1], row_each[1]), (batch, width, cfg)


def test_non_contiguous_inputs(device):
    """q/k as views into a fused QKV projection output; channels that are not unit-stride are copied."""
    dim = 64
    qkv = rand((2, 5, 3 * dim), torch.bfloat16, seed=5)
    q, k = qkv[..., :dim], qkv[..., dim : 2 * dim]
    _, _, qw, kw, cos, sin = make(2, 5, dim, torch.bfloat16)
    outs = qk_norm_rope(*on(device, q, k, qw, kw, cos, sin))
    assert_matches_model(outs, ltx_chain(q, k, qw, kw, cos, sin))
    assert torch.equal(
        outs[0].cpu(), qk_norm_rope(*on(device, q.contiguous(), k.contiguous(), qw, kw, cos, sin))[0].cpu()
    )
    strided_q = rand((2, 5, 2 * dim), torch.bfloat16, seed=6)[..., ::2]
    big_w = rand((2 * dim,), torch.bfloat16, seed=7, offset=1.0)[::2]
    big_cos = torch.stack([cos, cos], -1).flatten(-2)[..., ::2]  # same values, channel stride 2
    assert strided_q.stride(-1) == 2 and big_w.stride(0) == 2 and big_cos.stride(-1) == 2
    outs = qk_norm_rope(*on(device, strided_q, k, big_w, kw, big_cos, sin))
    assert_matches_model(outs, ltx_chain(strided_q.contiguous(), k, big_w.contiguous(), kw, cos, sin))


def test_one_row_and_zero_size(device):
    q, k, qw, kw, cos, sin = make(1, 1, 32, torch.bfloat16, seed=8)
    assert_matches_model(qk_norm_rope(*on(device, q, k, qw, kw, cos, sin)), ltx_chain(q, k, qw, kw, cos, sin))
    for batch, seq in ((0, 4), (2, 0)):
        empty = torch.empty(batch, seq, 16, dtype=torch.bfloat16, device=device)
        table = torch.ones(seq, 16, device=device)
        q_out, k_out = qk_norm_rope(empty, empty, None, None, table, table)
        assert q_out.shape == (batch, seq, 16) and k_out.shape == (batch, seq, 16)


def test_into_writes_poisoned_out_and_config_override(device):
    q, k, qw, kw, cos, sin = on(device, *make(2, 9, 128, torch.bfloat16, seed=9))
    expected = qk_norm_rope(q, k, qw, kw, cos, sin)
    for cfg in (None, QkNormRopeConfig(1, 1), QkNormRopeConfig(4, 2), QkNormRopeConfig(16, 8)):
        out = (torch.full_like(q, float("nan")), torch.full_like(k, float("nan")))
        got = qk_norm_rope_into(out, q, k, qw, kw, cos, sin, 1e-5, _config=cfg)
        assert got[0] is out[0] and got[1] is out[1]
        assert torch.equal(out[0], expected[0]) and torch.equal(out[1], expected[1])


def test_launch_config():
    assert qk_norm_rope_config(2048) == (1, qk_norm_rope_config(2048).num_warps)
    narrow = qk_norm_rope_config(64)
    assert narrow.block_rows == 32 and narrow.block_rows & (narrow.block_rows - 1) == 0


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 3),
    seq=st.integers(1, 6),
    half=st.integers(1, 40),
    dtype=st.sampled_from(FLOATS),
    per_batch=st.booleans(),
    weights=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_random_shapes(batch, seq, half, dtype, per_batch, weights, seed, device):
    q, k, qw, kw, cos, sin = make(batch, seq, 2 * half, dtype, seed=seed, per_batch=per_batch)
    if not weights:
        qw = kw = None
    assert_matches_model(qk_norm_rope(*on(device, q, k, qw, kw, cos, sin)), ltx_chain(q, k, qw, kw, cos, sin))


# ------------------------------------------------------------------------------------------------ bad input
def _good(device=TEST_DEVICE):
    """Valid inputs on the test device (a bad-input error must name the mistake on a GPU tensor as on a CPU one)."""
    return on(device, *make(2, 3, 8, torch.float32))


BAD_CALLS = [
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q.int(), k, qw, kw, c, s), TypeError, "q has dtype"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k.half(), qw, kw, c, s), TypeError, "k .* must have q's dtype"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw.int(), kw, c, s), TypeError, "q_weight has dtype"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c.int(), s), TypeError, "cos has dtype"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c, s.half()), TypeError, r"cos \(torch.float32\) and sin"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q[0], k[0], qw, kw, c, s), ValueError, r"q must be \[B, S, C\]"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k[:1], qw, kw, c, s), ValueError, "k .* must have q's shape"),
    (
        lambda q, k, qw, kw, c, s: qk_norm_rope(q[..., :7], k[..., :7], None, None, c[..., :7], s[..., :7]),
        ValueError,
        "even",
    ),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw[:4], kw, c, s), ValueError, r"q_weight must be \[C\]"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw[None], c, s), ValueError, r"k_weight must be \[C\]"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c[:, :2], s[:, :2]), ValueError, "do not broadcast"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c[..., :4], s[..., :4]), ValueError, "do not broadcast"),
    (
        lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c[:1].expand(3, 3, 8), s[:1].expand(3, 3, 8)),
        ValueError,
        "do not broadcast",
    ),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c, s[:1]), ValueError, "same shape"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c, s, eps=-1.0), ValueError, "eps must be"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw, kw, c, s, eps="1e-5"), ValueError, "eps must be"),
    (lambda q, k, qw, kw, c, s: qk_norm_rope(q, k, qw.to("meta"), kw, c, s), ValueError, "q_weight is on meta"),
]


@pytest.mark.parametrize("call,exc,match", BAD_CALLS)
def test_bad_input_raises(call, exc, match):
    with pytest.raises(exc, match=match):
        call(*_good())


def test_into_rejects_bad_out():
    q, k, qw, kw, cos, sin = _good()
    with pytest.raises(TypeError, match="out must be a"):
        qk_norm_rope_into(torch.empty_like(q), q, k, qw, kw, cos, sin)
    with pytest.raises(ValueError, match=r"out\[1\] \(k_out\) has shape"):
        qk_norm_rope_into((torch.empty_like(q), torch.empty(2, 3, 6, device=q.device)), q, k, qw, kw, cos, sin)
    with pytest.raises(ValueError, match="unit stride"):
        out_q = torch.empty(2, 8, 3, device=q.device).transpose(1, 2)
        qk_norm_rope_into((out_q, torch.empty_like(k)), q, k, qw, kw, cos, sin)


def test_cpu_tensor_without_interpreter_is_rejected(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="q is a CPU tensor"):
        qk_norm_rope(*_good("cpu"))


def test_backward_raises(device):
    q, k, qw, kw, cos, sin = on(device, *_good())
    q.requires_grad_()
    q_out, k_out = qk_norm_rope(q, k, qw, kw, cos, sin)
    with pytest.raises(RuntimeError, match="forward-only"):
        (q_out.sum() + k_out.sum()).backward()


# ------------------------------------------------------------------------------------------------ registry entry
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(dtype_name, device):
    (entry,) = ENTRIES
    inputs = entry.make_inputs([2, 7, 128], DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    refs = entry.reference(inputs)
    assert all(r.dtype == torch.float64 for r in refs)
    assert_impls_match_reference(entry, inputs, refs, dtype_name, device, dtype_of="q")
    max_rel = entry.tolerances[dtype_name][0]
    # the eager chain is the processor's: equal to torch.nn.RMSNorm modules + diffusers apply_rotary_emb
    expected = ltx_chain(*(inputs[n].cpu() for n in ("q", "k", "q_weight", "k_weight", "cos", "sin")))
    assert_matches_model(eager(**inputs), expected)
    # a wrong answer (no weight) fails the tolerance: the check has teeth
    wrong = eager(**{**inputs, "q_weight": inputs["q_weight"] * 0 + 1.3})[0]
    assert ((wrong.double() - refs[0]).norm() / refs[0].norm()).item() > max_rel


def test_entry_model():
    (entry,) = ENTRIES
    assert entry.bytes_moved([2, 1320, 2048], torch.bfloat16) == 2 * 1320 * 2048 * (4 * 2 + 2 * 4) + 2 * 2048 * 2
    for bad in ([2, 1320], [2, 4, 7], [2, 0, 8]):
        with pytest.raises(ValueError, match="qk_norm_rope"):
            entry.check_shape(bad)


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_torch_compile_fullgraph_traces_the_op():
    q, k, qw, kw, cos, sin = on("cuda", *make(2, 33, 256, torch.bfloat16))

    def f(q, k, qw, kw, cos, sin):
        a, b = qk_norm_rope(q, k, qw, kw, cos, sin)
        return a * 2, b * 2

    got, expected = torch.compile(f, fullgraph=True)(q, k, qw, kw, cos, sin), f(q, k, qw, kw, cos, sin)
    # Inductor compiles the traced kernel with Triton's default fp fusion (eager launches turn it off), so an
    # element may differ by one ulp; nothing more
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert bool(((a.double() - b.double()).abs() <= torch.finfo(b.dtype).eps * b.double().abs()).all())


@gpu_test
def test_opcheck():
    q, k, qw, kw, cos, sin = on("cuda", *make(2, 9, 64, torch.bfloat16))
    torch.library.opcheck(torch.ops.kernelfleet.qk_norm_rope.default, (q, k, qw, kw, cos, sin, 1e-5))
    torch.library.opcheck(torch.ops.kernelfleet.qk_norm_rope.default, (q, k, None, None, cos[0], sin[0], 1e-5))


@gpu_test
@pytest.mark.parametrize("dtype", FLOATS)
def test_gpu_matches_ltx_chain(dtype):
    """On the GPU the row sum's order differs from torch's kernel, so a rare ulp may differ; nothing more.
    (``eager`` is the processor's chain, checked against the diffusers code itself on the CPU above.)"""
    q, k, qw, kw, cos, sin = on("cuda", *make(2, 1320, 2048, dtype))
    assert_matches_model(qk_norm_rope(q, k, qw, kw, cos, sin), eager(q, k, qw, kw, cos, sin, 1e-5))
