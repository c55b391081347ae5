"""LTX-Video (diffusers ``LTXVideoTransformer3DModel``): where the kernels go.

Per ``LTXVideoTransformerBlock`` (diffusers' ``transformer_ltx.py``):

* ``attn1`` (self-attention) gets :class:`LTXKernelAttnProcessor`: ``norm_q``/``norm_k`` (``torch.nn.RMSNorm``
  across all heads, eps 1e-5, with weight) and the interleaved RoPE become one :func:`kernels.qk_norm_rope` call;
* ``attn2`` (cross-attention, no RoPE) gets the same processor class, with ``norm_q``/``norm_k`` through
  :func:`kernels.rms_norm` (numerics "torch"), and with ``cross_attention`` selected its attention to the text
  tokens through :func:`kernels.cross_attention` (all the keys in one tile) where diffusers would run its native
  backend with the defaults and the tensors suit the kernel (:func:`kernels.inject.attention.cross_attention_ok`).
  In eager calls and under torch.compile alike.  A backend chosen with ``set_attention_backend`` is used as chosen;
* with ``fused_qkv`` selected, attn1's q/k/v projections (which all read the block's normed input) are one GEMM,
  and so are attn2's k/v (which read the text states): :mod:`kernels.inject.fused_linear`.  Each forward of the
  transformer checks the fused weights' addresses once (:class:`~kernels.inject.fused_linear.ForwardCheck`), and
  its blocks, eager or compiled, read that answer; a block called on its own checks per call when eager and keeps
  the projections separate when compiled, as torch.compile of the whole transformer does (a trace cannot read
  addresses);
* the block's forward is replaced: ``norm1`` + ``* (1 + scale_msa) + shift_msa`` is one :func:`kernels.adaln_rms`,
  and the attn2 residual add + ``norm2`` + ``* (1 + scale_mlp) + shift_mlp`` is one
  :func:`kernels.add_rms_norm_modulate`; the two gated residual adds (``hidden + attn1(...) * gate_msa`` and
  ``hidden + ff(...) * gate_mlp``) are each one :func:`kernels.gated_residual`.  scale/shift/gates come from
  ``temb`` either broadcast (``[B, 1, 6C]``, t2v) or per token (``[B, S, 6C]``, image-to-video / condition
  pipelines); both go to the kernels as they are;
* with ``linear_gelu`` selected, the feed-forward's first projection and its GELU-tanh are one GEMM with the GELU in
  cuBLASLt's epilogue (:mod:`kernels.inject.linear_gelu`), in eager calls and under torch.compile;
* with ``qk_norm_rope`` selected, the model's ``rope`` (``LTXVideoRotaryPosEmbed``) computes its cos/sin tables
  for one batch element and hands them to every block expanded over the batch (a batch stride of 0): the stock
  module computes the same table for each element (its coordinates are the batch's, repeated), so the values are
  bit for bit the same, and :func:`kernels.qk_norm_rope` reads a shared table once per token instead of once per
  row (a quarter of its bytes at batch 2).  Coordinates given per element (``video_coords``) take the stock path.

The processors call attention through :func:`kernels.inject.attention.attend` (diffusers' ``dispatch_attention_fn``
with ``backend=self._attention_backend``, as the stock processor calls it), so ``set_attention_backend`` keeps
working.  attn2's per-head mask is made once per forward and reused by the later blocks
(:func:`kernels.inject.attention.prepared_mask`; the stock processor makes the same copy in every block), and so are
the blocks' modulation values (:class:`AdaValues`: one add of ``temb`` to every block's ``scale_shift_table`` where
each block made its own).  Everything here is traceable: decisions depend only on module types, dtypes, shapes and
devices; the two per-forward reuses apply to eager calls only.  A call that autograd wants a gradient from takes the
model's own code for that kernel (the fused projections included: their concatenated weight carries no gradient to
the modules' own), :mod:`kernels.inject.grad`.
"""

from __future__ import annotations

import dataclasses
import itertools

import torch
import torch.nn as nn
from diffusers.models.activations import GELU
from diffusers.models.attention import FeedForward
from diffusers.models.transformers.transformer_ltx import (
    LTXAttention,
    LTXVideoAttnProcessor,
    LTXVideoRotaryPosEmbed,
    LTXVideoTransformer3DModel,
    LTXVideoTransformerBlock,
    apply_rotary_emb,
)

