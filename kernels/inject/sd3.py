"""SD3 / SD3.5 (diffusers ``SD3Transformer2DModel``): where the kernels go.

* SD3.5's per-head q/k norms (``qk_norm="rms_norm"``: diffusers ``RMSNorm(64, eps=1e-6)`` with weight, applied to
  ``[B, H, S, D]``) get a replacement forward through :func:`kernels.rms_norm` with numerics "diffusers" (rounding
  to the weight's dtype before the weight multiply, as diffusers does).  SD3.0 (``qk_norm=None``) has none.
  The attention processor itself (``JointAttnProcessor2_0``, which calls SDPA directly) is left as it is; there is
  no RoPE in SD3.
* ``AdaLayerNormZero`` / ``SD35AdaLayerNormZeroX`` (norm1), ``AdaLayerNormZero`` / ``AdaLayerNormContinuous``
  (norm1_context, the latter in the last, context-pre-only block) and ``AdaLayerNormContinuous`` (norm_out):
  LayerNorm + modulate in one :func:`kernels.adaln_layer_norm`;
* ``JointTransformerBlock`` (and ``SD3SingleTransformerBlock``) forward: norm2 / norm2_context + modulate, which the
  block computes itself, through adaln_layer_norm too;
* the feed-forward projections with GELU-tanh (``ff.net[0]``, ``ff_context.net[0]``): one GEMM with the GELU in the
  BLAS epilogue (``linear_gelu``, :mod:`kernels.inject.linear_gelu`).
"""

from __future__ import annotations

import torch.nn as nn
from diffusers.models.attention import JointTransformerBlock, _chunked_feed_forward
from diffusers.models.attention_processor import Attention
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm
from diffusers.models.transformers.transformer_sd3 import SD3SingleTransformerBlock, SD3Transformer2DModel

from kernels.inject import norms
from kernels.inject.flux import inject_ada_norm
from kernels.inject.linear_gelu import inject_gelu_projections
from kernels.inject.report import KIND_BLOCK_FORWARD, KIND_NORM_FORWARD
from kernels.inject.rules import ADALN_LAYER_NORM, RMSNORM
from kernels.inject.state import Session, mark

FAMILY = "sd3"
MODEL_CLASSES = (SD3Transformer2DModel,)


def _ff(self, ff, x):
    if self._chunk_size is not None:
        return _chunked_feed_forward(ff, x, self._chunk_dim, self._chunk_size)
    return ff(x)


@mark
def joint_block_forward(self, hidden_states, encoder_hidden_states, temb, joint_attention_kwargs=None):
    """``JointTransformerBlock.forward`` with norm2 / norm2_context + modulate through adaln_layer_norm."""
    joint_attention_kwargs = joint_attention_kwargs or {}
    if self.use_dual_attention:
        norm_hidden_states, gate_msa, shift_mlp, scale_mlp, gate_mlp, norm_hidden_states2, gate_msa2 = self.norm1(
            hidden_states, emb=temb
        )
    else:
        norm_hidden_states, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(hidden_states, emb=temb)

    if self.context_pre_only:
        norm_encoder_hidden_states = self.norm1_context(encoder_hidden_states, temb)
    else:
        norm_encoder_hidden_states, c_gate_msa, c_shift_mlp, c_scale_mlp, c_gate_mlp = self.norm1_context(
            encoder_hidden_states, emb=temb
        )

    attn_output, context_attn_output = self.attn(
        hidden_states=norm_hidden_states,
        encoder_hidden_states=norm_encoder_hidden_states,
        **joint_attention_kwargs,
    )
    attn_output = gate_msa.unsqueeze(1) * attn_output
    hidden_states = hidden_states + attn_output

    if self.use_dual_attention:
        attn_output2 = self.attn2(hidden_states=norm_hidden_states2, **joint_attention_kwargs)
        attn_output2 = gate_msa2.unsqueeze(1) * attn_output2
        hidden_states = hidden_states + attn_output2

    norm_hidden_states = norms.layer_norm_modulate(self.norm2, hidden_states, scale_mlp[:, None], shift_mlp[:, None])
    ff_output = _ff(self, self.ff, norm_hidden_states)
    ff_output = gate_mlp.unsqueeze(1) * ff_output
    hidden_states = hidden_states + ff_output

    if self.context_pre_only:
        encoder_hidden_states = None
    else:
        context_attn_output = c_gate_msa.unsqueeze(1) * context_attn_output
        encoder_hidden_states = encoder_hidden_states + context_attn_output
        norm_encoder_hidden_states = norms.layer_norm_modulate(
            self.norm2_context, encoder_hidden_states, c_scale_mlp[:, None], c_shift_mlp[:, None]
        )
        context_ff_output = _ff(self, self.ff_context, norm_encoder_hidden_states)
        encoder_hidden_states = encoder_hidden_states + c_gate_mlp.unsqueeze(1) * context_ff_output
    return encoder_hidden_states, hidden_states


