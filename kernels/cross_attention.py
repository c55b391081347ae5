"""Softmax attention over a short key/value sequence in one tile: cross-attention to text tokens.

LTX-Video's ``attn2`` attends from every video token to the prompt's text tokens (128 at LTXPipeline's default
``max_sequence_length``, an additive padding mask of 0 / -10000 per text token).  With so few keys, the whole key and
value sequence of a head fits in one tile, so each program loads a block of queries and all of its head's keys and
values once, and computes ``softmax(q @ k.T * scale + mask) @ v`` in one pass: no running maximum and no rescaling
across key blocks.  On AMD, where every warp holds the whole key and value tiles in registers, tiles beyond LTX-Video's
128 keys x head dim 64 are taken in steps of key blocks with a running maximum instead (:func:`keys_per_step`, the
``tile`` of this kernel's launch table); everywhere else, the H200 included, the kernel is the one pass, unless the
one-pass tile would not fit the target's shared memory (fp32 beyond 128 keys at head dim 128 on the H200:
:func:`keys_in_shared_memory`), where it takes the same steps.  Scores, the
softmax and the normalisation are fp32; the probabilities are rounded to the inputs' dtype for the second product (as
flash-attention kernels do), and the result is rounded once.

Layouts are diffusers' attention-dispatch layout, ``[B, S, H, D]`` (what the processors hand to
``dispatch_attention_fn``), with any strides as long as the last dim is unit-stride: q straight from its projection,
k and v as views of a fused key/value projection.  The output is a new contiguous ``[B, Sq, H, D]`` tensor, i.e.
``[B, Sq, H * D]`` after ``flatten(2, 3)`` without a copy.  ``attn_mask`` is an additive float mask that broadcasts
to ``[B, H, Sq, Sk]`` (SDPA's convention; LTX's is ``[B, H, 1, Sk]``), read with stride 0 over the dims it is
broadcast along.  Up to :data:`MAX_KEYS` keys; longer sequences need a kernel that loops over key blocks (not this
one).  Forward only.  A plain eager call launches directly (a repeated geometry replays its launch plan); under
torch.compile, for tensor subclasses, or when autograd must record the call, it goes through the
``kernelfleet::cross_attention`` op (:class:`kernels.launch.PublicKernel`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from kernels.arch import interpreting, shared_memory_limit
from kernels.checks import check_device, check_float, check_out
from kernels.launch import PublicKernel, cdiv, launcher, next_pow2
from kernels.launch_table import LaunchRow, LaunchTable
from kernels.rounding import round_to

MAX_KEYS = 256  # keys per head that one tile holds (scores [BLOCK_M, MAX_KEYS] in fp32 registers)
MAX_HEAD_DIM = 128
LOG2E = 1.4426950408889634


class AttnConfig(NamedTuple):
    block_m: int  # queries per program
    num_warps: int
    block_k: int = 0  # keys per step (0: the launch table's choice, :func:`keys_per_step`)


def attn_config(keys_block: int, head_block: int) -> AttnConfig:
    """Queries per program and warps for a key tile of ``keys_block`` and a head dim block of ``head_block``.

    H200 (docs/perf/kernels-h200.md, launch choices; 128 keys, head dim 64): 64 queries and 4 warps
    per program were the fastest of 10 configurations at 1320 and 6336 queries (128 queries with 8 warps 15-18 %
    slower, several query blocks per program against keys loaded once 27-60 % slower); again so with the mask loaded
    as one row (14.8 us at 1320 queries, the best of 4 configurations).  Larger tiles (256 keys or a
    head dim of 128) take 8 warps so that the fp32 score tile stays at 64 values per thread: not measured.  The same
    rule on ROCm for the keys of one step (:func:`keys_per_step`), not measured there."""
    return AttnConfig(64, 4 if keys_block * head_block <= 128 * 64 else 8)


def keys_per_step(keys_block: int, head_block: int, tile: tuple[int, int]) -> int:
    """Keys one step of the kernel holds, for a key tile of ``keys_block`` x ``head_block`` and the launch table's
    ``tile`` = (largest tile in one pass, keys x head dims a step beyond it), both 0 on sm_90 and every target
    but AMD: all ``keys_block`` keys (one pass) up to the first bound, else as many as the step holds (at least 16,
    the smallest product).

    AMD (:data:`LAUNCH`; docs/perf/amd-isa.md): the two products are chained, so Triton's AMD backend puts every
    warp along the queries and each warp holds the whole key tile (the first product's operand) and the whole value
    tile (the second's) in registers.  With Triton 3.7.1, 64 queries, bf16 and the mask row, one pass over 128 keys
    at head dim 128 spilled 94 VGPRs on gfx1201 (16 to 128 queries, 4 to 16 warps: 48 to 125), one over 256 keys at
    64 spilled 117 on gfx1201, 56 on gfx950 and 102 on gfx942; LTX-Video's 128 x 64 tile does not spill.  In steps
    of 64 x 64 (32 keys at head dim 128) none spills; steps of 128 x 64 still spilled 4 VGPRs on gfx1201 (the loop
    also carries the fp32 output tile).  Not measured on an AMD GPU."""
    one_pass, step = tile
    if not one_pass or keys_block * head_block <= one_pass:
        return keys_block
    return min(keys_block, max(16, step // head_block))


def keys_in_shared_memory(keys: int, head_block: int, block_m: int, dtype: torch.dtype, limit: int | None) -> int:
    """The keys one step may hold so that the launch's shared memory stays within ``limit`` (bytes; None: no limit):
    ``keys`` where it fits, else the largest power of two that does (at least 16, the smallest product).

    The products stage their operands in shared memory: the query tile and one step's key and value tiles,
    ``(block_m + 2 * keys) * head_block`` elements, of 4 bytes for fp32 (the products run in fp32) and 2 for bf16
    and fp16 (Triton 3.7.1's allocation for sm_90 is exactly that: 294,912 B for 256 keys at head dim 128 in fp32,
    over the H200's 232,448 B, so such a launch could not run; 163,840 B in steps of 128 keys).  A step smaller than
    the whole key tile loops over key blocks with a running maximum (the AMD path)."""
    if limit is None:
        return keys
    size = 4 if dtype == torch.float32 else 2
    while keys > 16 and (block_m + 2 * keys) * head_block * size > limit:
        keys //= 2
    return keys


@triton.jit
def _cross_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    mask_ptr,
    out_ptr,
    Sq,
    Sk,
    H,
    D,
    qk_scale,
    sq_b,
    sq_s,
    sq_h,
    sk_b,
    sk_s,
    sk_h,
    sv_b,
    sv_s,
    sv_h,
    sm_b,
    sm_h,
    sm_s,
    so_b,
    so_s,
    so_h,
    HAS_MASK: tl.constexpr,
    MASK_ROW: tl.constexpr,  # the mask does not vary over the queries (query stride 0)
    # fp32 products in full precision (no TF32): fp32 inputs, and every dtype under Triton's CPU interpreter, whose
    # half-precision dot products do not compute (kernels.rounding)
    UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    # keys per step: BLOCK_N holds all keys and values of the head in one tile (one pass; every target but AMD);
    # fewer loop over key blocks with a running maximum (the tile of the launch table's AMD rows: LAUNCH)
    BLOCK_K: tl.constexpr,
):
    # One program: BLOCK_M queries of one (batch, head) against all Sk keys and values of that head, in one tile
    # (BLOCK_K == BLOCK_N) or in blocks of BLOCK_K keys.
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    m_ok = offs_m < Sq
    n_ok = offs_n < Sk
    d_ok = offs_d < D
    rows = offs_m.to(tl.int64)
    q = tl.load(
        q_ptr + b * sq_b + h * sq_h + rows[:, None] * sq_s + offs_d[None, :],
        mask=m_ok[:, None] & d_ok[None, :],
        other=0.0,
    )
    if BLOCK_K == BLOCK_N:
        k = tl.load(
            k_ptr + b * sk_b + h * sk_h + offs_n[:, None] * sk_s + offs_d[None, :],
            mask=n_ok[:, None] & d_ok[None, :],
            other=0.0,
        )
        v = tl.load(
            v_ptr + b * sv_b + h * sv_h + offs_n[:, None] * sv_s + offs_d[None, :],
            mask=n_ok[:, None] & d_ok[None, :],
            other=0.0,
        )
        if UPCAST:
            q, k, v = q.to(tl.float32), k.to(tl.float32), v.to(tl.float32)
            s = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        # the softmax scale times log2(e): the softmax in base 2.  The cast matters under torch.compile: Inductor
        # passes a Python float as an fp64 argument, which would make the score tile, the mask add and exp2 double
        # precision (3.4x slower on the H200: docs/perf/kernels-h200.md); Triton's own launcher passes fp32.
        s = s * tl.cast(qk_scale, tl.float32)
        if HAS_MASK:
            if MASK_ROW:  # one mask row for every query (LTX's [B, H, 1, Sk]): load it once, add it to every row
                bias = tl.load(mask_ptr + b * sm_b + h * sm_h + offs_n, mask=n_ok, other=0.0)
                s = s + (bias.to(tl.float32) * 1.4426950408889634)[None, :]
            else:
                bias = tl.load(
                    mask_ptr + b * sm_b + h * sm_h + rows[:, None] * sm_s + offs_n[None, :],
                    mask=m_ok[:, None] & n_ok[None, :],
                    other=0.0,
                )
                s = s + bias.to(tl.float32) * 1.4426950408889634
        s = tl.where(n_ok[None, :], s, float("-inf"))
        row_max = tl.max(s, axis=1)
        p = tl.exp2(s - row_max[:, None])
        denom = tl.sum(p, axis=1)
        if UPCAST:
            # the probabilities rounded to the inputs' dtype, as the half-precision product below does on a GPU
            o = tl.dot(round_to(p, out_ptr.dtype.element_ty).to(tl.float32), v, input_precision="ieee")
        else:
            o = tl.dot(p.to(v.dtype), v)
        o = o / denom[:, None]
    else:
        # Online softmax over key blocks: only BLOCK_K keys and values are held at a time (on AMD every warp holds
        # the whole key and value operand tiles of its products in registers).  A row's running maximum m_i and sum
        # l_i rescale what came before; m_ref keeps exp2 finite while a row has seen only -inf scores.
        if UPCAST:
            q = q.to(tl.float32)
        offs_k = tl.arange(0, BLOCK_K)
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
        # one stage: pipelining the loads (the AMD backend's default of 2) holds two blocks of keys and values and
        # spilled (383 VGPRs in 64-key steps at head dim 128 on gfx1201, docs/perf/amd-isa.md)
        for start in tl.range(0, Sk, BLOCK_K, num_stages=1):
            cols = start + offs_k
            c_ok = cols < Sk
            k = tl.load(
                k_ptr + b * sk_b + h * sk_h + cols[:, None] * sk_s + offs_d[None, :],
                mask=c_ok[:, None] & d_ok[None, :],
                other=0.0,
            )
            v = tl.load(
                v_ptr + b * sv_b + h * sv_h + cols[:, None] * sv_s + offs_d[None, :],
                mask=c_ok[:, None] & d_ok[None, :],
                other=0.0,
            )
            if UPCAST:
                k, v = k.to(tl.float32), v.to(tl.float32)
                s = tl.dot(q, tl.trans(k), input_precision="ieee")
            else:
                s = tl.dot(q, tl.trans(k))
            s = s * tl.cast(qk_scale, tl.float32)
            if HAS_MASK:
                if MASK_ROW:
                    bias = tl.load(mask_ptr + b * sm_b + h * sm_h + cols, mask=c_ok, other=0.0)
                    s = s + (bias.to(tl.float32) * 1.4426950408889634)[None, :]
                else:
                    bias = tl.load(
                        mask_ptr + b * sm_b + h * sm_h + rows[:, None] * sm_s + cols[None, :],
                        mask=m_ok[:, None] & c_ok[None, :],
                        other=0.0,
                    )
                    s = s + bias.to(tl.float32) * 1.4426950408889634
            s = tl.where(c_ok[None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp2(m_i - m_ref)
            p = tl.exp2(s - m_ref[:, None])
            l_i = l_i * alpha + tl.sum(p, axis=1)
            acc = acc * alpha[:, None]
            if UPCAST:
                acc += tl.dot(round_to(p, out_ptr.dtype.element_ty).to(tl.float32), v, input_precision="ieee")
            else:
                acc = tl.dot(p.to(v.dtype), v, acc)
            m_i = m_new
        o = acc / l_i[:, None]
    tl.store(
        out_ptr + b * so_b + h * so_h + rows[:, None] * so_s + offs_d[None, :],
        o.to(out_ptr.dtype.element_ty),
        mask=m_ok[:, None] & d_ok[None, :],
    )


# --------------------------------------------------------------------------------------------------------------
# Validation


def _check(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None, scale: float | None
) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_float(name, t)
        check_device(name, t)
        if t.dim() != 4:
            raise ValueError(f"{name} must be [B, S, H, D] (diffusers' attention layout); got shape {tuple(t.shape)}")
        if t.device != query.device:
            raise ValueError(f"{name} is on {t.device} but query is on {query.device}; expected the same device")
    if not (query.dtype == key.dtype == value.dtype):
        raise TypeError(f"query, key and value must share one dtype; got {query.dtype}, {key.dtype}, {value.dtype}")
    b, sq, h, d = query.shape
    if key.shape != value.shape:
        raise ValueError(f"key {tuple(key.shape)} and value {tuple(value.shape)} must have the same shape")
    if (key.shape[0], key.shape[2], key.shape[3]) != (b, h, d):
        raise ValueError(
            f"key/value {tuple(key.shape)} must be [B, Sk, H, D] with query's B={b}, H={h}, D={d} "
            f"(query {tuple(query.shape)})"
        )
    if not 1 <= key.shape[1] <= MAX_KEYS:
        raise ValueError(
            f"key/value hold {key.shape[1]} keys; this kernel takes 1 to {MAX_KEYS} (the whole key "
            f"sequence in one tile)"
        )
    if d > MAX_HEAD_DIM:
        raise ValueError(f"head dim {d} is larger than {MAX_HEAD_DIM}")
    if scale is not None and not (isinstance(scale, (int, float)) and math.isfinite(scale)):
        raise ValueError(f"scale must be a finite number or None; got {scale!r}")
    if attn_mask is not None:
        if not isinstance(attn_mask, torch.Tensor):
            raise TypeError(f"attn_mask must be a tensor or None, got {type(attn_mask).__name__}")
        if attn_mask.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise TypeError(
                f"attn_mask must be an additive float mask (float32, bfloat16 or float16); got {attn_mask.dtype}"
            )
        if attn_mask.device != query.device:
            raise ValueError(f"attn_mask is on {attn_mask.device} but query is on {query.device}")
        try:
            torch.broadcast_shapes(attn_mask.shape, (b, h, sq, key.shape[1]))
            ok = attn_mask.dim() <= 4
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(
                f"attn_mask {tuple(attn_mask.shape)} does not broadcast to [B, H, Sq, Sk] = {[b, h, sq, key.shape[1]]}"
            )


def _mask_strides(mask: torch.Tensor | None, shape4: tuple[int, int, int, int]) -> tuple[torch.Tensor | None, tuple]:
    """The mask as a 4-D view broadcast to ``[B, H, Sq, Sk]`` with a unit-stride last dim, and its (batch, head,
    query) strides (0 where broadcast)."""
    if mask is None:
        return None, (0, 0, 0)
    full = mask.expand(shape4)
    if full.stride(-1) != 1:
        full = full.contiguous()
    return full, (full.stride(0), full.stride(1), full.stride(2))


# --------------------------------------------------------------------------------------------------------------
# Launch


@dataclass(frozen=True)
class AttnLaunch(LaunchRow):
    """cross_attention's row of its launch table.  ``tile``: the key tiles, in keys x head dims, of
    :func:`keys_per_step`: the largest it takes in one pass, and one step of its loop over key blocks beyond that;
    (0, 0): always one pass."""

    tile: tuple[int, int] = (0, 0)


# On AMD at most 128 keys x 64 head dims in one pass (LTX-Video's tile), larger tiles in steps of 64 x 64: each warp
# holds its whole key and value operand tiles in registers, and head dim 128 or 256 keys in one pass spilled
# (keys_per_step; docs/perf/amd-isa.md).  Compiled for these targets, not measured on an AMD GPU.
_AMD_TILE = AttnLaunch(tile=(128 * 64, 64 * 64), source="docs/perf/amd-isa.md (compiled, not run)")
LAUNCH = LaunchTable(
    "cross_attention",
    AttnLaunch(),
    {"gfx950": _AMD_TILE, "gfx942": _AMD_TILE, "gfx1201": _AMD_TILE, "gfx1100": _AMD_TILE},
)


def _launch(
    outs: tuple[torch.Tensor],
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None,
    scale: float | None,
    *,
    traced: bool,
    config: AttnConfig | None = None,
) -> None:
    (out,) = outs
    if out.numel() == 0:
        return
    b, sq, h, d = query.shape
    sk = key.shape[1]
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (query, key, value))
    mask, mask_strides = _mask_strides(attn_mask, (b, h, sq, sk))
    block_n = max(16, next_pow2(sk))
    block_d = max(16, next_pow2(d))
    block_k = keys_per_step(block_n, block_d, LAUNCH.for_device(query.device).tile)
    cfg = config or attn_config(block_k, block_d)
    if cfg.block_k:
        block_k = min(block_n, cfg.block_k)
    elif config is None:
        fitted = keys_in_shared_memory(block_k, block_d, cfg.block_m, query.dtype, shared_memory_limit(query.device))
        if fitted != block_k:
            block_k, cfg = fitted, attn_config(fitted, block_d)
    softmax_scale = (1.0 / math.sqrt(d)) if scale is None else float(scale)
    launcher(_cross_attention_kernel, traced)[(cdiv(sq, cfg.block_m), b * h)](
        q,
        k,
        v,
        q if mask is None else mask,
        out,
        sq,
        sk,
        h,
        d,
        softmax_scale * LOG2E,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        *mask_strides,
        out.stride(0),
        out.stride(1),
        out.stride(2),
        HAS_MASK=mask is not None,
        MASK_ROW=mask_strides[2] == 0,
        UPCAST=query.dtype == torch.float32 or interpreting(),
        BLOCK_M=cfg.block_m,
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        BLOCK_K=block_k,
        num_warps=cfg.num_warps,
    )


def _check_out(outs, query, *_) -> None:
    check_out(outs[0], query.shape, query.dtype, query.device, unit_last=True)


_CROSS_ATTENTION = PublicKernel(
    "cross_attention",
    check=_check,
    new_outs=lambda query, *_: (torch.empty(query.shape, dtype=query.dtype, device=query.device),),
    launch=_launch,
    check_out=_check_out,
)


# --------------------------------------------------------------------------------------------------------------
# Public API


def cross_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """``softmax(query @ key.T * scale + attn_mask) @ value`` per batch and head, for up to :data:`MAX_KEYS` keys.

    query ``[B, Sq, H, D]``, key and value ``[B, Sk, H, D]`` (diffusers' attention layout; any strides with a
    unit-stride last dim), one float dtype; ``attn_mask`` an additive float mask broadcasting to
    ``[B, H, Sq, Sk]`` or None; ``scale`` defaults to ``D ** -0.5``.  Returns a new contiguous ``[B, Sq, H, D]``.
    """
    return _CROSS_ATTENTION(query, key, value, attn_mask, scale)


def cross_attention_into(
    out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
    *,
    _config: AttnConfig | None = None,
) -> torch.Tensor:
    """:func:`cross_attention` written into ``out`` (query's shape and dtype, unit-stride last dim);
    ``_config`` overrides the launch knobs (tuning)."""
    return _CROSS_ATTENTION.into(out, (query, key, value, attn_mask, scale), _config)
