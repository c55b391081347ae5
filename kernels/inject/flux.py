"""FLUX (diffusers ``FluxTransformer2DModel``): where the kernels go.

* every ``FluxAttention`` gets :class:`FluxKernelAttnProcessor`: the per-head q/k norms (``torch.nn.RMSNorm(128)``,
  weight, numerics "torch") through :func:`kernels.rms_norm`, and the interleaved RoPE (fp32 ``cos``/``sin``
  ``[S, 128]`` shared by batch and heads) through :func:`kernels.rope_interleaved`; attention itself still goes
  through diffusers' ``dispatch_attention_fn`` (``set_attention_backend`` keeps working);
* ``AdaLayerNormZero`` (double blocks' norm1/norm1_context), ``AdaLayerNormZeroSingle`` (single blocks) and
  ``AdaLayerNormContinuous`` (norm_out): LayerNorm + ``* (1 + scale) + shift`` in one
  :func:`kernels.adaln_layer_norm` (see :mod:`kernels.inject.norms`);
* ``FluxTransformerBlock``'s forward: norm2 / norm2_context + modulate, which the block computes itself, through
  adaln_layer_norm too;
* the double blocks' feed-forward projections with GELU-tanh (``ff.net[0]``, ``ff_context.net[0]``): one GEMM with
  the GELU in the BLAS epilogue (``linear_gelu``, :mod:`kernels.inject.linear_gelu`).  The single blocks'
  ``proj_mlp`` + ``act_mlp`` stay as they are (two modules inside the block's own forward).

FLUX's LayerNorms are LayerNorms (not RMS), so adaln_rms and add_rms_norm_modulate have no place here.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from diffusers.models.embeddings import apply_rotary_emb
from diffusers.models.normalization import AdaLayerNormContinuous, AdaLayerNormZero, AdaLayerNormZeroSingle
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm
from diffusers.models.transformers.transformer_flux import (
    FluxAttention,
    FluxAttnProcessor,
    FluxSingleTransformerBlock,
    FluxTransformer2DModel,
    FluxTransformerBlock,
)

from kernels import rope_interleaved
from kernels.inject import norms
from kernels.inject.attention import attend
from kernels.inject.grad import grad_enabled, stock_for_grad
from kernels.inject.linear_gelu import inject_gelu_projections
from kernels.inject.report import KIND_BLOCK_FORWARD, KIND_NORM_FORWARD
from kernels.inject.rules import ADALN, ADALN_LAYER_NORM, RMSNORM, ROPE
from kernels.inject.state import Session, mark

FAMILY = "flux"
MODEL_CLASSES = (FluxTransformer2DModel,)


def _rope_ok(x: torch.Tensor, rope) -> bool:
    """rope_interleaved reproduces diffusers' apply_rotary_emb(x [B, S, H, D], (cos, sin) [S, D], sequence_dim=1)."""
    if not (isinstance(rope, (tuple, list)) and len(rope) == 2):
        return False
    cos, sin = rope
    if not (isinstance(cos, torch.Tensor) and isinstance(sin, torch.Tensor)):
        return False
    return (
        x.dim() == 4
        and x.dtype in (torch.float32, torch.bfloat16, torch.float16)
        and x.shape[-1] % 2 == 0
        and x.device.type in ("cuda", "cpu")
        and cos.dim() == 2
        and cos.shape == sin.shape
        and tuple(cos.shape) == (x.shape[1], x.shape[-1])
        and cos.dtype == sin.dtype
        and cos.dtype in (torch.float32, torch.bfloat16, torch.float16)
        and cos.device == x.device
        and sin.device == x.device
    )


def _rope(attn: nn.Module, x: torch.Tensor, rope, use_kernel: bool) -> torch.Tensor:
    if use_kernel and _rope_ok(x, rope) and not (grad_enabled() and stock_for_grad(attn, ROPE, x, *rope)):
        cos, sin = rope
        return rope_interleaved(x, cos, sin, layout="bshd")
    return apply_rotary_emb(x, rope, sequence_dim=1)


def _projections(attn, hidden_states, encoder_hidden_states):
    """The q/k/v (and added q/k/v) projections, fused (``to_qkv``) or not, as FluxAttnProcessor makes them."""
    if getattr(attn, "fused_projections", False):
        query, key, value = attn.to_qkv(hidden_states).chunk(3, dim=-1)
        if encoder_hidden_states is not None and hasattr(attn, "to_added_qkv"):
            eq, ek, ev = attn.to_added_qkv(encoder_hidden_states).chunk(3, dim=-1)
        else:
            eq = ek = ev = None
        return query, key, value, eq, ek, ev
    query = attn.to_q(hidden_states)
    key = attn.to_k(hidden_states)
    value = attn.to_v(hidden_states)
    eq = ek = ev = None
    if encoder_hidden_states is not None and attn.added_kv_proj_dim is not None:
        eq = attn.add_q_proj(encoder_hidden_states)
        ek = attn.add_k_proj(encoder_hidden_states)
        ev = attn.add_v_proj(encoder_hidden_states)
    return query, key, value, eq, ek, ev


