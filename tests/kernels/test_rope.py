"""kernels.rope: interleaved (LTX/FLUX) and rotate-half (Llama) RoPE, on the CPU through Triton's interpreter."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.entries.ltx_rope import interleaved_reference, ltx_rope_tables
from kernels.entries.rope import ENTRIES, llama_rope_tables, rotate_half
from kernels.registry import DTYPES
from kernels.rope import (
    RopeConfig,
    rope_config,
    rope_interleaved,
    rope_interleaved_into,
    rope_rotate_half,
    rope_rotate_half_into,
)
from tests.support.devices import TEST_DEVICE
from tests.support.kernel_tests import FLOATS, assert_impls_match_reference, gpu_test, rand


def angle_tables(shape, seed=1):
    """Interleaved (repeat_interleave(2)) fp32 cos/sin of random angles, like LTX's/FLUX's tables."""
    angles = rand((*shape[:-1], shape[-1] // 2), seed=seed, scale=3.0)
    return angles.cos().repeat_interleave(2, -1), angles.sin().repeat_interleave(2, -1)


def interleaved_eager(x, cos, sin):
    """The model's interleaved formula (LTX/FLUX apply_rotary_emb) for any rank: fp32 math, one rounding."""
    x_rot = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return (x.float() * cos + x_rot.float() * sin).to(x.dtype)


def ltx_eager(x, cos, sin):
    """diffusers' LTX apply_rotary_emb itself."""
    from diffusers.models.transformers.transformer_ltx import apply_rotary_emb

    return apply_rotary_emb(x, (cos, sin))


def rotate_half_eager(x, cos, sin, seq_dim):
    """transformers' apply_rotary_pos_emb itself (cos/sin [S, D] or [B, S, D])."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    if cos.dim() == 2:
        cos, sin = cos[None], sin[None]
    out, _ = apply_rotary_pos_emb(x, x, cos, sin, unsqueeze_dim=2 if seq_dim == 1 else 1)
    return out


def assert_within_one_rounding(out, ref64):
    """out is ref64 rounded once to out's dtype (plus fp32 arithmetic error)."""
    assert not torch.isnan(out).any()
    eps = torch.finfo(out.dtype).eps
    bound = eps * ref64.abs() + 1e-6
    diff = (out.double() - ref64).abs()
    assert bool((diff <= bound).all()), f"max diff {diff.max().item()}"


# ------------------------------------------------------------------------------------------------ interleaved
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("width", [2, 6, 34, 64, 130])
def test_interleaved_matches_float64_reference(dtype, width, device):
    x = rand((2, 5, width), dtype).to(device)
    cos, sin = angle_tables((2, 5, width))
    out = rope_interleaved(x, cos.to(device), sin.to(device))
    assert out.dtype == dtype and out.shape == x.shape
    assert_within_one_rounding(out.cpu(), interleaved_reference(x.double().cpu(), cos.double(), sin.double()))


@pytest.mark.parametrize("dtype", FLOATS)
def test_interleaved_is_bit_exact_with_ltx_apply_rotary_emb(dtype, device):
    from diffusers.models.transformers.transformer_ltx import LTXVideoRotaryPosEmbed

    dim, frames, height, width = 64, 3, 4, 5
    rope_emb = LTXVideoRotaryPosEmbed(dim=dim)
    # per-batch coordinates differ (video_coords, as the condition pipelines pass them): batch 1 starts later
    coords = (
        torch.stack(torch.meshgrid(torch.arange(frames), torch.arange(height), torch.arange(width), indexing="ij"))
        .flatten(1)
        .float()
    )
    video_coords = torch.stack([coords, coords + torch.tensor([[2.0], [1.0], [3.0]])])  # [B, 3, S]
    hidden = torch.zeros(2, frames * height * width, dim)
    cos, sin = rope_emb(hidden, video_coords=video_coords)
    assert cos.shape == (2, 60, dim) and not torch.equal(cos[0], cos[1])
    x = rand((2, 60, dim), dtype, seed=3)
    out = rope_interleaved(x.to(device), cos.to(device), sin.to(device)).cpu()
    assert torch.equal(out, ltx_eager(x, cos, sin))


