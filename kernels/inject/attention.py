"""The attention call of the injected diffusers processors: ``dispatch_attention_fn`` as the stock processors call
it, with the native backend's function called directly where that is what dispatch would do.

In eager calls with no backend chosen for the processor, no context parallelism and diffusers' argument checks off,
where the active backend is the native one, dispatch would call that backend's function with all its defaults
(dropout 0, not causal, default scale); calling it directly skips dispatch's argument dict and filtering, tens of
microseconds of host time per call.  A chosen backend (``set_attention_backend``), checks, context parallelism or a
trace go through ``dispatch_attention_fn``.

Also here: :func:`prepared_mask`, the cross-attention mask as the processors hand it to attention, made once per
forward instead of once per block, and :func:`cross_attention_ok`, where :func:`kernels.cross_attention` computes
what the native backend would.
"""

from __future__ import annotations

import torch
from diffusers.models.attention_dispatch import AttentionBackendName, _AttentionBackendRegistry, dispatch_attention_fn

from kernels.arch import INTERPRETED
from kernels.checks import FLOAT_DTYPES
from kernels.cross_attention import MAX_HEAD_DIM, MAX_KEYS
from kernels.inject.grad import grad_enabled
from kernels.inject.memo import LastResult


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None,
    backend,
    parallel_config,
) -> torch.Tensor:
    """``dispatch_attention_fn(query, key, value, attn_mask=attn_mask, backend=backend,
    parallel_config=parallel_config)``; ``[B, S, H, D]`` in and out."""
    if not torch.compiler.is_compiling() and native_default(backend, parallel_config):
        return _AttentionBackendRegistry._backends[AttentionBackendName.NATIVE](query, key, value, attn_mask=attn_mask)
    return dispatch_attention_fn(
        query,
        key,
        value,
        attn_mask=attn_mask,
        dropout_p=0.0,
        is_causal=False,
        backend=backend,
        parallel_config=parallel_config,
    )


def native_default(backend, parallel_config) -> bool:
    """Whether dispatch would run diffusers' native backend with its defaults: no backend chosen for the processor,
    no context parallelism, argument checks off and the native backend active (also while a trace runs)."""
    return (
        backend is None
        and parallel_config is None
        and not _AttentionBackendRegistry._checks_enabled
        and _AttentionBackendRegistry._active_backend == AttentionBackendName.NATIVE
    )


def cross_attention_ok(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None
) -> bool:
    """:func:`kernels.cross_attention` computes the native backend's ``F.scaled_dot_product_attention`` on these
    ``[B, S, H, D]`` tensors (dropout 0, not causal, default scale): one float dtype and device, a unit-stride
    last dim, at most ``MAX_KEYS`` keys and ``MAX_HEAD_DIM`` per head, an additive float mask that broadcasts to
    ``[B, H, Sq, Sk]`` or none (whether autograd wants a gradient the caller asks :mod:`kernels.inject.grad`).  Plain
    comparisons only: this runs before every attn2 call, and ``torch.broadcast_shapes`` and generator expressions
    made it cost ~20 us of host time per call on the development machine."""
    if query.dim() != 4 or key.dim() != 4 or key.shape != value.shape:
        return False
    b, sq, h, d = query.shape
    kb, sk, kh, kd = key.shape
    if kb != b or kh != h or kd != d or not 0 < sk <= MAX_KEYS or d > MAX_HEAD_DIM or sq == 0:
        return False
    dtype, device = query.dtype, query.device
    if dtype not in FLOAT_DTYPES or key.dtype != dtype or value.dtype != dtype:
        return False
    if (
        not (device.type == "cuda" or (device.type == "cpu" and INTERPRETED))
        or key.device != device
        or value.device != device
    ):
        return False
    if query.stride(3) != 1 or key.stride(3) != 1 or value.stride(3) != 1:
        return False
    if attn_mask is not None:
        shape = attn_mask.shape
        if attn_mask.dtype not in FLOAT_DTYPES or attn_mask.device != device or len(shape) > 4:
            return False
        for have, full in zip(shape, (b, h, sq, sk)[4 - len(shape) :]):
            if have != 1 and have != full:
                return False
    return True


_LAST_MASK = LastResult()  # one for every processor: a transformer hands each of its blocks the same mask object


def prepared_mask(attn, attention_mask: torch.Tensor | None, sequence_length: int, batch_size: int):
    """``attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)`` viewed as
    ``[batch_size, attn.heads, -1, L]``, the way diffusers' LTX processor prepares a mask for attention.

    A transformer builds its mask once per forward and gives every block that same tensor, and every block's
    processor then makes the same per-head copy (LTX-Video: 28 copies per forward, one kernel each).  In eager calls
    the last result is kept and handed out again while the same mask object, unchanged since (its version counter),
    comes with the same sizes, head count and ``prepare_attention_mask`` (:class:`kernels.inject.memo.LastResult`).
    Under a trace, for a module with its own ``prepare_attention_mask``, or for an inference-mode mask (no version
    counter) it is prepared every time.
    """
    if attention_mask is None:
        return None
    cacheable = (
        not torch.compiler.is_compiling()
        and "prepare_attention_mask" not in vars(attn)
        and LastResult.usable(attention_mask)
        # a mask that autograd follows makes a result tied to this forward's graph
        and not (attention_mask.requires_grad and grad_enabled())
    )
    key = (type(attn).prepare_attention_mask, attn.heads, sequence_length, batch_size)
    if cacheable:
        mask = _LAST_MASK.get(attention_mask, key)
        if mask is not None:
            return mask
    mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
    mask = mask.view(batch_size, attn.heads, -1, mask.shape[-1])
    return _LAST_MASK.put(attention_mask, key, mask) if cacheable else mask
