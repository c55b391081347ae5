"""kernels.inject.attention.cross_attention_ok: where the injected LTX-Video processor may call
kernels.cross_attention instead of diffusers' native SDPA (on the test device: a GPU with compiled Triton, or the CPU
under Triton's interpreter)."""

import pytest
import torch

from kernels.cross_attention import MAX_HEAD_DIM, MAX_KEYS
from kernels.inject.attention import cross_attention_ok
from tests.support.devices import TEST_DEVICE

B, SQ, H, D, SK = 2, 12, 4, 16, 10


def qkv(sk=SK, d=D, dtype=torch.bfloat16):
    q = torch.randn(B, SQ, H * d).to(dtype).to(TEST_DEVICE).unflatten(2, (H, d))
    kv = torch.randn(B, sk, 2 * H * d).to(dtype).to(TEST_DEVICE)
    return q, kv[..., : H * d].unflatten(2, (H, d)), kv[..., H * d :].unflatten(2, (H, d))


@pytest.mark.parametrize(
    "mask_shape", [None, (SK,), (1, SK), (B, H, 1, SK), (B, 1, 1, SK), (B, H, SQ, SK), (SQ, SK), (1, 1, 1, 1)]
)
def test_accepts_what_sdpa_broadcasts(mask_shape, device):
    q, k, v = qkv()
    mask = None if mask_shape is None else torch.zeros(mask_shape, dtype=torch.bfloat16, device=device)
    assert cross_attention_ok(q, k, v, mask)


@pytest.mark.parametrize(
    "mask",
    [
        torch.zeros(B, H, 1, SK + 1),
        torch.zeros(3, 1, 1, SK),
        torch.zeros(1, B, H, 1, SK),
        torch.zeros(B, H, 1, SK, dtype=torch.bool),
        torch.zeros(B, H, 1, SK).double(),
    ],
)
def test_refuses_masks_it_does_not_compute(mask, device):
    q, k, v = qkv()
    assert not cross_attention_ok(q, k, v, mask.to(device))  # on q's device: refused for what it is, not where


def test_refuses_shapes_dtypes_and_layouts():
    q, k, v = qkv()
    assert not cross_attention_ok(q, *qkv(sk=MAX_KEYS + 1)[1:], None)
    assert cross_attention_ok(q, *qkv(sk=MAX_KEYS)[1:], None)
    big = qkv(d=MAX_HEAD_DIM * 2)
    assert not cross_attention_ok(*big, None)
    assert not cross_attention_ok(q, k.float(), v.float(), None)
    assert not cross_attention_ok(q.flatten(2), k, v, None)
    assert not cross_attention_ok(q, k[:, :, :2], v[:, :, :2], None)
    assert not cross_attention_ok(q.transpose(2, 3).contiguous().transpose(2, 3), k, v, None)  # last dim strided
    assert not cross_attention_ok(q[:, :0], k, v, None)
    # whether a gradient is wanted is the processor's question (kernels.inject.grad; tests/inject/test_grad.py)
    assert cross_attention_ok(q.requires_grad_(), k, v, None)