def test_ltx_tables_are_the_models(device):
    from diffusers.models.transformers.transformer_ltx import LTXVideoRotaryPosEmbed

    for dim in (64, 2048):  # 64 % 6 = 4 and 2048 % 6 = 2 padding channels (cos 1, sin 0)
        frames, height, width = 2, 15, 22
        ref_cos, ref_sin = LTXVideoRotaryPosEmbed(dim=dim)(
            torch.zeros(2, 1, dim), frames, height, width, rope_interpolation_scale=(8.0 / 25.0, 32, 32)
        )
        cos, sin = ltx_rope_tables(torch.zeros(2, dtype=torch.int64), frames * height * width, dim)
        assert torch.equal(cos, ref_cos) and torch.equal(sin, ref_sin)
        pad = dim % 6
        assert bool((cos[..., :pad] == 1).all()) and bool((sin[..., :pad] == 0).all())


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sequence_dim", [1, 2])
def test_interleaved_is_bit_exact_with_flux_apply_rotary_emb(dtype, sequence_dim, device):
    from diffusers.models.embeddings import apply_rotary_emb

    batch, heads, seq, dim = 2, 3, 7, 32
    shape = (batch, heads, seq, dim) if sequence_dim == 2 else (batch, seq, heads, dim)
    x = rand(shape, dtype, seed=4)
    cos, sin = angle_tables((seq, dim), seed=5)  # FLUX: [S, D] fp32 shared by batch and heads
    expected = apply_rotary_emb(x, (cos, sin), use_real=True, use_real_unbind_dim=-1, sequence_dim=sequence_dim)
    out = rope_interleaved(x.to(device), cos.to(device), sin.to(device)).cpu()
    assert torch.equal(out, expected)


def test_interleaved_4d_per_batch_tables(device):
    batch, seq, heads, dim = 2, 6, 3, 16
    x = rand((batch, seq, heads, dim), torch.bfloat16)
    cos, sin = angle_tables((batch, seq, dim))
    out = rope_interleaved(x.to(device), cos.to(device), sin.to(device)).cpu()
    ref = interleaved_reference(x.double(), cos.double()[:, :, None], sin.double()[:, :, None])
    assert_within_one_rounding(out, ref)
    # the batch rows of the table are really used: batch 1 with batch 0's table gives something else
    wrong = rope_interleaved(x.to(device), cos[:1].expand(2, -1, -1).to(device), sin[:1].expand(2, -1, -1).to(device))
    assert not torch.equal(wrong.cpu()[1], out[1])


def test_interleaved_broadcast_tables_equal_expanded(device):
    x = rand((3, 5, 24), torch.bfloat16).to(device)
    cos, sin = angle_tables((5, 24))
    cos, sin = cos.to(device), sin.to(device)
    shared = rope_interleaved(x, cos, sin)
    assert torch.equal(shared, rope_interleaved(x, cos[None], sin[None]))
    assert torch.equal(shared, rope_interleaved(x, cos.expand(3, 5, 24), sin.expand(3, 5, 24)))


