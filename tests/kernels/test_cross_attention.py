"""kernels.cross_attention: attention over a short key sequence in one tile (LTX-Video's attn2), against float64
SDPA; on the CPU through Triton's interpreter."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.arch import for_arch
from kernels.cross_attention import (
    LAUNCH,
    MAX_KEYS,
    AttnConfig,
    cross_attention,
    cross_attention_into,
    keys_in_shared_memory,
    keys_per_step,
)
from kernels.entries.cross_attention import ENTRIES
from kernels.registry import DTYPES
from tests.support.kernel_tests import FLOATS, assert_impls_match_reference, gpu_test, rand

# max |out - fp64 SDPA| for values of unit scale: bf16/fp16 round q, k, v, the probabilities and the output
TOL = {torch.float32: 1e-5, torch.bfloat16: 4e-2, torch.float16: 5e-3}


def sdpa64(q, k, v, mask=None, scale=None):
    """SDPA in float64 on [B, S, H, D] tensors (diffusers' layout)."""
    m = None if mask is None else mask.double()
    out = F.scaled_dot_product_attention(
        q.double().transpose(1, 2), k.double().transpose(1, 2), v.double().transpose(1, 2), attn_mask=m, scale=scale
    )
    return out.transpose(1, 2)


def make(b=2, sq=37, h=3, d=64, sk=20, dtype=torch.float32, seed=0, device="cpu"):
    """q [B, Sq, H, D]; k, v as views of one fused projection [B, Sk, 2*H*D]; LTX's additive padding mask per head."""
    q = rand((b, sq, h * d), dtype, seed=seed).unflatten(2, (h, d)).to(device)
    kv = rand((b, sk, 2 * h * d), dtype, seed=seed + 1).to(device)
    k, v = kv[..., : h * d].unflatten(2, (h, d)), kv[..., h * d :].unflatten(2, (h, d))
    m = torch.zeros(b, 1, sk)
    m[:, :, sk - sk // 4 :] = -10000.0
    mask = m.to(dtype).repeat_interleave(h, 0).view(b, h, 1, sk).to(device)
    return q, k, v, mask


def assert_close(out, ref, dtype):
    assert out.dtype == dtype and out.shape == ref.shape and out.is_contiguous()
    assert (out.double() - ref).abs().max().item() <= TOL[dtype]


@pytest.mark.parametrize("dtype", FLOATS)
def test_matches_sdpa_with_ltx_mask(dtype, device):
    q, k, v, mask = make(dtype=dtype, device=device)
    assert_close(cross_attention(q, k, v, mask), sdpa64(q, k, v, mask), dtype)


@pytest.mark.parametrize("mask_shape", [None, (1, 20), (1, 1, 1, 20), (2, 1, 1, 20), (2, 3, 37, 20), (37, 20)])
def test_mask_broadcasts(mask_shape, device):
    q, k, v, _ = make(device=device)
    mask = None if mask_shape is None else (rand(mask_shape, seed=7) * 3).to(device)
    assert_close(cross_attention(q, k, v, mask), sdpa64(q, k, v, mask), torch.float32)


@pytest.mark.parametrize("sq,sk,d", [(1, 1, 16), (5, 256, 32), (70, 3, 40), (129, 130, 128)])
def test_odd_sizes_and_scale(sq, sk, d, device):
    q, k, v, mask = make(b=1, sq=sq, h=2, d=d, sk=sk, device=device)
    assert_close(cross_attention(q, k, v, mask, scale=0.3), sdpa64(q, k, v, mask, scale=0.3), torch.float32)


def test_strided_inputs_and_a_non_unit_last_dim(device):
    q, k, v, mask = make(dtype=torch.bfloat16, device=device)
    q_bhsd = q.transpose(1, 2).contiguous().transpose(1, 2)  # [B, S, H, D] view of a [B, H, S, D] tensor
    assert_close(cross_attention(q_bhsd, k, v, mask), sdpa64(q, k, v, mask), torch.bfloat16)
    k_cols = k.transpose(2, 3).contiguous().transpose(2, 3)  # last dim strided: copied first
    assert k_cols.stride(-1) != 1
    assert torch.equal(cross_attention(q, k_cols, v, mask), cross_attention(q, k, v, mask))


def test_into_and_configs(device):
    q, k, v, mask = make(sq=70, dtype=torch.float16, device=device)
    expected = sdpa64(q, k, v, mask)
    for config in (None, AttnConfig(16, 1), AttnConfig(64, 4), AttnConfig(128, 8)):
        out = torch.full_like(q, float("nan"))
        assert cross_attention_into(out, q, k, v, mask, _config=config) is out
        assert_close(out, expected, torch.float16)
    with pytest.raises(TypeError, match="out has dtype torch.float32; expected torch.float16"):
        cross_attention_into(out.float(), q, k, v, mask)


@pytest.mark.parametrize("block_k", [16, 32])
@pytest.mark.parametrize("dtype", FLOATS)
def test_key_blocks(block_k, dtype, device):
    """The loop over key blocks with a running maximum (AMD's launch for tiles beyond 128 keys x 64 head dims), with a
    last block partly past the keys, LTX's mask row, no mask and a full [B, H, Sq, Sk] mask."""
    q, k, v, mask = make(sq=37, sk=70, d=40, dtype=dtype, device=device)
    full = (rand((2, 3, 37, 70), seed=5) * 3).to(dtype).to(device)
    for m in (mask, None, full):
        out = torch.full_like(q, float("nan"))
        cross_attention_into(out, q, k, v, m, _config=AttnConfig(64, 4, block_k))
        assert_close(out, sdpa64(q, k, v, m), dtype)


def test_key_blocks_with_a_block_of_minus_infinity(device):
    """A row whose first key blocks are all -inf (an SDPA-style mask) is not NaN: the running maximum starts finite."""
    q, k, v, _ = make(b=1, sq=20, h=2, d=32, sk=50, device=device)
    mask = torch.zeros(1, 2, 20, 50)
    mask[:, :, ::2, :40] = float("-inf")  # every other query sees keys 40-49 only: two whole blocks of -inf first
    mask = mask.to(device)
    out = torch.empty_like(q)
    cross_attention_into(out, q, k, v, mask, _config=AttnConfig(16, 1, 16))
    assert_close(out, sdpa64(q, k, v, mask), torch.float32)


def test_keys_per_step_loops_only_on_amd_beyond_ltx_tile():
    for arch in ("sm_90", "generic"):  # the H200's launch and every non-AMD target: one pass over all keys
        tile = LAUNCH.for_arch(arch).tile
        assert tile == (0, 0) and keys_per_step(256, 128, tile) == 256
    for arch in ("gfx950", "gfx942", "gfx1201"):
        tile = LAUNCH.for_arch(arch).tile
        assert keys_per_step(128, 64, tile) == 128  # LTX-Video's tile: one pass
        assert keys_per_step(256, 32, tile) == 256
        assert keys_per_step(128, 128, tile) == keys_per_step(256, 128, tile) == 32
        assert keys_per_step(256, 64, tile) == 64


def test_keys_in_shared_memory_fit_the_target():
    """The H200 gives a block 227 KiB: 256 keys at head dim 128 in fp32 need 294,912 B in one pass (Triton refused
    that launch there), so they go in steps of 128; bf16 fits in one pass.  No limit under the interpreter."""
    h200, rdna = for_arch("sm_90").shared_memory, for_arch("gfx1201").shared_memory
    assert keys_in_shared_memory(256, 128, 64, torch.float32, h200) == 128
    assert keys_in_shared_memory(256, 128, 64, torch.bfloat16, h200) == 256
    assert keys_in_shared_memory(256, 64, 64, torch.float32, h200) == 256
    assert keys_in_shared_memory(256, 128, 64, torch.float32, rdna) == 32
    assert keys_in_shared_memory(256, 128, 64, torch.float32, None) == 256
    for keys in (16, 32, 64, 128, 256):
        for head in (16, 32, 64, 128):
            for dtype, size in ((torch.float32, 4), (torch.float16, 2)):
                step = keys_in_shared_memory(keys, head, 64, dtype, h200)
                assert step == keys or (64 + 2 * step) * head * size <= h200


def test_zero_queries(device):
    q, k, v, mask = make(sq=0, device=device)
    assert cross_attention(q, k, v, mask).shape == q.shape


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    b=st.integers(1, 2),
    sq=st.integers(1, 80),
    h=st.integers(1, 3),
    d=st.sampled_from([8, 24, 64]),
    sk=st.integers(1, 70),
    dtype=st.sampled_from(FLOATS),
    seed=st.integers(0, 2**16),
)
def test_random_shapes(b, sq, h, d, sk, dtype, seed, device):
    q, k, v, mask = make(b, sq, h, d, sk, dtype, seed, device)
    assert_close(cross_attention(q, k, v, mask), sdpa64(q, k, v, mask), dtype)


@pytest.mark.parametrize(
    "mutate,exc,match",
    [
        (
            lambda a: {**a, "key": a["key"][:, :, :2], "value": a["value"][:, :, :2]},
            ValueError,
            "with query's B=2, H=3",
        ),
        (lambda a: {**a, "value": a["value"][:, :5]}, ValueError, "must have the same shape"),
        (lambda a: {**a, "query": a["query"].flatten(2)}, ValueError, r"query must be \[B, S, H, D\]"),
        (lambda a: {**a, "key": a["key"].half(), "value": a["value"].half()}, TypeError, "share one dtype"),
        (lambda a: {**a, "query": a["query"].int()}, TypeError, "query has dtype torch.int32"),
        (lambda a: {**a, "attn_mask": a["attn_mask"] > -1}, TypeError, "additive float mask"),
        (lambda a: {**a, "attn_mask": a["attn_mask"][..., :7]}, ValueError, "does not broadcast"),
        (lambda a: {**a, "scale": float("nan")}, ValueError, "scale must be a finite number"),
        (lambda a: {**a, "query": 1.0}, TypeError, "query must be a torch.Tensor"),
    ],
)
def test_bad_input_raises(mutate, exc, match, device):
    q, k, v, mask = make(device=device)
    with pytest.raises(exc, match=match):
        cross_attention(**mutate({"query": q, "key": k, "value": v, "attn_mask": mask}))


def test_too_many_keys_is_refused_with_the_limit(device):
    q, k, v, _ = make(sk=MAX_KEYS + 1, device=device)
    with pytest.raises(ValueError, match=f"1 to {MAX_KEYS}"):
        cross_attention(q, k, v)


def test_backward_raises(device):
    q, k, v, mask = make(device=device)
    q.requires_grad_()
    with pytest.raises(RuntimeError, match="forward-only"):
        cross_attention(q, k, v, mask).sum().backward()


# ------------------------------------------------------------------------------------------------ registry entry
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(dtype_name, device):
    (entry,) = ENTRIES
    ins = entry.make_inputs([2, 33, 4, 64, 24], DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    ref = entry.reference(ins)
    assert_impls_match_reference(entry, ins, ref, dtype_name, device, dtype_of="query")
    wrong = entry.impls["eager"].make()(**{**ins, "attn_mask": None})  # the padding ignored
    d = wrong.double() - ref
    assert (d.norm() / ref.norm()).item() > entry.tolerances[dtype_name][0]


def test_entry_model():
    (entry,) = ENTRIES
    assert (
        entry.bytes_moved([2, 1320, 32, 64, 128], torch.bfloat16)
        == (2 * 2 * 1320 * 2048 + 2 * 2 * 128 * 2048 + 2 * 32 * 128) * 2
    )
    assert entry.flops([2, 1320, 32, 64, 128]) == 4 * 2 * 1320 * 32 * 64 * 128
    with pytest.raises(ValueError, match=r"\[B, Sq, H, D, Sk\]"):
        entry.check_shape([2, 1320, 2048])
    with pytest.raises(ValueError, match="up to 256 keys"):
        entry.check_shape([2, 1320, 32, 64, 300])


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_gpu_ltx_shape_against_cudnn_sdpa():
    """At LTX-Video's attn2 shape the kernel is as close to fp64 as the library's SDPA is."""
    q, k, v, mask = make(b=2, sq=1320, h=32, d=64, sk=128, dtype=torch.bfloat16, device="cuda")
    ref = sdpa64(q, k, v, mask)
    ours = (cross_attention(q, k, v, mask).double() - ref).abs().max().item()
    lib = (
        (
            F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask)
            .transpose(1, 2)
            .double()
            - ref
        )
        .abs()
        .max()
        .item()
    )
    assert ours <= max(2 * lib, 2**-7)


@gpu_test
def test_opcheck_and_fullgraph_compile():
    q, k, v, mask = make(b=2, sq=70, h=4, d=64, sk=24, dtype=torch.bfloat16, device="cuda")
    torch.library.opcheck(torch.ops.kernelfleet.cross_attention.default, (q, k, v, mask, None))
    torch.library.opcheck(torch.ops.kernelfleet.cross_attention.default, (q, k, v, None, 0.2))

    def f(q, k, v, mask):
        return cross_attention(q, k, v, mask) * 2

    compiled = torch.compile(f, fullgraph=True)
    assert_close(compiled(q, k, v, mask) / 2, sdpa64(q, k, v, mask), torch.bfloat16)


@gpu_test
def test_gpu_compiled_call_equals_direct_launch():
    """Inductor's launch of the kernel computes what the direct launch computes, bit for bit. Inductor passes the
    float ``qk_scale`` as an fp64 argument; before the kernel cast it to fp32, the scores, mask add and exp2 ran in
    double precision there (other bits, and 3.4x slower at this shape on the H200)."""
    q, k, v, mask = make(b=2, sq=1320, h=32, d=64, sk=128, dtype=torch.bfloat16, device="cuda")
    compiled = torch.compile(lambda q, k, v, m: cross_attention(q, k, v, m), fullgraph=True)
    assert torch.equal(compiled(q, k, v, mask), cross_attention(q, k, v, mask))