@mark
def single_block_forward(self, hidden_states, temb):
    """``SD3SingleTransformerBlock.forward`` with norm2 + modulate through adaln_layer_norm."""
    norm_hidden_states, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(hidden_states, emb=temb)
    attn_output = self.attn(hidden_states=norm_hidden_states, encoder_hidden_states=None)
    attn_output = gate_msa.unsqueeze(1) * attn_output
    hidden_states = hidden_states + attn_output
    norm_hidden_states = norms.layer_norm_modulate(
        self.norm2, hidden_states, scale_mlp.unsqueeze(1), shift_mlp.unsqueeze(1)
    )
    ff_output = self.ff(norm_hidden_states)
    ff_output = gate_mlp.unsqueeze(1) * ff_output
    return hidden_states + ff_output


def _inject_qk_norms(s: Session, name: str, attn: Attention) -> None:
    for attr in ("norm_q", "norm_k", "norm_added_q", "norm_added_k"):
        norm = getattr(attn, attr, None)
        if norm is None:
            continue
        path = f"{name}.{attr}" if name else attr
        if type(norm) is not DiffusersRMSNorm:
            continue  # LayerNorm / FP32LayerNorm q/k norms: reported by the final sweep
        if getattr(norm, "bias", None) is not None:
            s.leave(path, norm, "diffusers RMSNorm with a bias: rmsnorm has no bias")
            continue
        if not s.allowed(RMSNORM):
            s.leave(path, norm, "rmsnorm not selected")
            continue
        s.replace_forward(
            path,
            norm,
            norms.diffusers_rms_norm_forward,
            KIND_NORM_FORWARD,
            (RMSNORM,),
            "per-head q/k RMSNorm (numerics diffusers)",
        )


def _inject_block(s: Session, name: str, blk: nn.Module, fn) -> None:
    norms2 = [blk.norm2] + ([blk.norm2_context] if getattr(blk, "norm2_context", None) is not None else [])
    if not s.allowed(ADALN_LAYER_NORM):
        for n in norms2:
            s.reason(n, "adaln_layer_norm not selected")
        return
    if not all(norms.norm_modulate_supported(n) for n in norms2):
        return
    if s.replace_forward(
        name,
        blk,
        fn,
        KIND_BLOCK_FORWARD,
        (ADALN_LAYER_NORM,),
        " / ".join(("norm2", "norm2_context")[: len(norms2)]) + " + modulate",
    ):
        s.cover(*norms2)


def inject(s: Session, root: nn.Module) -> None:
    found = False
    for name, mod in root.named_modules():
        if type(mod) is JointTransformerBlock:
            found = True
            _inject_block(s, name, mod, joint_block_forward)
            for attr in ("attn", "attn2"):
                attn = getattr(mod, attr, None)
                if attn is not None:
                    _inject_qk_norms(s, f"{name}.{attr}" if name else attr, attn)
        elif type(mod) is SD3SingleTransformerBlock:
            found = True
            _inject_block(s, name, mod, single_block_forward)
            _inject_qk_norms(s, f"{name}.attn" if name else "attn", mod.attn)
    if not found:
        return
    s.family(FAMILY)
    for name, mod in root.named_modules():
        if not s.is_covered(mod):
            inject_ada_norm(s, name, mod)
    inject_gelu_projections(s, root)