@mark
class FluxKernelAttnProcessor:
    """``FluxAttnProcessor`` with the per-head q/k RMSNorms and the RoPE through kernelfleet kernels."""

    _attention_backend = None
    _parallel_config = None

    def __init__(self, rms_norm: bool = True, rope: bool = True):
        self.rms_norm = bool(rms_norm)
        self.rope = bool(rope)

    def __repr__(self) -> str:
        return f"FluxKernelAttnProcessor(rms_norm={self.rms_norm}, rope={self.rope})"

    def __call__(
        self,
        attn: FluxAttention,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        image_rotary_emb: tuple[torch.Tensor, torch.Tensor] | None = None,
    ):
        query, key, value, encoder_query, encoder_key, encoder_value = _projections(
            attn, hidden_states, encoder_hidden_states
        )

        query = query.unflatten(-1, (-1, attn.head_dim))
        key = key.unflatten(-1, (-1, attn.head_dim))
        value = value.unflatten(-1, (-1, attn.head_dim))

        query = norms.torch_rms_norm(attn.norm_q, query, self.rms_norm)
        key = norms.torch_rms_norm(attn.norm_k, key, self.rms_norm)

        if attn.added_kv_proj_dim is not None:
            encoder_query = encoder_query.unflatten(-1, (-1, attn.head_dim))
            encoder_key = encoder_key.unflatten(-1, (-1, attn.head_dim))
            encoder_value = encoder_value.unflatten(-1, (-1, attn.head_dim))
            encoder_query = norms.torch_rms_norm(attn.norm_added_q, encoder_query, self.rms_norm)
            encoder_key = norms.torch_rms_norm(attn.norm_added_k, encoder_key, self.rms_norm)
            query = torch.cat([encoder_query, query], dim=1)
            key = torch.cat([encoder_key, key], dim=1)
            value = torch.cat([encoder_value, value], dim=1)

        if image_rotary_emb is not None:
            query = _rope(attn, query, image_rotary_emb, self.rope)
            key = _rope(attn, key, image_rotary_emb, self.rope)

        hidden_states = attend(query, key, value, attention_mask, self._attention_backend, self._parallel_config)
        hidden_states = hidden_states.flatten(2, 3)
        hidden_states = hidden_states.to(query.dtype)

        if encoder_hidden_states is not None:
            encoder_hidden_states, hidden_states = hidden_states.split_with_sizes(
                [encoder_hidden_states.shape[1], hidden_states.shape[1] - encoder_hidden_states.shape[1]], dim=1
            )
            hidden_states = attn.to_out[0](hidden_states.contiguous())
            hidden_states = attn.to_out[1](hidden_states)
            encoder_hidden_states = attn.to_add_out(encoder_hidden_states.contiguous())
            return hidden_states, encoder_hidden_states
        return hidden_states


@mark
def flux_block_forward(
    self, hidden_states, encoder_hidden_states, temb, image_rotary_emb=None, joint_attention_kwargs=None
):
    """``FluxTransformerBlock.forward`` with norm2 / norm2_context + modulate through adaln_layer_norm."""
    norm_hidden_states, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(hidden_states, emb=temb)
    norm_encoder_hidden_states, c_gate_msa, c_shift_mlp, c_scale_mlp, c_gate_mlp = self.norm1_context(
        encoder_hidden_states, emb=temb
    )
    joint_attention_kwargs = joint_attention_kwargs or {}

    attention_outputs = self.attn(
        hidden_states=norm_hidden_states,
        encoder_hidden_states=norm_encoder_hidden_states,
        image_rotary_emb=image_rotary_emb,
        **joint_attention_kwargs,
    )
    if len(attention_outputs) == 2:
        attn_output, context_attn_output = attention_outputs
        ip_attn_output = None
    else:
        attn_output, context_attn_output, ip_attn_output = attention_outputs

    attn_output = gate_msa.unsqueeze(1) * attn_output
    hidden_states = hidden_states + attn_output

    norm_hidden_states = norms.layer_norm_modulate(self.norm2, hidden_states, scale_mlp[:, None], shift_mlp[:, None])
    ff_output = self.ff(norm_hidden_states)
    ff_output = gate_mlp.unsqueeze(1) * ff_output
    hidden_states = hidden_states + ff_output
    if ip_attn_output is not None:
        hidden_states = hidden_states + ip_attn_output

    context_attn_output = c_gate_msa.unsqueeze(1) * context_attn_output
    encoder_hidden_states = encoder_hidden_states + context_attn_output
    norm_encoder_hidden_states = norms.layer_norm_modulate(
        self.norm2_context, encoder_hidden_states, c_scale_mlp[:, None], c_shift_mlp[:, None]
    )
    context_ff_output = self.ff_context(norm_encoder_hidden_states)
    encoder_hidden_states = encoder_hidden_states + c_gate_mlp.unsqueeze(1) * context_ff_output
    if encoder_hidden_states.dtype == torch.float16:
        encoder_hidden_states = encoder_hidden_states.clip(-65504, 65504)
    return encoder_hidden_states, hidden_states


