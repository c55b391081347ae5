"""The attention call of the injected diffusers processors: ``dispatch_attention_fn`` as the stock processors call
it, with the native backend's function called directly where that is what dispatch would do.

In eager calls with no backend chosen for the processor, no context parallelism and diffusers' argument checks off,
where the active backend is the native one, dispatch would call that backend's function with all its defaults
(dropout 0, not causal, default scale); calling it directly skips dispatch's argument dict and filtering, tens of
microseconds of host time per call.  A chosen backend (``set_attention_backend``), checks, context parallelism or a
trace go through ``dispatch_attention_fn``.
"""
from __future__ import annotations

import torch
from diffusers.models.attention_dispatch import AttentionBackendName, _AttentionBackendRegistry, dispatch_attention_fn


def attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None,
           backend, parallel_config) -> torch.Tensor:
    """``dispatch_attention_fn(query, key, value, attn_mask=attn_mask, backend=backend,
    parallel_config=parallel_config)``; ``[B, S, H, D]`` in and out."""
    if (not torch.compiler.is_compiling() and backend is None and parallel_config is None
            and not _AttentionBackendRegistry._checks_enabled
            and _AttentionBackendRegistry._active_backend == AttentionBackendName.NATIVE):
        return _AttentionBackendRegistry._backends[AttentionBackendName.NATIVE](query, key, value,
                                                                                attn_mask=attn_mask)
    return dispatch_attention_fn(query, key, value, attn_mask=attn_mask, dropout_p=0.0, is_causal=False,
                                 backend=backend, parallel_config=parallel_config)