def test_interleaved_non_contiguous_inputs(device):
    big = rand((2, 9, 48), torch.bfloat16).to(device)
    x = big[:, 1:8, 8:40]  # strided rows, offset start
    cos_big, sin_big = angle_tables((2, 7, 64))
    cos, sin = cos_big[..., 16:48].to(device), sin_big[..., 16:48].to(device)
    expected = ltx_eager(x.cpu(), cos.cpu(), sin.cpu())
    assert torch.equal(rope_interleaved(x, cos, sin).cpu(), expected)
    # a last dim that is not unit-stride is copied, not rejected
    xs = big[..., ::2]
    cos24, sin24 = angle_tables((2, 9, 24))
    assert xs.stride(-1) == 2
    assert torch.equal(
        rope_interleaved(xs, cos24.to(device), sin24.to(device)).cpu(), ltx_eager(xs.cpu().contiguous(), cos24, sin24)
    )
    # a transposed 4-D view [B, H, S, D] of a [B, S, H, D] tensor keeps its layout in the output
    x4 = rand((2, 5, 3, 16), torch.float16).to(device).transpose(1, 2)
    cos4, sin4 = angle_tables((5, 16))
    out4 = rope_interleaved(x4, cos4.to(device), sin4.to(device))
    assert out4.stride() == x4.stride()
    ref4 = interleaved_reference(x4.double().cpu(), cos4.double(), sin4.double())
    assert_within_one_rounding(out4.cpu(), ref4)


def test_interleaved_one_row_and_zero_size(device):
    cos, sin = angle_tables((1, 1, 8))
    x = rand((1, 1, 8), torch.bfloat16).to(device)
    assert torch.equal(rope_interleaved(x, cos.to(device), sin.to(device)).cpu(), ltx_eager(x.cpu(), cos, sin))
    for shape, tshape in (((0, 4, 8), (4, 8)), ((2, 0, 8), (0, 8)), ((2, 4, 3, 0), (4, 0))):
        empty = torch.empty(shape, dtype=torch.bfloat16, device=device)
        out = rope_interleaved(empty, torch.ones(tshape, device=device), torch.zeros(tshape, device=device))
        assert out.shape == shape and out.dtype == torch.bfloat16


def test_layout_inference_and_ambiguity(device):
    x = rand((2, 4, 4, 8), torch.float32).to(device)  # H == S: ambiguous
    cos, sin = angle_tables((4, 8))
    cos, sin = cos.to(device), sin.to(device)
    with pytest.raises(ValueError, match="ambiguous.*layout"):
        rope_interleaved(x, cos, sin)
    bshd = rope_interleaved(x, cos, sin, layout="bshd").cpu()
    bhsd = rope_interleaved(x, cos, sin, layout="bhsd").cpu()
    ref_bshd = interleaved_reference(x.double().cpu(), cos.double().cpu()[:, None], sin.double().cpu()[:, None])
    ref_bhsd = interleaved_reference(x.double().cpu(), cos.double().cpu(), sin.double().cpu())
    assert_within_one_rounding(bshd, ref_bshd)
    assert_within_one_rounding(bhsd, ref_bhsd)
    assert not torch.equal(bshd, bhsd)


# ------------------------------------------------------------------------------------------------ rotate-half
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout_seq_dim", [1, 2])
def test_rotate_half_is_bit_exact_with_transformers(dtype, layout_seq_dim, device):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    batch, heads, seq, dim = 2, 3, 9, 16
    config = LlamaConfig(hidden_size=heads * dim, num_attention_heads=heads, max_position_embeddings=512)
    x = rand((batch, seq, heads, dim) if layout_seq_dim == 1 else (batch, heads, seq, dim), dtype, seed=6)
    positions = torch.stack([torch.arange(seq), torch.arange(seq) + 40])  # per-batch positions
    cos, sin = LlamaRotaryEmbedding(config)(x, positions)  # [B, S, D] in x's dtype
    assert cos.dtype == dtype and not torch.equal(cos[0], cos[1])
    out = rope_rotate_half(x.to(device), cos.to(device), sin.to(device)).cpu()
    assert torch.equal(out, rotate_half_eager(x, cos, sin, layout_seq_dim))


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16))
def test_rotate_half_fp32_tables_round_once(dtype, device):
    x = rand((2, 7, 3, 24), dtype)
    cos, sin = llama_rope_tables(torch.arange(5, 12), 24, torch.float32)
    out = rope_rotate_half(x.to(device), cos.to(device), sin.to(device)).cpu()
    ref = x.double() * cos.double()[:, None] + rotate_half(x.double()) * sin.double()[:, None]
    assert_within_one_rounding(out, ref)
    # and differs from transformers' per-op rounding somewhere (the option matters)
    per_op = rope_rotate_half(x.to(device), cos.to(dtype).to(device), sin.to(dtype).to(device)).cpu()
    assert not torch.equal(out, per_op)


