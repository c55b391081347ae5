"""Calls of a model's plain submodules without ``nn.Module.__call__``, for the replaced forwards.

An injected block or processor calls ~16 submodules per LTX-Video block (projections, dropouts, the feed-forward),
and each ``nn.Module.__call__`` costs microseconds of host time before the module's forward runs (hook lookups,
forward dispatch): hundreds per denoising step, in a loop that the host, not the GPU, bounds in eager mode.  A
submodule that is *plain* (exactly its class, not a subclass; its class's own forward, not one set on the
instance; no hooks of any kind, on it or global) is computed here as its forward would compute it; anything else is
called as a module.  The result is the same computation, op for op, so outputs are bit-identical.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.modules.module as _module
from diffusers.models.activations import GELU
from diffusers.models.attention import FeedForward


def hooked(m: nn.Module) -> bool:
    """Whether calling ``m`` runs anything besides its forward (the condition of nn.Module's own fast path)."""
    return bool(
        m._forward_hooks
        or m._forward_pre_hooks
        or m._backward_hooks
        or m._backward_pre_hooks
        or _module._global_forward_hooks
        or _module._global_forward_pre_hooks
        or _module._global_backward_hooks
        or _module._global_backward_pre_hooks
    )


def plain(m: nn.Module, cls: type) -> bool:
    """``m`` is exactly a ``cls``, runs ``cls.forward`` and has no hooks."""
    return type(m) is cls and "forward" not in m.__dict__ and not hooked(m)


def call(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``m(x)`` for the one-input modules of a diffusers block: nn.Linear, nn.Dropout, diffusers' GELU and
    FeedForward computed directly when plain, any other module (or a non-plain one) called as a module."""
    if plain(m, nn.Linear):
        return F.linear(x, m.weight, m.bias)
    if plain(m, nn.Dropout) and not (m.training and m.p > 0):
        return x  # nn.Dropout's forward: F.dropout(x, p, training=False) returns x itself
    if plain(m, GELU) and x.device.type != "mps":  # GELU.gelu has an MPS-only branch
        return F.gelu(call(m.proj, x), approximate=m.approximate)
    if plain(m, FeedForward):
        for sub in m.net:
            x = call(sub, x)
        return x
    return m(x)