from kernels import add_rms_norm_modulate, cross_attention, gated_residual, qk_norm_rope
from kernels.inject import fused_linear
from kernels.inject.attention import attend, cross_attention_ok, native_default, prepared_mask
from kernels.inject.calls import call, plain
from kernels.inject.grad import grad_enabled, stock_for_grad
from kernels.inject.linear_gelu import gelu_projection_ok, linear_gelu, linear_gelu_ok
from kernels.inject.memo import LastResult
from kernels.inject.norms import (
    modulation_ok,
    rms_modulate,
    rms_modulate_ok,
    torch_eps,
    torch_rms_norm,
    torch_rms_norm_ok,
)
from kernels.inject.report import KIND_BLOCK_FORWARD, KIND_ROPE_FORWARD
from kernels.inject.rules import (
    ADALN,
    ADD_RMS_NORM_MODULATE,
    CROSS_ATTENTION,
    FUSED_QKV,
    GATED_RESIDUAL,
    LINEAR_GELU,
    QK_NORM_ROPE,
    RMSNORM,
)
from kernels.inject.state import Session, mark

FAMILY = "ltx"
MODEL_CLASSES = (LTXVideoTransformer3DModel,)


def _fused_qk_rope_ok(attn: nn.Module, query: torch.Tensor, key: torch.Tensor, rope) -> bool:
    """qk_norm_rope reproduces norm_q/norm_k followed by LTX's apply_rotary_emb on these tensors."""
    if not (isinstance(rope, (tuple, list)) and len(rope) == 2):
        return False
    cos, sin = rope
    if not (isinstance(cos, torch.Tensor) and isinstance(sin, torch.Tensor)):
        return False
    if query.dim() != 3 or key.shape != query.shape or key.dtype != query.dtype:
        return False
    if not (torch_rms_norm_ok(attn.norm_q, query) and torch_rms_norm_ok(attn.norm_k, key)):
        return False
    if torch_eps(attn.norm_q, query) != torch_eps(attn.norm_k, key):
        return False
    batch, seq, width = query.shape
    if cos.shape != sin.shape or cos.dtype != sin.dtype or cos.device != query.device or sin.device != query.device:
        return False
    if cos.dtype not in (torch.float32, torch.bfloat16, torch.float16) or width % 2:
        return False
    if cos.dim() == 2:
        return tuple(cos.shape) == (seq, width)
    return cos.dim() == 3 and cos.shape[0] in (1, batch) and tuple(cos.shape[1:]) == (seq, width)