def test_rotate_half_non_contiguous_and_into(device):
    big = rand((2, 3, 10, 40), torch.bfloat16).to(device)
    x = big[:, :, 1:9, 4:36]  # [B, H, S, D] view with padded rows
    cos, sin = llama_rope_tables(torch.arange(8), 32, torch.bfloat16)
    expected = rotate_half_eager(x.cpu(), cos, sin, 2)
    assert torch.equal(rope_rotate_half(x, cos.to(device), sin.to(device)).cpu(), expected)
    out_big = torch.full((2, 3, 8, 64), float("nan"), dtype=torch.bfloat16, device=device)
    out = out_big[..., :32]
    assert rope_rotate_half_into(out, x, cos.to(device), sin.to(device)) is out
    assert torch.equal(out.cpu(), expected)
    assert torch.isnan(out_big[..., 32:]).all()  # nothing written outside the view


def test_rotate_half_fp16_tables_with_bf16_x_rejected(device):
    x = rand((1, 4, 2, 8), torch.bfloat16).to(device)
    cos, sin = llama_rope_tables(torch.arange(4), 8, torch.float16)
    with pytest.raises(TypeError, match="cos/sin dtype"):
        rope_rotate_half(x, cos.to(device), sin.to(device))


# ------------------------------------------------------------------------------------------------ random shapes
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 3),
    seq=st.integers(1, 9),
    heads=st.integers(0, 4),
    half=st.integers(1, 20),
    dtype=st.sampled_from(FLOATS),
    per_batch=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_random_shapes(batch, seq, heads, half, dtype, per_batch, seed, device):
    dim = 2 * half
    xshape = (batch, seq, dim) if heads == 0 else (batch, seq, heads, dim)
    x = rand(xshape, dtype, seed=seed)
    cos, sin = angle_tables((batch, seq, dim) if per_batch else (seq, dim), seed=seed + 1)
    layout = "bshd" if heads == seq else None
    out = rope_interleaved(x.to(device), cos.to(device), sin.to(device), layout=layout).cpu()
    if heads == 0:
        c, s = cos, sin
    else:
        c, s = (cos[:, :, None], sin[:, :, None]) if per_batch else (cos[:, None], sin[:, None])
    assert torch.equal(out, interleaved_eager(x, c, s))  # fp32 math, one rounding: bit-exact
    if heads:
        tc, ts = cos.to(dtype), sin.to(dtype)
        got = rope_rotate_half(x.to(device), tc.to(device), ts.to(device), layout=layout).cpu()
        assert torch.equal(got, rotate_half_eager(x, tc, ts, 1))


# ------------------------------------------------------------------------------------------------ bad input
def _good(device=TEST_DEVICE):
    """Valid inputs on the test device (a bad-input error must name the mistake on a GPU tensor as on a CPU one)."""
    x = torch.zeros(2, 3, 8)
    cos, sin = angle_tables((3, 8))
    return x.to(device), cos.to(device), sin.to(device)


