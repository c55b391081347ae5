"""Registry entry ``qk_norm_rope``: LTX-Video attn1's ``norm_q``/``norm_k`` + RoPE on q and k.

Inputs mirror the model: q, k ``[B, S, C]`` (the to_q/to_k outputs before the head split), the two
``torch.nn.RMSNorm(C, eps=1e-5)`` weights (in the model's dtype; drawn around 1), and LTX's per-batch fp32 cos/sin
``[B, S, C]`` (built as in :mod:`kernels.entries.ltx_rope`).  The eager implementation is the processor's lines:
``norm_q(q)``, ``norm_k(k)`` (``torch.nn.RMSNorm.forward`` is ``F.rms_norm``) then ``apply_rotary_emb`` on each.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from kernels.entries.common import numel, randn, standard_impls, triton_with_out, upcast
from kernels.entries.ltx_rope import interleaved_reference, ltx_apply_rotary_emb, ltx_inputs_tables, ltx_shape_check
from kernels.metadata.qk_norm_rope import QK_NORM_ROPE
from kernels.qk_norm_rope import qk_norm_rope, qk_norm_rope_into
from kernels.registry import Contract, KernelEntry

LTX_QK_EPS = 1e-5


check_shape = ltx_shape_check("qk_norm_rope expects q/k [B, S, C] (LTX, across heads)")


def make_inputs(shape: Sequence[int], dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    dim = shape[-1]
    cos, sin = ltx_inputs_tables(shape, device, gen)
    return {
        "q": randn(shape, dtype, device, gen, scale=2.0),
        "k": randn(shape, dtype, device, gen, scale=3.0),
        "q_weight": randn((dim,), dtype, device, gen, scale=0.1, offset=1.0),
        "k_weight": randn((dim,), dtype, device, gen, scale=0.1, offset=1.0),
        "cos": cos,
        "sin": sin,
        "eps": LTX_QK_EPS,
    }


def _rms_norm64(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def reference(inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    up = upcast(inputs)
    q = _rms_norm64(up["q"], up["q_weight"], up["eps"])
    k = _rms_norm64(up["k"], up["k_weight"], up["eps"])
    return interleaved_reference(q, up["cos"], up["sin"]), interleaved_reference(k, up["cos"], up["sin"])


def eager(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """LTXVideoAttnProcessor: ``attn.norm_q(q)``, ``attn.norm_k(k)``, then ``apply_rotary_emb`` on both."""
    q = F.rms_norm(q, (q.shape[-1],), q_weight, eps)
    k = F.rms_norm(k, (k.shape[-1],), k_weight, eps)
    return ltx_apply_rotary_emb(q, cos, sin), ltx_apply_rotary_emb(k, cos, sin)


triton_qk_norm_rope = triton_with_out(qk_norm_rope, qk_norm_rope_into)


def alloc_out(inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(inputs["q"]), torch.empty_like(inputs["k"])


def bytes_moved(shape: Sequence[int], dtype: torch.dtype) -> int:
    n = numel(shape)
    # q, k read and written; fp32 cos/sin [B, S, C] read once for both; the two weights
    return 4 * n * dtype.itemsize + 2 * n * 4 + 2 * shape[-1] * dtype.itemsize


def flops(shape: Sequence[int]) -> int:
    return 2 * 7 * numel(shape)  # per element of q and of k: square+sum, *rstd, *w, RoPE (2 mul + add)


ENTRIES = [
    KernelEntry(
        **QK_NORM_ROPE.entry_fields(),
        description="LTX attn1 q/k: torch.nn.RMSNorm across heads (eps 1e-5, weight) + interleaved RoPE, one pass",
        check_shape=check_shape,
        make_inputs=make_inputs,
        reference=reference,
        alloc_out=alloc_out,
        impls={
            **standard_impls(
                triton_qk_norm_rope,
                "kernels.qk_norm_rope",
                eager,
                "LTX processor: torch.nn.RMSNorm (F.rms_norm) + apply_rotary_emb, q and k",
            ),
        },
        bytes_moved=bytes_moved,
        flops=flops,
        default_impls=QK_NORM_ROPE.impls,
        function=qk_norm_rope,
        contract=Contract(small_shape=(2, 12, 64), launch_shapes=((1, 16, 512), (4, 16, 1024))),
        activations=("q", "k"),
    ),
]
