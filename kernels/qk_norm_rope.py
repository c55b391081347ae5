"""LTX-Video attn1's query/key chain in one pass: ``torch.nn.RMSNorm`` across heads, then interleaved RoPE.

The LTX processor (diffusers ``transformer_ltx.py``, ``LTXVideoAttnProcessor``) runs, for q and for k::

    q = attn.norm_q(q)                     # torch.nn.RMSNorm(2048, eps=1e-5), weight, over the full row
    q = apply_rotary_emb(q, (cos, sin))    # interleaved pairs, fp32 math

``torch.nn.RMSNorm`` computes ``(x_f32 * rsqrt(mean(x_f32**2) + eps)) * w_f32`` and rounds once to x's dtype;
``apply_rotary_emb`` then computes ``(y.float()*cos + y_rot.float()*sin)`` in fp32 from that rounded ``y`` and
rounds again.  This kernel rounds at exactly those two points.  One program normalises and rotates the same
row(s) of q and of k and reads each cos/sin row once for both.

Layout: q and k ``[B, S, C]`` (same shape, C even), weights ``[C]`` or None, cos/sin ``[S, C]`` (shared by the
batch) or ``[B, S, C]`` / ``[1, S, C]`` (LTX passes per-batch fp32 tables).  Batch and token strides are free
(e.g. q/k as views into a fused QKV output); a tensor whose channels are not unit-stride is copied first.

Row order: with per-batch tables, program i takes row i of the ``[B*S]`` rows (batch-major).  With tables shared
by the batch (``[S, C]``, ``[1, S, C]`` or a batch stride of 0, as the injected LTX-Video model passes them) the
rows go token-major instead: the B rows of one token are neighbours, so the table row that the first of them reads
from memory is still in L2 for the others.  The fp32 tables are as large as q and k together at LTX-Video's
sizes, so reading them once per token instead of once per row takes a quarter of the kernel's bytes away (B = 2).
Where the B rows of a token fill 2048-8192 elements (B a power of two), one program takes all of them and loads
the token's table row once (``TABLE_ONCE``; :func:`shared_table_config`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Optional

import torch
import triton
import triton.language as tl

from kernels.arch import for_arch, launch_arch, row_num_warps
from kernels.checks import check_device, check_float, check_out
from kernels.launch import PublicKernel, cdiv, launcher, next_pow2, out_like, table_strides, unit_last
from kernels.rounding import round_to


class QkNormRopeConfig(NamedTuple):
    """Per-launch knobs: rows (of q and of k) per program and warps per program."""

    block_rows: int
    num_warps: int


def qk_norm_rope_config(width: int, device: torch.device | None = None) -> QkNormRopeConfig:
    """One row per program for rows of 2048 and more; narrow rows are packed until a program holds ~2048.

    Only the width enters (never the row count), so a dynamic sequence length under torch.compile stays dynamic.
    """
    return _qk_norm_rope_config(width, launch_arch(device))


@functools.lru_cache(maxsize=256)
def _qk_norm_rope_config(width: int, arch: str) -> QkNormRopeConfig:
    block_c = next_pow2(width)
    block_rows = max(1, 2048 // block_c)
    return QkNormRopeConfig(block_rows, for_arch(arch).warps_for(block_rows * block_c))


def shared_table_config(batch: int, width: int, device: torch.device | None = None) -> QkNormRopeConfig:
    """Launch knobs with tables shared by the batch: one program per token, all B of its rows, where those fill
    2048-8192 elements and B is a power of two (the kernel then reads the token's table row once); else
    :func:`qk_norm_rope_config`."""
    block = batch * next_pow2(width)
    if batch >= 1 and batch & (batch - 1) == 0 and 2048 <= block <= 8192:
        return QkNormRopeConfig(batch, row_num_warps(block, device))
    return qk_norm_rope_config(width, device)


@triton.jit
def _norm_rope_rows(
    x, w, c, s, C, eps, HAS_WEIGHT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, out_ty: tl.constexpr
):
    """torch.nn.RMSNorm of fp32 rows ``x`` [BLOCK_R, BLOCK_C] rounded to out_ty, then interleaved RoPE in fp32."""
    rstd = tl.rsqrt((tl.sum(x * x, axis=1) / C + eps).to(tl.float32))
    y = x * rstd[:, None]
    if HAS_WEIGHT:
        y = y * w
    y = round_to(y, out_ty).to(tl.float32)
    y_even, y_odd = tl.split(tl.reshape(y, [BLOCK_R, BLOCK_C // 2, 2]))
    y_rot = tl.reshape(tl.join(-y_odd, y_even), [BLOCK_R, BLOCK_C])
    return round_to(y * c + y_rot * s, out_ty)


@triton.jit
def _qk_norm_rope_kernel(
    q_ptr,
    k_ptr,
    qw_ptr,
    kw_ptr,
    cos_ptr,
    sin_ptr,
    qo_ptr,
    ko_ptr,
    R,
    B,
    S,
    C,
    eps,
    sqb,
    sqs,
    skb,
    sks,
    sqob,
    sqos,
    skob,
    skos,
    scb,
    scs,
    ssb,
    sss,
    HAS_QW: tl.constexpr,
    HAS_KW: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
    TOKEN_MAJOR: tl.constexpr,
    TABLE_ONCE: tl.constexpr,
):
    # Rows are (batch, token) pairs addressed through (batch, token) strides; channels are unit-stride.  Token-major
    # order (tables shared by the batch): row = token * B + batch, so one token's rows run in neighbouring programs.
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    if TOKEN_MAJOR:
        b = (rows % B)[:, None]
        srow = (rows // B)[:, None]
    else:
        b = (rows // S)[:, None]
        srow = (rows % S)[:, None]
    cols = tl.arange(0, BLOCK_C)
    col = cols[None, :]
    mask = (rows < R)[:, None] & (col < C)

    # Issue every load up front: q, k and the shared cos/sin rows.
    q = tl.load(q_ptr + b * sqb + srow * sqs + col, mask=mask, other=0.0).to(tl.float32)
    k = tl.load(k_ptr + b * skb + srow * sks + col, mask=mask, other=0.0).to(tl.float32)
    if TABLE_ONCE:  # token-major with BLOCK_R == B: this program's rows are one token's, one table row for all
        tok = tl.program_id(0).to(tl.int64)
        c = tl.load(cos_ptr + tok * scs + cols, mask=cols < C, other=0.0).to(tl.float32)[None, :]
        s = tl.load(sin_ptr + tok * sss + cols, mask=cols < C, other=0.0).to(tl.float32)[None, :]
    else:
        c = tl.load(cos_ptr + b * scb + srow * scs + col, mask=mask, other=0.0).to(tl.float32)
        s = tl.load(sin_ptr + b * ssb + srow * sss + col, mask=mask, other=0.0).to(tl.float32)
    if HAS_QW:
        qw = tl.load(qw_ptr + cols, mask=cols < C, other=0.0).to(tl.float32)[None, :]
    else:
        qw = 1.0
    if HAS_KW:
        kw = tl.load(kw_ptr + cols, mask=cols < C, other=0.0).to(tl.float32)[None, :]
    else:
        kw = 1.0

    q_out = _norm_rope_rows(q, qw, c, s, C, eps, HAS_QW, BLOCK_R, BLOCK_C, qo_ptr.dtype.element_ty)
    tl.store(qo_ptr + b * sqob + srow * sqos + col, q_out, mask=mask)
    k_out = _norm_rope_rows(k, kw, c, s, C, eps, HAS_KW, BLOCK_R, BLOCK_C, ko_ptr.dtype.element_ty)
    tl.store(ko_ptr + b * skob + srow * skos + col, k_out, mask=mask)


# --------------------------------------------------------------------------------------------------------------
# Validation


def _validate(q, k, q_weight, k_weight, cos, sin, eps) -> None:
    check_float("q", q)
    check_float("k", k)
    check_float("cos", cos)
    check_float("sin", sin)
    check_device("q", q)
    if q.dim() != 3:
        raise ValueError(f"q must be [B, S, C] (LTX, before the head split); got shape {tuple(q.shape)}")
    if k.shape != q.shape:
        raise ValueError(f"k {tuple(k.shape)} must have q's shape {tuple(q.shape)}")
    if k.dtype != q.dtype:
        raise TypeError(f"k ({k.dtype}) must have q's dtype ({q.dtype})")
    width = q.shape[-1]
    if width % 2:
        raise ValueError(f"the last dim of q/k must be even (RoPE pairs); got {width}")
    for name, w in (("q_weight", q_weight), ("k_weight", k_weight)):
        if w is None:
            continue
        check_float(name, w)
        if w.shape != (width,):
            raise ValueError(f"{name} must be [C] = [{width}]; got shape {tuple(w.shape)}")
    for name, t in (("k", k), ("q_weight", q_weight), ("k_weight", k_weight), ("cos", cos), ("sin", sin)):
        if t is not None and t.device != q.device:
            raise ValueError(f"{name} is on {t.device} but q is on {q.device}; expected the same device")
    if cos.shape != sin.shape:
        raise ValueError(f"cos {tuple(cos.shape)} and sin {tuple(sin.shape)} must have the same shape")
    if cos.dtype != sin.dtype:
        raise TypeError(f"cos ({cos.dtype}) and sin ({sin.dtype}) must have the same dtype")
    batch, seq = q.shape[0], q.shape[1]
    fits = cos.shape[-2:] == (seq, width) and (cos.dim() == 2 or (cos.dim() == 3 and cos.shape[0] in (1, batch)))
    if not fits:
        raise ValueError(
            f"cos/sin {tuple(cos.shape)} do not broadcast against q {tuple(q.shape)}: expected [S, C] = "
            f"[{seq}, {width}] or [B, S, C] = [{batch}, {seq}, {width}] (or [1, {seq}, {width}])"
        )
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps >= 0.0:
        raise ValueError(f"eps must be a non-negative float, got {eps!r}")


# --------------------------------------------------------------------------------------------------------------
# Launch


def _row_strides(t: torch.Tensor) -> tuple[int, int]:
    st = t.stride()
    return st[0], st[1]


def _launch(
    outs: tuple[torch.Tensor, torch.Tensor],
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: Optional[torch.Tensor],
    k_weight: Optional[torch.Tensor],
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
    *,
    traced: bool,
    config: QkNormRopeConfig | None = None,
) -> None:
    """Launch through ``wrap_triton`` inside the op (``traced``), or directly (eager calls).  An input whose last
    dim is not unit-stride is copied first (:func:`kernels.launch.unit_last`).  In eager calls fp fusion is off, so
    the RoPE multiply and add round as the model's separate ops do (on an H200 this took bf16 mismatches against
    eager from 2e-5 to 3e-6, what remains being the row sum's order)."""
    q_out, k_out = outs
    if q.numel() == 0:
        return
    q, k, q_weight, k_weight, cos, sin = (unit_last(t) for t in (q, k, q_weight, k_weight, cos, sin))
    batch, seq, width = q.shape
    rows = batch * seq
    width = int(width)  # compile-time sizes as plain ints (a traced SymInt is specialised)
    cos_strides, sin_strides = table_strides(cos), table_strides(sin)
    token_major = cos_strides[0] == 0 and sin_strides[0] == 0
    static_batch = isinstance(batch, int)  # a traced SymInt batch keeps the row-per-program launch
    if config is not None:
        cfg = config
    elif token_major and static_batch:
        cfg = shared_table_config(batch, width, q.device)
    else:
        cfg = qk_norm_rope_config(width, q.device)
    # fp fusion off wherever the kernel launches as itself (every eager call); a launch traced by torch.compile
    # cannot carry the option through Inductor, which compiles with Triton's default (may differ by an ulp).
    options = {} if traced else {"enable_fp_fusion": False}
    launcher(_qk_norm_rope_kernel, traced)[(cdiv(rows, cfg.block_rows),)](
        q,
        k,
        q if q_weight is None else q_weight,
        k if k_weight is None else k_weight,
        cos,
        sin,
        q_out,
        k_out,
        rows,
        batch,
        seq,
        width,
        eps,
        *_row_strides(q),
        *_row_strides(k),
        *_row_strides(q_out),
        *_row_strides(k_out),
        *cos_strides,
        *sin_strides,
        HAS_QW=q_weight is not None,
        HAS_KW=k_weight is not None,
        BLOCK_R=cfg.block_rows,
        BLOCK_C=next_pow2(width),
        TOKEN_MAJOR=token_major,
        TABLE_ONCE=token_major and static_batch and cfg.block_rows == batch,
        num_warps=cfg.num_warps,
        **options,
    )


def _check_out(outs, q, k, *_) -> None:
    check_out(outs[0], q.shape, q.dtype, q.device, "out[0] (q_out)", unit_last=True)
    check_out(outs[1], k.shape, k.dtype, k.device, "out[1] (k_out)", unit_last=True)


_QK_NORM_ROPE = PublicKernel(
    "qk_norm_rope",
    check=_validate,
    prepare=lambda q, k, q_weight, k_weight, cos, sin, eps: (q, k, q_weight, k_weight, cos, sin, float(eps)),
    new_outs=lambda q, k, *_: (out_like(q), out_like(k)),
    launch=_launch,
    check_out=_check_out,
    outs=("q_out", "k_out"),
)


# --------------------------------------------------------------------------------------------------------------
# Public API


def qk_norm_rope(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float = 1e-5,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rope(rmsnorm(q) * q_weight), rope(rmsnorm(k) * k_weight)) with LTX's rounding; see the module doc."""
    return _QK_NORM_ROPE(q, k, q_weight, k_weight, cos, sin, eps)


def qk_norm_rope_into(
    out: tuple[torch.Tensor, torch.Tensor],
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float = 1e-5,
    *,
    _config: QkNormRopeConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """qk_norm_rope writing into ``out = (q_out, k_out)`` (unit-stride last dims); ``_config`` overrides the
    launch knobs (tuning)."""
    return _QK_NORM_ROPE.into(out, (q, k, q_weight, k_weight, cos, sin, eps), _config)