# ----------------------------------------------------------------------------------------------------------------
# Adaptive norms shared with SD3
# ----------------------------------------------------------------------------------------------------------------
def inject_ada_norm(s: Session, name: str, mod: nn.Module) -> bool:
    """Replace an AdaLayerNorm* module's forward (LayerNorm or RMSNorm + modulate in one kernel) if allowed."""
    from diffusers.models.normalization import SD35AdaLayerNormZeroX

    forwards = {
        AdaLayerNormZero: norms.ada_layer_norm_zero_forward,
        AdaLayerNormZeroSingle: norms.ada_layer_norm_zero_single_forward,
        AdaLayerNormContinuous: norms.ada_layer_norm_continuous_forward,
        SD35AdaLayerNormZeroX: norms.sd35_ada_layer_norm_zero_x_forward,
    }
    fn = forwards.get(type(mod))
    if fn is None:
        return False
    norm = mod.norm
    kernel = ADALN if type(norm) is DiffusersRMSNorm else ADALN_LAYER_NORM
    if not norms.norm_modulate_supported(norm):
        s.leave(name, mod, f"its norm is {type(norm).__name__}, whose numerics no kernel reproduces")
        return True
    if not s.allowed(kernel):
        s.leave(name, mod, f"{kernel} not selected")
        return True
    if s.replace_forward(name, mod, fn, KIND_NORM_FORWARD, (kernel,), f"{type(norm).__name__} + modulate"):
        s.cover(norm)
    return True


def _inject_attention(s: Session, name: str, attn: FluxAttention) -> None:
    proc = attn.processor
    if type(proc) is not FluxAttnProcessor:
        s.leave(name, attn, f"processor {type(proc).__name__} is not the stock FluxAttnProcessor; left as is")
        return
    norm_mods = [attn.norm_q, attn.norm_k] + (
        [attn.norm_added_q, attn.norm_added_k] if attn.added_kv_proj_dim is not None else []
    )
    rms = s.allowed(RMSNORM) and all(type(n) is nn.RMSNorm for n in norm_mods)
    rope = s.allowed(ROPE)
    if not (rms or rope):
        s.leave(name, attn, "rmsnorm and rope not selected")
        return
    used = ((RMSNORM,) if rms else ()) + ((ROPE,) if rope else ())
    note = " + ".join(x for x in ("per-head q/k RMSNorm" if rms else "", "interleaved RoPE" if rope else "") if x)
    s.replace_processor(name, attn, FluxKernelAttnProcessor(rms_norm=rms, rope=rope), used, note)
    if rms:
        s.cover(*norm_mods)
    else:
        for n in norm_mods:
            s.reason(n, "rmsnorm not selected")


def _inject_block(s: Session, name: str, blk: FluxTransformerBlock) -> None:
    if not s.allowed(ADALN_LAYER_NORM):
        s.reason(blk.norm2, "adaln_layer_norm not selected")
        s.reason(blk.norm2_context, "adaln_layer_norm not selected")
        return
    if not (norms.norm_modulate_supported(blk.norm2) and norms.norm_modulate_supported(blk.norm2_context)):
        return
    if s.replace_forward(
        name, blk, flux_block_forward, KIND_BLOCK_FORWARD, (ADALN_LAYER_NORM,), "norm2 / norm2_context + modulate"
    ):
        s.cover(blk.norm2, blk.norm2_context)


def inject(s: Session, root: nn.Module) -> None:
    found = False
    for name, mod in root.named_modules():
        if isinstance(mod, FluxAttention):
            found = True
            _inject_attention(s, name, mod)
        elif type(mod) is FluxTransformerBlock:
            found = True
            _inject_block(s, name, mod)
    if not found:
        return
    s.family(FAMILY)
    # AdaLayerNorm* modules of a FLUX model (SD3's are handled by kernels.inject.sd3)
    for name, mod in root.named_modules():
        if not s.is_covered(mod):
            inject_ada_norm(s, name, mod)
        if type(mod) is FluxSingleTransformerBlock:
            s.reason(
                mod.act_mlp,
                "single block: proj_mlp and act_mlp are two modules called by the block's own "
                "forward (not replaced), so linear_gelu has no module to take",
            )
    inject_gelu_projections(s, root)