BAD_CALLS = [
    (lambda x, c, s: rope_interleaved(x.int(), c, s), TypeError, "x has dtype"),
    (lambda x, c, s: rope_interleaved(x, c.double(), s), TypeError, "cos has dtype"),
    (lambda x, c, s: rope_interleaved(x, c, s.half()), TypeError, r"cos \(torch.float32\) and sin"),
    (lambda x, c, s: rope_interleaved(x.cpu().numpy(), c, s), TypeError, "x must be a torch.Tensor"),
    (lambda x, c, s: rope_interleaved(x, c, s[:2]), ValueError, "cos .* and sin .* same shape"),
    (lambda x, c, s: rope_interleaved(x[..., :7], c[:, :7], s[:, :7]), ValueError, "even"),
    (lambda x, c, s: rope_interleaved(x, c[:, :6], s[:, :6]), ValueError, "last dim 6 must equal x's last dim 8"),
    (lambda x, c, s: rope_interleaved(x, c[:2], s[:2]), ValueError, "do not broadcast"),
    (lambda x, c, s: rope_interleaved(x, c.expand(3, 3, 8), s.expand(3, 3, 8)), ValueError, "batch dim 3"),
    (lambda x, c, s: rope_interleaved(x[0], c, s), ValueError, "x must be"),
    (lambda x, c, s: rope_interleaved(x, c[0], s[0]), ValueError, "cos/sin must be"),
    (lambda x, c, s: rope_interleaved(x, c, s, layout="bshd"), ValueError, "only for a 4-D x"),
    (
        lambda x, c, s: rope_interleaved(x[:, :, None].expand(2, 3, 3, 8), c, s, layout="sbhd"),
        ValueError,
        "layout must be one of",
    ),
    (lambda x, c, s: rope_interleaved(x[:, None].expand(2, 2, 3, 8)[:, :, :2], c, s), ValueError, "do not broadcast"),
    (lambda x, c, s: rope_rotate_half(x.int(), c, s), TypeError, "x has dtype"),
    (lambda x, c, s: rope_rotate_half(x[..., :7], c[:, :7], s[:, :7]), ValueError, "even"),
]


@pytest.mark.parametrize("call,exc,match", BAD_CALLS)
def test_bad_input_raises(call, exc, match):
    x, cos, sin = _good()
    with pytest.raises(exc, match=match):
        call(x, cos, sin)


def test_into_rejects_bad_out():
    x, cos, sin = _good()
    with pytest.raises(ValueError, match=r"out has shape \[2, 3, 6\]; expected \[2, 3, 8\]"):
        rope_interleaved_into(torch.empty(2, 3, 6, device=x.device), x, cos, sin)
    with pytest.raises(TypeError, match="out has dtype torch.float16; expected torch.float32"):
        rope_interleaved_into(torch.empty(2, 3, 8, dtype=torch.float16, device=x.device), x, cos, sin)
    with pytest.raises(ValueError, match="unit stride"):
        rope_interleaved_into(torch.empty(2, 8, 3, device=x.device).transpose(1, 2), x, cos, sin)
    with pytest.raises(TypeError, match="out must be a torch.Tensor"):
        rope_interleaved_into(None, x, cos, sin)


def test_tables_on_another_device_rejected():
    x, cos, sin = _good()
    with pytest.raises(ValueError, match="cos is on meta"):
        rope_interleaved(x, cos.to("meta"), sin)


