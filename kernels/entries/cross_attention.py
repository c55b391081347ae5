"""Registry entry ``cross_attention``: LTX-Video attn2's attention from the video tokens to the text tokens.

Shape ``[B, Sq, H, D, Sk]``: queries ``[B, Sq, H, D]`` (the to_q output split into heads), keys and values
``[B, Sk, H, D]`` as views of one fused key/value projection ``[B, Sk, 2 * H * D]`` (what the injected processor
hands over), and the additive padding mask as the LTX processor prepares it: 0 for a text token, -10000 for padding
(the last quarter of the tokens here), one copy per head, ``[B, H, 1, Sk]``.  The eager implementation is diffusers'
native attention backend: ``F.scaled_dot_product_attention`` on the ``[B, H, S, D]`` views (cuDNN's kernel on an
H200); torch.compile of it calls the same library kernel.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from kernels.cross_attention import LAUNCH, MAX_HEAD_DIM, MAX_KEYS, cross_attention, cross_attention_into
from kernels.entries.common import numel, randn, standard_impls, triton_with_out, upcast
from kernels.metadata.cross_attention import CROSS_ATTENTION
from kernels.registry import Contract, KernelEntry

PADDING = -10000.0  # LTXVideoTransformer3DModel: (1 - encoder_attention_mask) * -10000.0


def check_shape(shape: Sequence[int]) -> None:
    if len(shape) != 5 or any(not isinstance(s, int) or s < 1 for s in shape):
        raise ValueError(
            f"cross_attention expects [B, Sq, H, D, Sk] (queries [B, Sq, H, D], keys [B, Sk, H, D]); got {list(shape)}"
        )
    if shape[3] > MAX_HEAD_DIM or shape[4] > MAX_KEYS:
        raise ValueError(
            f"cross_attention takes a head dim up to {MAX_HEAD_DIM} and up to {MAX_KEYS} keys; "
            f"got D={shape[3]}, Sk={shape[4]}"
        )


def make_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    batch, seq, heads, dim, keys = shape
    kv = randn((batch, keys, 2 * heads * dim), dtype, device, gen, scale=2.0)
    mask = torch.zeros(batch, 1, keys)
    mask[:, :, keys - keys // 4 :] = PADDING
    return {
        "query": randn((batch, seq, heads, dim), dtype, device, gen, scale=2.0),
        "key": kv[..., : heads * dim].unflatten(2, (heads, dim)),
        "value": kv[..., heads * dim :].unflatten(2, (heads, dim)),
        "attn_mask": mask.to(device=device, dtype=dtype).repeat_interleave(heads, 0).view(batch, heads, 1, keys),
    }


def reference(inputs: dict) -> torch.Tensor:
    up = upcast(inputs)
    return eager(up["query"], up["key"], up["value"], up["attn_mask"])


def eager(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
    """diffusers' native attention backend: SDPA on the ``[B, H, S, D]`` views, the result back in ``[B, S, H, D]``."""
    out = F.scaled_dot_product_attention(
        query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), attn_mask=attn_mask
    )
    return out.transpose(1, 2)


triton_cross_attention = triton_with_out(cross_attention, cross_attention_into)


def alloc_out(inputs: dict) -> torch.Tensor:
    return torch.empty_like(inputs["query"], memory_format=torch.contiguous_format)


def bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    batch, seq, heads, dim, keys = shape
    # q read and the output written; k, v and the per-head mask read once
    return (2 * batch * seq * heads * dim + 2 * batch * keys * heads * dim + batch * heads * keys) * dtype.itemsize


def flops(shape: Sequence[int]) -> int:
    return 4 * numel(shape)  # q @ k.T and p @ v: 2 * B * Sq * H * D * Sk each


ENTRIES = [
    KernelEntry(
        **CROSS_ATTENTION.entry_fields(),
        description="LTX-Video attn2: attention to <= 256 text tokens, q [B,Sq,H,D], k/v [B,Sk,H,D], additive mask",
        check_shape=check_shape,
        make_inputs=make_inputs,
        reference=reference,
        alloc_out=alloc_out,
        impls={
            **standard_impls(
                triton_cross_attention,
                "kernels.cross_attention",
                eager,
                "diffusers native attention backend (F.scaled_dot_product_attention)",
            ),
        },
        bytes_moved=bytes_moved,
        flops=flops,
        default_impls=CROSS_ATTENTION.impls,
        function=cross_attention,
        contract=Contract(
            small_shape=(2, 12, 4, 16, 12),
            launch_shapes=((1, 16, 8, 128, 128), (1, 16, 8, 64, 256)),
            # the mask row [Sk] (256 bytes of bf16 at 128 keys) is loaded straight into the MFMA accumulator's
            # column layout, 4 keys a lane; query, key and value tiles load 128 bits a lane
            narrowest_load_bits=64,
        ),
        launch_table=LAUNCH,
        activations=("query", "key", "value"),
    ),
]