@mark
class LTXKernelAttnProcessor:
    """``LTXVideoAttnProcessor`` with the q/k norms (and RoPE) through kernelfleet kernels.

    ``fuse_qk_rope``: when RoPE is given, norm_q + norm_k + RoPE are one ``qk_norm_rope`` call;
    ``rms_norm``: otherwise norm_q/norm_k each go through ``rms_norm`` (and RoPE, if any, stays eager).
    """

    _attention_backend = None
    _parallel_config = None

    def __init__(
        self,
        fuse_qk_rope: bool = True,
        rms_norm: bool = True,
        qkv: fused_linear.FusedLinear | None = None,
        kv: fused_linear.FusedLinear | None = None,
        cross_attention: bool = False,
    ):
        self.fuse_qk_rope = bool(fuse_qk_rope)
        self.rms_norm = bool(rms_norm)
        self.qkv = qkv  # to_q/to_k/to_v as one GEMM (self-attention)
        self.kv = kv  # to_k/to_v as one GEMM (cross-attention)
        self.cross_attention = bool(cross_attention)  # attention to the text tokens through kernels.cross_attention

    def __repr__(self) -> str:
        return (
            f"LTXKernelAttnProcessor(fuse_qk_rope={self.fuse_qk_rope}, rms_norm={self.rms_norm}, "
            f"fused_qkv={self.qkv is not None}, fused_kv={self.kv is not None}, "
            f"cross_attention={self.cross_attention})"
        )

    def _project(self, attn, hidden_states, encoder_hidden_states):
        """query, key, value: one GEMM for the projections that share an input where they are fused and the
        weights still are (:meth:`~kernels.inject.fused_linear.FusedLinear.usable`), else one per projection."""
        if (
            encoder_hidden_states is None
            and self.qkv is not None
            and self.qkv.usable()
            and not (grad_enabled() and stock_for_grad(attn, FUSED_QKV, hidden_states, *self.qkv.parameters()))
        ):
            return self.qkv(hidden_states)
        if (
            encoder_hidden_states is not None
            and self.kv is not None
            and self.kv.usable()
            and not (grad_enabled() and stock_for_grad(attn, FUSED_QKV, encoder_hidden_states, *self.kv.parameters()))
        ):
            return (call(attn.to_q, hidden_states),) + self.kv(encoder_hidden_states)
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        return (
            call(attn.to_q, hidden_states),
            call(attn.to_k, encoder_hidden_states),
            call(attn.to_v, encoder_hidden_states),
        )

    def __call__(
        self,
        attn: LTXAttention,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        image_rotary_emb: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        batch_size, sequence_length, _ = (
            hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        )
        attention_mask = prepared_mask(attn, attention_mask, sequence_length, batch_size)
        query, key, value = self._project(attn, hidden_states, encoder_hidden_states)

        if (
            image_rotary_emb is not None
            and self.fuse_qk_rope
            and _fused_qk_rope_ok(attn, query, key, image_rotary_emb)
            and not (
                grad_enabled()
                and stock_for_grad(
                    attn, QK_NORM_ROPE, query, key, attn.norm_q.weight, attn.norm_k.weight, *image_rotary_emb
                )
            )
        ):
            cos, sin = image_rotary_emb
            query, key = qk_norm_rope(
                query, key, attn.norm_q.weight, attn.norm_k.weight, cos, sin, torch_eps(attn.norm_q, query)
            )
        else:
            query = torch_rms_norm(attn.norm_q, query, self.rms_norm)
            key = torch_rms_norm(attn.norm_k, key, self.rms_norm)
            if image_rotary_emb is not None:
                query = apply_rotary_emb(query, image_rotary_emb)
                key = apply_rotary_emb(key, image_rotary_emb)

        query = query.unflatten(2, (attn.heads, -1))
        key = key.unflatten(2, (attn.heads, -1))
        value = value.unflatten(2, (attn.heads, -1))

        if (
            self.cross_attention
            and encoder_hidden_states is not None
            and native_default(self._attention_backend, self._parallel_config)
            and cross_attention_ok(query, key, value, attention_mask)
            and not (grad_enabled() and stock_for_grad(attn, CROSS_ATTENTION, query, key, value, attention_mask))
        ):
            hidden_states = cross_attention(query, key, value, attention_mask)
        else:
            hidden_states = attend(query, key, value, attention_mask, self._attention_backend, self._parallel_config)
        hidden_states = hidden_states.flatten(2, 3)
        hidden_states = hidden_states.to(query.dtype)
        hidden_states = call(attn.to_out[0], hidden_states)
        hidden_states = call(attn.to_out[1], hidden_states)
        return hidden_states


def _attend(attn: nn.Module, hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb):
    """``attn(hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb)`` as the block calls it.

    ``LTXAttention.forward`` runs ``inspect.signature`` on its processor at every call, only to drop extra keyword
    arguments, of which the block passes none, and then calls the processor.  That costs tens of microseconds of
    host time per call (56 calls per step), so an attention module that is plain (the class's own forward, no
    hooks) has its processor called directly, which is what its forward would do.  Anything else goes through
    the module."""
    if plain(attn, LTXAttention):
        return attn.processor(attn, hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb)
    return attn(
        hidden_states,
        encoder_hidden_states=encoder_hidden_states,
        attention_mask=attention_mask,
        image_rotary_emb=image_rotary_emb,
    )


def _gated_add(
    block: nn.Module, residual: torch.Tensor, x: torch.Tensor, gate: torch.Tensor, use_gate: bool
) -> torch.Tensor:
    """``residual + x * gate`` (the block's line), through :func:`kernels.gated_residual` in eager calls where it
    computes exactly that: one dtype for all three, x shaped like the residual, the gate broadcast or per token.
    While torch.compile traces, the line stays PyTorch: Inductor fuses it into one kernel with its neighbours,
    which an opaque op would split (on the H200, with the op: 56 more kernels per denoising step and 0.06 ms more
    device time, docs/perf/ltx-e2e-h200.md)."""
    if (
        use_gate
        and not torch.compiler.is_compiling()
        and residual.dim() == 3
        and x.shape == residual.shape
        and x.dtype == residual.dtype
        and x.device == residual.device
        and residual.device.type in ("cuda", "cpu")
        and modulation_ok(gate, residual)
        and not (grad_enabled() and stock_for_grad(block, GATED_RESIDUAL, residual, x, gate))
    ):
        return gated_residual(residual, x, gate)
    return residual + x * gate


def _ff_fusable(ff: nn.Module) -> bool:
    """The feed-forward is diffusers' FeedForward starting with a GELU-tanh projection that has a bias (LTX-Video's:
    ``activation_fn="gelu-approximate"``), every part plain."""
    return plain(ff, FeedForward) and len(ff.net) >= 2 and plain(ff.net[0], GELU) and gelu_projection_ok(ff.net[0])


def _feed_forward(block: nn.Module, ff: nn.Module, x: torch.Tensor, fuse: bool) -> torch.Tensor:
    """``ff(x)``; with ``fuse``, where the modules are still as injected and the tensors suit it, the first
    projection and its GELU as one GEMM (:func:`kernels.inject.linear_gelu.linear_gelu`)."""
    if fuse and _ff_fusable(ff):
        proj = ff.net[0].proj
        if linear_gelu_ok(x, proj.weight, proj.bias) and not (
            grad_enabled() and stock_for_grad(block, LINEAR_GELU, x, proj.weight, proj.bias)
        ):
            x = linear_gelu(x, proj.weight, proj.bias)
            for sub in ff.net[1:]:
                x = call(sub, x)
            return x
    return call(ff, x)


class AdaValues:
    """The modulation values of every injected block of one transformer, made by one kernel per forward.

    Each block computes ``scale_shift_table[None, None] + temb.reshape(B, T, 6, C)`` (its six shift/scale/gate rows),
    one small broadcast add per block (LTX-Video: 28 per forward) on the same ``temb``.  With the tables stacked
    (rebuilt whenever a block's table is replaced or changed in place), the first block's call adds ``temb`` to all of
    them at once and the other blocks take their slice: the same elementwise add, so the same values bit for bit.
    Used in eager calls with ``temb`` broadcast over tokens (``[B, 1, 6C]``); a per-token ``temb`` (its result would
    be 28 times the size of a block's), an inference-mode ``temb`` (no version counter) or tables that differ in
    shape, dtype or device take each block's own add.
    """

    def __init__(self, blocks: list[nn.Module]):
        self.blocks = blocks
        self.stack: torch.Tensor | None = None
        self.stack_key: tuple | None = None
        self.last = LastResult()  # every block's values for the last temb
        self.builds = 0  # stacks built (tests)
        self.adds = 0  # adds over all blocks (tests)

    @staticmethod
    def _table_key(t: torch.Tensor) -> tuple:
        return t.data_ptr(), t._version, tuple(t.shape), t.dtype, t.device

    def _stacked(self, device: torch.device) -> torch.Tensor | None:
        tables = [b.scale_shift_table for b in self.blocks]
        key = tuple(self._table_key(t) for t in tables)
        if key != self.stack_key:
            if len({k[2:] for k in key}) != 1 or tables[0].device != device:
                return None
            with torch.no_grad():
                self.stack = torch.stack([t.detach() for t in tables])
            self.stack_key = key
            self.builds += 1
        return self.stack

    def values(self, index: int, temb: torch.Tensor, batch_size: int) -> torch.Tensor | None:
        """Block ``index``'s ``ada_values`` for ``temb`` (``[B, 1, 6, C]``), or None where it must compute its own."""
        if temb.dim() != 3 or temb.size(1) != 1 or not LastResult.usable(temb) or torch.is_grad_enabled():
            return None
        key = (batch_size, temb.shape, temb.dtype)
        every = self.last.get(temb, key)
        if every is not None and self.stack_key[index] == self._table_key(self.blocks[index].scale_shift_table):
            return every[index]  # this temb's values are made and this block's table is what was stacked
        stack = self._stacked(temb.device)
        if stack is None:
            return None
        every = self.last.put(temb, key, stack[:, None, None] + temb.reshape(batch_size, 1, stack.shape[1], -1)[None])
        self.adds += 1
        return every[index]


def _ada_values(blk: nn.Module, temb: torch.Tensor, batch_size: int) -> torch.Tensor:
    """``scale_shift_table[None, None] + temb.reshape(B, T, 6, C)`` as the block computes it; from the
    transformer's :class:`AdaValues` where it has one and can serve this call (eager calls only)."""
    if not torch.compiler.is_compiling():  # a trace never looks at the shared values
        shared = vars(blk).get("_kf_ada")
        got = None if shared is None else shared[0].values(shared[1], temb, batch_size)
        if got is not None:
            return got
    num_ada_params = blk.scale_shift_table.shape[0]
    values = blk.scale_shift_table[None, None].to(temb.device) + temb.reshape(
        batch_size, temb.size(1), num_ada_params, -1
    )
    if torch.compiler.is_compiling() and temb.size(1) == 1:
        # Inductor computes each scale/shift row the kernels are given into a buffer of its own, one small kernel
        # (and one launch) each, four per block; a stack of the rows is one buffer, made by one kernel, that the
        # kernels read slices of.  Same values.  (A per-token temb would make the stack as large as six hidden
        # states.)
        values = torch.stack(values.unbind(2), dim=2)
    return values


def _block_forward(use_adaln: bool, use_add_norm: bool, use_gate: bool, use_ff: bool):
    """LTXVideoTransformerBlock.forward with the norm/modulate chains, the gated residual adds and the feed-forward's
    GELU projection through the kernels and rewrites the flags allow."""

    @mark
    def forward(
        self,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        temb: torch.Tensor,
        image_rotary_emb: tuple[torch.Tensor, torch.Tensor] | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        batch_size = hidden_states.size(0)
        ada_values = _ada_values(self, temb, batch_size)
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = ada_values.unbind(dim=2)

        # norm1 + modulate (one kernel)
        norm_hidden_states = rms_modulate(self.norm1, hidden_states, scale_msa, shift_msa, use_adaln)

        attn_hidden_states = _attend(self.attn1, norm_hidden_states, None, None, image_rotary_emb)
        hidden_states = _gated_add(self, hidden_states, attn_hidden_states, gate_msa, use_gate)

        attn_hidden_states = _attend(self.attn2, hidden_states, encoder_hidden_states, encoder_attention_mask, None)
        # residual add + norm2 + modulate (one kernel writing both the new residual and the FF input)
        if (
            use_add_norm
            and self.norm2.weight is None
            and attn_hidden_states.shape == hidden_states.shape
            and attn_hidden_states.dtype == hidden_states.dtype
            and rms_modulate_ok(self.norm2, hidden_states, scale_mlp, shift_mlp)
            and not (
                grad_enabled()
                and stock_for_grad(self, ADD_RMS_NORM_MODULATE, attn_hidden_states, hidden_states, scale_mlp, shift_mlp)
            )
        ):
            hidden_states, norm_hidden_states = add_rms_norm_modulate(
                attn_hidden_states, hidden_states, scale_mlp, shift_mlp, float(self.norm2.eps)
            )
        else:
            hidden_states = hidden_states + attn_hidden_states
            norm_hidden_states = rms_modulate(self.norm2, hidden_states, scale_mlp, shift_mlp, use_adaln)

        ff_output = _feed_forward(self, self.ff, norm_hidden_states, use_ff)
        return _gated_add(self, hidden_states, ff_output, gate_mlp, use_gate)

    return forward


# One forward function per flag combination: the same function object for every block, so the blocks stay
# identical for compile_repeated_blocks (one compiled graph reused for all).
_BLOCK_FORWARDS = {flags: _block_forward(*flags) for flags in itertools.product((False, True), repeat=4)}


@mark
def _rope_forward(
    self,
    hidden_states: torch.Tensor,
    num_frames: int | None = None,
    height: int | None = None,
    width: int | None = None,
    rope_interpolation_scale=None,
    video_coords: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """LTXVideoRotaryPosEmbed.forward with the tables of a batch computed once and expanded over the batch, where
    the stock forward would compute one identical table per element (no ``video_coords``)."""
    batch = hidden_states.size(0)
    if video_coords is not None or batch == 1:
        return LTXVideoRotaryPosEmbed.forward(
            self, hidden_states, num_frames, height, width, rope_interpolation_scale, video_coords
        )
    cos, sin = LTXVideoRotaryPosEmbed.forward(
        self, hidden_states[:1], num_frames, height, width, rope_interpolation_scale, None
    )
    return cos.expand(batch, -1, -1), sin.expand(batch, -1, -1)


def _norm_ok_static(norm: nn.Module) -> bool:
    from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm

    return type(norm) is DiffusersRMSNorm and getattr(norm, "bias", None) is None and len(norm.dim) == 1


def _inject_attention(s: Session, name: str, attn: LTXAttention, self_attention: bool) -> None:
    proc = attn.processor
    if type(proc) is not LTXVideoAttnProcessor:
        s.leave(name, attn, f"processor {type(proc).__name__} is not the stock LTXVideoAttnProcessor; left as is")
        return
    if not (type(attn.norm_q) is nn.RMSNorm and type(attn.norm_k) is nn.RMSNorm):
        s.leave(name, attn, "norm_q/norm_k are not torch.nn.RMSNorm")
        return
    fuse = self_attention and s.allowed(QK_NORM_ROPE)
    rms = s.allowed(RMSNORM)
    xattn = not self_attention and s.allowed(CROSS_ATTENTION)
    if not (fuse or rms or s.allowed(FUSED_QKV) or xattn):
        why = (
            "qk_norm_rope, rmsnorm and fused_qkv not selected"
            if self_attention
            else "rmsnorm, fused_qkv and cross_attention not selected"
        )
        s.leave(name, attn, why)
        return
    used = ((QK_NORM_ROPE,) if fuse else ()) + ((RMSNORM,) if rms and not fuse else ())
    note = (
        "norm_q + norm_k + interleaved RoPE fused"
        if fuse
        else "norm_q / norm_k through rmsnorm (numerics torch)"
        if rms
        else "norm_q / norm_k as they are"
    )
    note += "; RoPE eager" if self_attention and not fuse else ""
    qkv = kv = None
    if s.allowed(FUSED_QKV):
        group = (attn.to_q, attn.to_k, attn.to_v) if self_attention else (attn.to_k, attn.to_v)
        why = fused_linear.why_not(group)
        if why:
            note += f"; projections not fused: {why}"
        else:
            fused = fused_linear.fuse(group)
            s.on_undo(attn, lambda: fused_linear.unshare(fused))
            qkv, kv = (fused, None) if self_attention else (None, fused)
            used += (FUSED_QKV,)
            note += "; q/k/v projections as one GEMM" if self_attention else "; k/v projections as one GEMM"
    if xattn:
        used += (CROSS_ATTENTION,)
        note += "; attention to the text tokens in one tile (cross_attention)"
    s.replace_processor(
        name,
        attn,
        LTXKernelAttnProcessor(fuse_qk_rope=fuse, rms_norm=rms, qkv=qkv, kv=kv, cross_attention=xattn),
        used,
        note,
    )
    s.cover(attn.norm_q, attn.norm_k)


def _inject_block(s: Session, name: str, blk: LTXVideoTransformerBlock) -> bool:
    """Replace the block's forward where the selection and the block allow; whether it was replaced."""
    use_adaln = s.allowed(ADALN) and _norm_ok_static(blk.norm1)
    use_add = s.allowed(ADD_RMS_NORM_MODULATE) and _norm_ok_static(blk.norm2) and blk.norm2.weight is None
    use_gate = s.allowed(GATED_RESIDUAL)
    use_ff = s.allowed(LINEAR_GELU) and _ff_fusable(blk.ff)
    if s.allowed(LINEAR_GELU) and not use_ff:
        s.reason(
            blk.ff.net[0] if isinstance(blk.ff, FeedForward) else blk.ff,
            "linear_gelu: the feed-forward is not a plain FeedForward with a GELU-tanh projection with bias",
        )
    if not (use_adaln or use_add or use_gate or use_ff):
        why = (
            "adaln, add_rms_norm_modulate and gated_residual not selected"
            if not (s.allowed(ADALN) or s.allowed(ADD_RMS_NORM_MODULATE))
            else "norm1/norm2 are not diffusers RMSNorm without bias (and gated_residual not selected)"
        )
        s.reason(blk.norm1, why)
        s.reason(blk.norm2, why)
        return False
    used = tuple(
        k
        for k, on in (
            (ADALN, use_adaln),
            (ADD_RMS_NORM_MODULATE, use_add),
            (GATED_RESIDUAL, use_gate),
            (LINEAR_GELU, use_ff),
        )
        if on
    )
    note = "; ".join(
        x
        for x in (
            "norm1 + modulate" if use_adaln else "",
            "attn2 residual + norm2 + modulate" if use_add else "",
            "attn1 and feed-forward gated residual adds" if use_gate else "",
            "feed-forward projection + GELU-tanh as one GEMM" if use_ff else "",
        )
        if x
    )
    forward = _BLOCK_FORWARDS[(use_adaln, use_add, use_gate, use_ff)]
    replaced = s.replace_forward(name, blk, forward, KIND_BLOCK_FORWARD, used, note)
    if replaced:
        if use_ff:
            s.cover(blk.ff.net[0])
        if use_adaln:
            s.cover(blk.norm1)
        else:
            s.reason(blk.norm1, "adaln not selected")
        if use_add or use_adaln:  # without add_rms_norm_modulate, norm2 + modulate still goes through adaln_rms
            s.cover(blk.norm2)
        else:
            s.reason(blk.norm2, "adaln and add_rms_norm_modulate not selected")
    return replaced


def _share_ada_values(s: Session, blocks: list[tuple[str, nn.Module]]) -> None:
    """Give the injected blocks of one transformer (``(name, block)`` pairs) one :class:`AdaValues` (each block: it
    and its index), and say so in their report entries."""
    if len(blocks) < 2:
        return
    shared = AdaValues([blk for _, blk in blocks])
    for i, (_, blk) in enumerate(blocks):
        blk._kf_ada = (shared, i)
        s.on_undo(blk, lambda blk=blk: vars(blk).pop("_kf_ada", None))
    paths = {s.path(name) for name, _ in blocks}
    note = f"modulation values of all {len(blocks)} blocks in one add per forward"
    s.report.replaced[:] = [
        dataclasses.replace(r, note=f"{r.note}; {note}" if r.note else note)
        if r.kind == KIND_BLOCK_FORWARD and r.path in paths
        else r
        for r in s.report.replaced
    ]


def _check_fused_each_forward(s: Session, model: nn.Module) -> None:
    """Give the transformer's fused projection groups one :class:`~kernels.inject.fused_linear.ForwardCheck`, so
    that its compiled blocks can use them too."""
    groups = [
        f
        for m in model.modules()
        if isinstance(getattr(m, "processor", None), LTXKernelAttnProcessor)
        for f in (m.processor.qkv, m.processor.kv)
        if f is not None and f.check is None
    ]
    if groups:
        s.on_undo(model, fused_linear.ForwardCheck(groups).attach(model))


def inject(s: Session, root: nn.Module) -> None:
    found = False
    in_blocks: set[int] = set()
    replaced_blocks: dict[int, str] = {}  # id -> name of the blocks whose forward was replaced
    for name, mod in root.named_modules():
        if isinstance(mod, LTXVideoTransformerBlock):
            found = True
            _inject_attention(s, f"{name}.attn1" if name else "attn1", mod.attn1, self_attention=True)
            _inject_attention(s, f"{name}.attn2" if name else "attn2", mod.attn2, self_attention=False)
            in_blocks.update((id(mod.attn1), id(mod.attn2)))
            if _inject_block(s, name, mod):
                replaced_blocks[id(mod)] = name
    for name, mod in root.named_modules():
        if isinstance(mod, LTXAttention) and id(mod) not in in_blocks:
            found = True
            _inject_attention(s, name, mod, self_attention=True)
    for name, mod in root.named_modules():
        if isinstance(mod, LTXVideoTransformer3DModel):
            found = True
            rope_name = f"{name}.rope" if name else "rope"
            if not s.allowed(QK_NORM_ROPE):
                s.reason(mod.rope, "qk_norm_rope not selected (the tables stay per batch element)")
            elif type(mod.rope) is not LTXVideoRotaryPosEmbed:
                s.leave(rope_name, mod.rope, f"{type(mod.rope).__name__} is not LTXVideoRotaryPosEmbed")
            else:
                s.replace_forward(
                    rope_name,
                    mod.rope,
                    _rope_forward,
                    KIND_ROPE_FORWARD,
                    (QK_NORM_ROPE,),
                    "cos/sin computed once and shared by the batch (batch stride 0)",
                )
            _share_ada_values(
                s,
                [
                    (replaced_blocks[id(b)], b)
                    for b in getattr(mod, "transformer_blocks", ())
                    if id(b) in replaced_blocks
                ],
            )
            _check_fused_each_forward(s, mod)
            s.reason(
                mod.norm_out,
                "norm_out + modulate runs once per forward, in the model's own forward (not "
                "per block); left to PyTorch",
            )
            s.reason(
                mod.caption_projection.act_1 if hasattr(mod.caption_projection, "act_1") else None,
                "caption projection GELU, once per forward; a standalone GELU kernel saves nothing",
            )
    if found:
        s.family(FAMILY)