def test_cpu_tensor_without_interpreter_is_rejected(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    x, cos, sin = _good("cpu")
    with pytest.raises(ValueError, match="x is a CPU tensor"):
        rope_interleaved(x, cos, sin)
    with pytest.raises(ValueError, match="x is a CPU tensor"):
        rope_rotate_half(x, cos, sin)


@pytest.mark.parametrize("fn", [rope_interleaved, rope_rotate_half])
def test_backward_raises(fn, device):
    x, cos, sin = _good()
    x = x.to(device).requires_grad_()
    out = fn(x, cos.to(device), sin.to(device))
    with pytest.raises(RuntimeError, match="forward-only"):
        out.sum().backward()


# ------------------------------------------------------------------------------------------------ launch knobs
def test_launch_config_and_override(device):
    wide = rope_config(1, 2048)
    assert wide.block_h == 1 and wide.block_s == 1  # one 2048-wide interleaved row per program
    narrow = rope_config(16, 32, interleaved=False)  # rotate-half D=64: half-width 32, 16 heads share cos/sin
    assert narrow.block_h == 16 and narrow.block_s * narrow.block_h * 32 == 1024  # 2048 elements of x, two halves
    for cfg in (wide, narrow):
        assert all(v >= 1 and v & (v - 1) == 0 for v in cfg)
    x = rand((2, 7, 3, 16), torch.bfloat16).to(device)
    cos, sin = angle_tables((7, 16))
    cos, sin = cos.to(device), sin.to(device)
    expected = rope_interleaved(x, cos, sin)
    for cfg in (RopeConfig(1, 1, 1), RopeConfig(4, 2, 2), RopeConfig(8, 4, 4)):
        out = torch.full_like(x, float("nan"))
        assert torch.equal(rope_interleaved_into(out, x, cos, sin, _config=cfg), expected)


# ------------------------------------------------------------------------------------------------ registry entries
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(entry, dtype_name, device):
    shape = [2, 9, 64] if entry.name == "rope" else [2, 9, 3, 32]
    entry.check_shape(shape)
    inputs = entry.make_inputs(shape, DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    ref = entry.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == tuple(shape)
    assert_impls_match_reference(entry, inputs, ref, dtype_name, device)
    max_rel = entry.tolerances[dtype_name][0]
    # a wrong answer (sin negated: the rotation the other way) fails the tolerance: the check has teeth
    wrong = entry.impls["eager"].make()(**{**inputs, "sin": -inputs["sin"]})
    assert ((wrong.double() - ref).norm() / ref.norm()).item() > max_rel


def test_entry_inputs_are_the_models():
    rope = ENTRIES[0]
    inputs = rope.make_inputs([2, 330, 2048], torch.bfloat16, torch.device("cpu"), torch.Generator().manual_seed(2))
    assert inputs["cos"].dtype == torch.float32 and inputs["cos"].shape == (2, 330, 2048)
    assert bool((inputs["cos"][..., :2] == 1).all()) and bool((inputs["sin"][..., :2] == 0).all())
    assert torch.equal(inputs["cos"][..., 2::2], inputs["cos"][..., 3::2])  # repeat_interleave(2)
    fresh = rope.make_inputs([2, 330, 2048], torch.bfloat16, torch.device("cpu"), torch.Generator().manual_seed(3))
    assert not torch.equal(inputs["x"], fresh["x"])
    assert rope.bytes_moved([2, 1320, 2048], torch.bfloat16) == 2 * 1320 * 2048 * (2 * 2 + 2 * 4)
    half = ENTRIES[1]
    hin = half.make_inputs([1, 16, 4, 64], torch.bfloat16, torch.device("cpu"), torch.Generator().manual_seed(2))
    assert hin["cos"].shape == (16, 64) and hin["cos"].dtype == torch.bfloat16
    assert half.bytes_moved([1, 1024, 16, 64], torch.bfloat16) == (2 * 1024 * 16 * 64 + 2 * 1024 * 64) * 2
    for entry, bad in ((rope, [2, 1320]), (rope, [2, 4, 7]), (half, [1, 16, 64]), (half, [1, 16, 4, 63])):
        with pytest.raises(ValueError, match=entry.name):
            entry.check_shape(bad)


def test_entry_compile_on_a_tiny_shape(device):
    for entry, shape in zip(ENTRIES, ([1, 4, 12], [1, 4, 2, 8])):
        inputs = entry.make_inputs(shape, torch.float32, device, torch.Generator().manual_seed(1))
        assert entry.impls["compile"].unavailable(device) is None
        out = entry.impls["compile"].make()(**inputs)
        assert torch.allclose(out.double(), entry.reference(inputs), rtol=1e-5, atol=1e-5)
        assert "GPU" in entry.impls["compile_max"].unavailable(torch.device("cpu"))


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_torch_compile_fullgraph_traces_the_ops():
    dev = torch.device("cuda")
    x = rand((2, 33, 64), torch.bfloat16).to(dev)
    cos, sin = angle_tables((2, 33, 64))
    cos, sin = cos.to(dev), sin.to(dev)
    x4 = rand((2, 9, 3, 16), torch.bfloat16).to(dev)
    tc, ts = llama_rope_tables(torch.arange(9), 16, torch.bfloat16)
    tc, ts = tc.to(dev), ts.to(dev)

    def f(x, cos, sin, x4, tc, ts):
        return rope_interleaved(x, cos, sin) * 2, rope_rotate_half(x4, tc, ts) * 2

    compiled = torch.compile(f, fullgraph=True)
    got, expected = compiled(x, cos, sin, x4, tc, ts), f(x, cos, sin, x4, tc, ts)
    # Inductor compiles the traced kernel with Triton's default fp fusion (eager launches turn it off), so an
    # element may differ by one ulp; nothing more
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert bool(((a.double() - b.double()).abs() <= torch.finfo(b.dtype).eps * b.double().abs()).all())


@gpu_test
def test_opcheck():
    dev = torch.device("cuda")
    x = rand((2, 9, 64), torch.bfloat16).to(dev)
    cos, sin = angle_tables((2, 9, 64))
    torch.library.opcheck(torch.ops.kernelfleet.rope_interleaved.default, (x, cos.to(dev), sin.to(dev), 1))
    x4 = rand((2, 9, 3, 16), torch.bfloat16).to(dev)
    tc, ts = llama_rope_tables(torch.arange(9), 16, torch.bfloat16)
    torch.library.opcheck(torch.ops.kernelfleet.rope_rotate_half.default, (x4, tc.to(dev), ts.to(dev), 1, True))


@gpu_test
@pytest.mark.parametrize("dtype", FLOATS)
def test_gpu_bit_exact_with_eager(dtype):
    """fp fusion is off in the kernel, so on the GPU too it rounds exactly where the model's code rounds."""
    dev = torch.device("cuda")
    x = rand((2, 300, 512), dtype).to(dev)
    cos, sin = angle_tables((2, 300, 512))
    cos, sin = cos.to(dev), sin.to(dev)
    assert torch.equal(rope_interleaved(x, cos, sin), interleaved_eager(x, cos, sin))
    x4 = rand((2, 300, 8, 64), dtype).to(dev)
    tc, ts = llama_rope_tables(torch.arange(300), 64, dtype)
    tc, ts = tc.to(dev), ts.to(dev)
    expected = x4 * tc[:, None] + rotate_half(x4) * ts[:, None]
    assert torch.equal(rope_rotate_half(x4, tc, ts), expected)


@gpu_test
@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16))
@pytest.mark.parametrize("half_math", (True, False))
def test_gpu_rotate_half_per_op_rounding_over_wide_magnitudes(dtype, half_math, monkeypatch):
    """transformers' per-op rounding with half tables, computed either with native half-dtype ops (the sm_90 row's
    ``half_math``) or in fp32 with a cast per op: bit for bit equal to the eager chain where the two products of a
    sum are up to 2**24 apart (the case where rounding an fp32 sum once more could differ from one rounding)."""
    from kernels import arch, launch_plans
    from kernels.rope import ROTATE_HALF_LAUNCH, RotateHalfLaunch

    dev = torch.device("cuda")
    monkeypatch.setitem(
        ROTATE_HALF_LAUNCH.rows, arch.device_arch(dev.index or 0), RotateHalfLaunch(half_math=half_math)
    )
    launch_plans.forget_launches()
    g = torch.Generator().manual_seed(3)
    exponents = torch.randint(-12, 12, (2, 1000, 8, 64), generator=g).to(torch.float32)
    x = (torch.randn((2, 1000, 8, 64), generator=g) * torch.exp2(exponents)).to(dtype).to(dev)
    tc, ts = llama_rope_tables(torch.arange(7, 1007), 64, dtype)
    tc, ts = tc.to(dev), ts.to(dev)
    try:
        assert torch.equal(rope_rotate_half(x, tc, ts), rotate_half_eager(x, tc, ts, 1))
    finally:
        launch_plans.forget_launches()
