"""Rotary position embedding (RoPE) kernels: interleaved pairs (LTX-Video, FLUX) and rotate-half (Llama family).

Two conventions, one Triton kernel (a constexpr picks the pairing):

* ``rope_interleaved(x, cos, sin)`` rotates the pairs ``(x[2i], x[2i+1])``.  It mirrors diffusers'
  ``apply_rotary_emb`` (LTX ``transformer_ltx.py``; FLUX ``embeddings.py`` with ``use_real_unbind_dim=-1``)::

      x_rot = stack([-x[1::2], x[0::2]], -1).flatten()      # (-x1, x0, -x3, x2, ...)
      out   = (x.float() * cos + x_rot.float() * sin).to(x.dtype)

  i.e. ``out[2i] = x[2i]*cos[2i] - x[2i+1]*sin[2i]`` and ``out[2i+1] = x[2i+1]*cos[2i+1] + x[2i]*sin[2i+1]``, in
  fp32 with one rounding at the end.  The full cos/sin rows are read (LTX's repeat_interleave(2) tables have
  ``cos[2i] == cos[2i+1]``, but any table gives the model's result).

* ``rope_rotate_half(x, cos, sin)`` is ``x*cos + rotate_half(x)*sin`` with ``rotate_half(x) = cat(-x[D/2:], x[:D/2])``
  (transformers' ``apply_rotary_pos_emb``).  The dtype of cos/sin picks the numerics: cos/sin in ``x.dtype``
  (what ``LlamaRotaryEmbedding`` returns) reproduces transformers exactly, rounding to ``x.dtype`` after each
  product and after the sum as torch's bf16/fp16 ops do; fp32 cos/sin with a bf16/fp16 ``x`` computes in fp32
  and rounds once, as the interleaved convention does.

Layouts.  ``x`` is ``[B, S, C]`` (LTX applies RoPE before the head split; one "head" of width C) or 4-D,
``[B, S, H, D]`` or ``[B, H, S, D]``.  ``cos``/``sin`` are ``[S, D]`` (shared by the batch: read with stride 0) or
``[B, S, D]`` / ``[1, S, D]`` (per batch), and always broadcast over heads.  A 4-D ``x`` is told apart by which
of its dims 1 and 2 equals the sequence length ``cos.shape[-2]``; when both do (H == S) the layout is ambiguous
and ``layout="bshd"`` or ``layout="bhsd"`` must be passed.  Batch, sequence and head strides are addressed
directly (a stride-0 batch for shared tables); a tensor whose last dim is not unit-stride is copied first.  The
output has the layout of ``x`` when ``x`` is dense, else it is contiguous.  A plain eager call launches directly;
under torch.compile, for tensor subclasses, or when autograd must record the call, it goes through the
``kernelfleet::`` op (:class:`kernels.launch.PublicKernel`).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from kernels.arch import for_arch, launch_arch
from kernels.checks import check_device, check_float, check_out
from kernels.launch import PublicKernel, cdiv, launcher, next_pow2, out_like, table_strides, unit_last
from kernels.launch_table import LaunchRow, LaunchTable
from kernels.rounding import fusion_options, round_before_add, round_code, round_to

LAYOUTS = ("bshd", "bhsd")

# Elements of x one program handles (rows of several sequence positions and heads when rows are narrow).  H200
# (docs/perf/kernels-h200.md, launch choices): with 2048 instead of 4096, interleaved rows (one row, 8
# warps) were 1-7 % faster launch-free at all three shapes swept; rotate-half (two 1024-element halves, 4 warps)
# came within 0-7 % of each shape's best config per call, where 4096 was 1-19 % off (better at 3 of 5 shapes, 1-2 %
# worse at 2).  Warps are row_num_warps of the elements per load; AMD takes the same rule, unmeasured.
_TILE_ELEMENTS = 2048


class RopeConfig(NamedTuple):
    """Per-launch knobs: sequence positions and heads per program, and warps per program."""

    block_s: int
    block_h: int
    num_warps: int


def rope_config(heads: int, width: int, device: torch.device | None = None, interleaved: bool = True) -> RopeConfig:
    """The launch knobs for a block of ``width`` per head (the pow2 block over the head dim, or over half of it for
    rotate-half, which loads each half separately).

    Several heads and sequence positions share a program until it holds about ``_TILE_ELEMENTS`` elements of x;
    the cos/sin row of a position is then loaded once for all its heads.  Only the head count and width enter
    (never the sequence length), so torch.compile with a dynamic sequence length does not specialise on it.
    """
    return _rope_config(heads, width, launch_arch(device), interleaved)


@functools.lru_cache(maxsize=256)
def _rope_config(heads: int, width: int, arch: str, interleaved: bool) -> RopeConfig:
    table = ROPE_LAUNCH if interleaved else ROTATE_HALF_LAUNCH
    tiled = dict(table.for_arch(arch).tiles).get(rope_bucket(heads, width, interleaved))
    if tiled is not None:
        return RopeConfig(*tiled)
    per_load = _TILE_ELEMENTS if interleaved else _TILE_ELEMENTS // 2
    block_h = min(next_pow2(heads), max(1, per_load // width))
    block_s = max(1, per_load // (width * block_h))
    return RopeConfig(block_s, block_h, for_arch(arch).warps_for(block_s * block_h * width))


def rope_bucket(heads: int, block_d: int, interleaved: bool) -> str:
    """The width bucket of a launch (a tuning run's key, and a table's ``tiles`` key): the head dim's block, and
    for ``[B, S, H, D]`` tensors the heads' power of two."""
    return f"block={block_d}" if interleaved and heads == 1 else f"block={block_d},heads={next_pow2(heads)}"


@dataclass(frozen=True)
class RopeLaunch(LaunchRow):
    """A RoPE kernel's row of its launch table: ``tiles``, (width bucket, (block_s, block_h, num_warps)) pairs
    (:func:`rope_bucket`) that take the place of the rule's tile (:func:`rope_config`) there."""

    tiles: tuple[tuple[str, tuple[int, int, int]], ...] = ()


@dataclass(frozen=True)
class RotateHalfLaunch(RopeLaunch):
    """rope_rotate_half's row of its launch table.  ``half_math``: with tables in x's half dtype (transformers'
    per-op rounding), multiply and add in the half dtype itself, one correctly rounded op each, instead of in fp32
    with a cast per op; only where a GPU run compared the result with PyTorch's bit for bit and timed it."""

    half_math: bool = False


# rope_interleaved's own table; an architecture without a row takes the rule.  H200 (docs/perf/tune-h200.md): the
# rule's tile confirmed (no candidate faster beyond noise at any grid shape)
ROPE_LAUNCH = LaunchTable(
    "rope",
    RopeLaunch(),
    {
        "sm_90": RopeLaunch(
            measured=True,
            source="docs/perf/tune-h200.md, runs 2, 4 (2026-12-02, NVIDIA H200, b8cd78b8bb)",
            tiles=(("block=2048", (1, 1, 8)),),
        )
    },
)


ROTATE_HALF_LAUNCH = LaunchTable(
    "rope_rotate_half",
    RotateHalfLaunch(),
    {
        # H200 (docs/perf/kernels-h200.md, RoPE): with bf16 tables equal to transformers' bit for bit at the five
        # grid shapes, 2-5 % faster per call at 69-105 MB than with a cast per op
        "sm_90": RotateHalfLaunch(
            measured=True,
            source="docs/perf/tune-h200.md, runs 2, 4 (2026-12-02, NVIDIA H200, b8cd78b8bb)",
            tiles=(
                ("block=32,heads=16", (2, 16, 4)),
                ("block=32,heads=32", (1, 32, 4)),
                ("block=64,heads=16", (1, 16, 4)),
            ),
            half_math=True,
        ),
    },
)


@triton.jit
def _rope_kernel(
    x_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    S,
    H,
    D,
    sxb,
    sxs,
    sxh,
    sob,
    sos,
    soh,
    scb,
    scs,
    ssb,
    sss,
    INTERLEAVED: tl.constexpr,
    # rotate-half only: 0, or the rounding code of out's dtype (kernels.rounding.round_code) to round each product
    # and the sum as transformers' separate ops do; in integer arithmetic, which fp fusion cannot contract
    ROUND_EACH: tl.constexpr,
    BLOCK_S: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
    # with ROUND_EACH: round the products in integer arithmetic (a traced launch, fp fusion on) or by casts (a
    # direct launch, fp fusion off; the integer path made the kernel ALU-bound at half the copy bandwidth)
    INT_ROUND: tl.constexpr,
    # with ROUND_EACH in a direct launch (fp fusion off) where the architecture's entry allows it
    # (kernels.arch.ArchLaunch.native_half_math): multiply and add in x's half dtype, each op rounded once
    HALF_MATH: tl.constexpr,
):
    # One program: BLOCK_S sequence positions x BLOCK_H heads of one batch element; the cos/sin tile is
    # [BLOCK_S, 1, BLOCK_D] and broadcasts over the heads.  The last dim of every tensor is unit-stride.
    pid = tl.program_id(0)
    n_h_blocks = tl.cdiv(H, BLOCK_H)
    n_s_blocks = tl.cdiv(S, BLOCK_S)
    hb = pid % n_h_blocks
    rest = pid // n_h_blocks
    sb = rest % n_s_blocks
    b = (rest // n_s_blocks).to(tl.int64)
    s0 = (sb * BLOCK_S).to(tl.int64)
    h0 = (hb * BLOCK_H).to(tl.int64)

    ls = tl.arange(0, BLOCK_S)[:, None, None]
    lh = tl.arange(0, BLOCK_H)[None, :, None]
    d = tl.arange(0, BLOCK_D)[None, None, :]
    x_base = x_ptr + b * sxb + s0 * sxs + h0 * sxh
    o_base = out_ptr + b * sob + s0 * sos + h0 * soh
    c_base = cos_ptr + b * scb + s0 * scs
    n_base = sin_ptr + b * ssb + s0 * sss
    row_ok = ((s0 + ls) < S) & ((h0 + lh) < H)
    x_off = ls * sxs + lh * sxh
    o_off = ls * sos + lh * soh
    out_ty = out_ptr.dtype.element_ty

    if INTERLEAVED:
        # Whole rows, loaded contiguously; the partner of element 2i is 2i+1 (register shuffle, no re-read).
        mask = row_ok & (d < D)
        cmask = ((s0 + ls) < S) & (d < D)
        x = tl.load(x_base + x_off + d, mask=mask, other=0.0).to(tl.float32)
        c = tl.load(c_base + ls * scs + d, mask=cmask, other=0.0).to(tl.float32)
        s = tl.load(n_base + ls * sss + d, mask=cmask, other=0.0).to(tl.float32)
        pairs = tl.reshape(x, [BLOCK_S, BLOCK_H, BLOCK_D // 2, 2])
        x_even, x_odd = tl.split(pairs)
        x_rot = tl.reshape(tl.join(-x_odd, x_even), [BLOCK_S, BLOCK_H, BLOCK_D])
        out = x * c + x_rot * s
        tl.store(o_base + o_off + d, round_to(out, out_ty), mask=mask)
    else:
        # Rotate-half: BLOCK_D covers half the head dim; element j pairs with j + D/2.
        half = D // 2
        mask = row_ok & (d < half)
        cmask = ((s0 + ls) < S) & (d < half)
        x1 = tl.load(x_base + x_off + d, mask=mask, other=0.0)
        x2 = tl.load(x_base + x_off + (d + half), mask=mask, other=0.0)
        c1 = tl.load(c_base + ls * scs + d, mask=cmask, other=0.0)
        c2 = tl.load(c_base + ls * scs + (d + half), mask=cmask, other=0.0)
        s1 = tl.load(n_base + ls * sss + d, mask=cmask, other=0.0)
        s2 = tl.load(n_base + ls * sss + (d + half), mask=cmask, other=0.0)
        if ROUND_EACH and HALF_MATH:
            # transformers' separate ops, each correctly rounded in the half dtype: the product of two half values
            # is exact in fp32 before torch rounds it, and the fp32 sum of two of them rounds to the same half
            # value as the exact sum, so one native op per step gives torch's result without conversions
            out1 = x1 * c1 - x2 * s1
            out2 = x2 * c2 + x1 * s2
        else:
            x1, x2 = x1.to(tl.float32), x2.to(tl.float32)
            c1, c2 = c1.to(tl.float32), c2.to(tl.float32)
            s1, s2 = s1.to(tl.float32), s2.to(tl.float32)
            if ROUND_EACH:
                out1 = round_before_add(x1 * c1, ROUND_EACH, INT_ROUND) + round_before_add(
                    -x2 * s1, ROUND_EACH, INT_ROUND
                )
                out2 = round_before_add(x2 * c2, ROUND_EACH, INT_ROUND) + round_before_add(
                    x1 * s2, ROUND_EACH, INT_ROUND
                )
            else:
                out1 = x1 * c1 - x2 * s1
                out2 = x2 * c2 + x1 * s2
            out1, out2 = round_to(out1, out_ty), round_to(out2, out_ty)
        tl.store(o_base + o_off + d, out1, mask=mask)
        tl.store(o_base + o_off + (d + half), out2, mask=mask)


# --------------------------------------------------------------------------------------------------------------
# Validation


def _resolve_seq_dim(x: torch.Tensor, cos: torch.Tensor, layout: str | None) -> int:
    """The dim of x that holds the sequence: 1 for [B,S,C] and [B,S,H,D], 2 for [B,H,S,D]."""
    seq = cos.shape[-2]
    if x.dim() == 3:
        if layout is not None:
            raise ValueError(f"layout={layout!r} is only for a 4-D x; a 3-D x is always [B, S, C]")
        return 1
    if layout is not None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS} or None, got {layout!r}")
        return 1 if layout == "bshd" else 2
    at1, at2 = x.shape[1] == seq, x.shape[2] == seq
    if at1 and at2:
        raise ValueError(
            f"x {tuple(x.shape)} is ambiguous: dims 1 and 2 both equal the sequence length {seq} of cos; "
            f"pass layout='bshd' or layout='bhsd'"
        )
    if at1:
        return 1
    if at2:
        return 2
    raise ValueError(
        f"cos/sin {tuple(cos.shape)} do not broadcast against x {tuple(x.shape)}: the sequence length "
        f"cos.shape[-2]={seq} must equal x.shape[1] ([B,S,H,D]) or x.shape[2] ([B,H,S,D])"
    )


def _validate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str | None) -> None:
    check_float("x", x)
    check_float("cos", cos)
    check_float("sin", sin)
    check_device("x", x)
    for name, t in (("cos", cos), ("sin", sin)):
        if t.device != x.device:
            raise ValueError(f"{name} is on {t.device} but x is on {x.device}; expected the same device")
    if x.dim() not in (3, 4):
        raise ValueError(f"x must be [B, S, C], [B, S, H, D] or [B, H, S, D]; got shape {tuple(x.shape)}")
    if cos.shape != sin.shape:
        raise ValueError(f"cos {tuple(cos.shape)} and sin {tuple(sin.shape)} must have the same shape")
    if cos.dtype != sin.dtype:
        raise TypeError(f"cos ({cos.dtype}) and sin ({sin.dtype}) must have the same dtype")
    if cos.dim() not in (2, 3):
        raise ValueError(f"cos/sin must be [S, D] or [B, S, D]; got shape {tuple(cos.shape)}")
    width = x.shape[-1]
    if width % 2:
        raise ValueError(f"x's last dim must be even (it holds pairs); got {width}")
    if cos.shape[-1] != width:
        raise ValueError(f"cos/sin last dim {cos.shape[-1]} must equal x's last dim {width}")
    if cos.dim() == 3 and cos.shape[0] not in (1, x.shape[0]):
        raise ValueError(
            f"cos/sin batch dim {cos.shape[0]} must be 1 or x's batch {x.shape[0]} (cos/sin {tuple(cos.shape)}, "
            f"x {tuple(x.shape)})"
        )
    seq_dim = _resolve_seq_dim(x, cos, layout)
    if x.shape[seq_dim] != cos.shape[-2]:
        raise ValueError(
            f"cos/sin {tuple(cos.shape)} do not broadcast against x {tuple(x.shape)}: sequence length "
            f"{cos.shape[-2]} != x.shape[{seq_dim}]={x.shape[seq_dim]}"
        )


# --------------------------------------------------------------------------------------------------------------
# Launch


def _x_strides(t: torch.Tensor, seq_dim: int) -> tuple[int, int, int, int, int, int]:
    """(B, S, H, stride_b, stride_s, stride_h) of x or out; a 3-D tensor is one head."""
    shape, st = t.shape, t.stride()
    if len(shape) == 3:
        return shape[0], shape[1], 1, st[0], st[1], 0
    if seq_dim == 1:
        return shape[0], shape[1], shape[2], st[0], st[1], st[2]
    return shape[0], shape[2], shape[1], st[0], st[2], st[1]


def _launch(
    out: torch.Tensor,
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    seq_dim: int,
    interleaved: bool,
    round_each: bool,
    traced: bool,
    config: RopeConfig | None,
) -> None:
    """Launch the kernel: through ``wrap_triton`` inside the op (``traced``), or directly (eager calls; outside an
    op, wrap_triton would dispatch through a slow higher-order op).  A tensor whose last dim is not unit-stride is
    copied first (:func:`kernels.launch.unit_last`); ``out`` must be unit-stride there.

    In eager calls fp fusion is off: a fused multiply-add rounds differently from the model's separate multiply
    and add (measured on an H200: with fusion 24% of fp32 and, for rotate-half, of bf16 outputs differed from
    eager by an ulp; without, none).
    """
    if x.numel() == 0:
        return
    x, cos, sin = unit_last(x), unit_last(cos), unit_last(sin)
    batch, seq, heads, sxb, sxs, sxh = _x_strides(x, seq_dim)
    _, _, _, sob, sos, soh = _x_strides(out, seq_dim)
    width = int(x.shape[-1])  # compile-time sizes as plain ints (a traced SymInt is specialised)
    block_d = next_pow2(width if interleaved else width // 2)
    cfg = config or rope_config(int(heads), block_d, x.device, interleaved)
    n_programs = batch * cdiv(seq, cfg.block_s) * cdiv(heads, cfg.block_h)
    # fp fusion off wherever the kernel launches as itself (every eager call); a launch traced by torch.compile
    # cannot carry the option through Inductor, which compiles with Triton's default (the interleaved convention
    # may then differ by an ulp; rotate-half's per-op rounding stays exact through INT_ROUND).
    options = fusion_options(traced)
    # native half-dtype ops only with fusion off: a traced launch could have a multiply and an add contracted
    half_math = not traced and round_each and ROTATE_HALF_LAUNCH.for_device(x.device).half_math
    launcher(_rope_kernel, traced)[(n_programs,)](
        x,
        cos,
        sin,
        out,
        seq,
        heads,
        width,
        sxb,
        sxs,
        sxh,
        sob,
        sos,
        soh,
        *table_strides(cos),
        *table_strides(sin),
        INTERLEAVED=interleaved,
        ROUND_EACH=round_code(x.dtype) if round_each else 0,
        BLOCK_S=cfg.block_s,
        BLOCK_H=cfg.block_h,
        BLOCK_D=block_d,
        HALF_MATH=half_math,
        num_warps=cfg.num_warps,
        **options,
    )


def _round_each(x: torch.Tensor, cos: torch.Tensor) -> bool:
    """rotate-half numerics: transformers' per-op rounding when cos/sin come in x's (half-precision) dtype."""
    return cos.dtype == x.dtype and x.dtype != torch.float32


def _check_table_dtype(x: torch.Tensor, cos: torch.Tensor) -> None:
    """rotate-half's tables: x's dtype (transformers' numerics) or float32 (fp32 math)."""
    if cos.dtype != x.dtype and cos.dtype != torch.float32:
        raise TypeError(
            f"cos/sin dtype {cos.dtype} must be x's dtype {x.dtype} (transformers' numerics) or float32 "
            f"(fp32 math, one rounding)"
        )


def _launch_interleaved(
    outs: tuple[torch.Tensor],
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    seq_dim: int,
    *,
    traced: bool,
    config: RopeConfig | None = None,
) -> None:
    _launch(outs[0], x, cos, sin, seq_dim, True, False, traced, config)


def _launch_rotate_half(
    outs: tuple[torch.Tensor],
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    seq_dim: int,
    round_each: bool,
    *,
    traced: bool,
    config: RopeConfig | None = None,
) -> None:
    _launch(outs[0], x, cos, sin, seq_dim, False, round_each, traced, config)


def _check_rotate_half(x, cos, sin, layout) -> None:
    _validate(x, cos, sin, layout)
    _check_table_dtype(x, cos)


def _check_out(outs, x, *_) -> None:
    check_out(outs[0], x.shape, x.dtype, x.device, unit_last=True)


_ROPE_INTERLEAVED = PublicKernel(
    "rope_interleaved",
    check=_validate,
    prepare=lambda x, cos, sin, layout: (x, cos, sin, _resolve_seq_dim(x, cos, layout)),
    new_outs=lambda x, *_: (out_like(x),),
    launch=_launch_interleaved,
    check_out=_check_out,
)
_ROPE_ROTATE_HALF = PublicKernel(
    "rope_rotate_half",
    check=_check_rotate_half,
    prepare=lambda x, cos, sin, layout: (x, cos, sin, _resolve_seq_dim(x, cos, layout), _round_each(x, cos)),
    new_outs=lambda x, *_: (out_like(x),),
    launch=_launch_rotate_half,
    check_out=_check_out,
)


# --------------------------------------------------------------------------------------------------------------
# Public API


def rope_interleaved(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, layout: str | None = None
) -> torch.Tensor:
    """RoPE on interleaved pairs, as diffusers' LTX/FLUX ``apply_rotary_emb`` (fp32 math, one rounding).

    x: [B, S, C], [B, S, H, D] or [B, H, S, D] (fp32/bf16/fp16, last dim even); cos, sin: [S, D] or [B, S, D]
    (any float dtype, fp32 in the models).  ``layout`` ("bshd"/"bhsd") only when a 4-D x has H == S.
    """
    return _ROPE_INTERLEAVED(x, cos, sin, layout)


def rope_rotate_half(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, layout: str | None = None
) -> torch.Tensor:
    """RoPE ``x*cos + rotate_half(x)*sin`` (transformers'/Llama's convention).

    x: [B, S, H, D] or [B, H, S, D] (or [B, S, D], one head); cos, sin: [S, D] or [B, S, D] in x's dtype
    (transformers' rounding) or fp32 (fp32 math, one rounding).
    """
    return _ROPE_ROTATE_HALF(x, cos, sin, layout)


def rope_interleaved_into(
    out: torch.Tensor,
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str | None = None,
    _config: RopeConfig | None = None,
) -> torch.Tensor:
    """rope_interleaved writing into ``out`` (any strides); ``_config`` overrides the launch knobs (tuning)."""
    return _ROPE_INTERLEAVED.into(out, (x, cos, sin, layout), _config)


def rope_rotate_half_into(
    out: torch.Tensor,
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str | None = None,
    _config: RopeConfig | None = None,
) -> torch.Tensor:
    """rope_rotate_half writing into ``out`` (any strides); ``_config`` overrides the launch knobs (tuning)."""
    return _ROPE_ROTATE_HALF.into(out, (x, cos, sin, layout), _config)


# --------------------------------------------------------------------------------------------------------------
# Tuning: the knobs a tuning run may change (kernels.tune)
TUNE_MAX_ELEMENTS = 4 * _TILE_ELEMENTS  # elements of x one program may hold in a candidate


def rope_tune(launch, interleaved: bool):
    """RoPE's :class:`kernels.tune.Tune`: ``block_s`` (sequence positions per program), ``block_h`` (heads per
    program) and ``num_warps``.  ``BLOCK_D`` (the head dim's power of two, or its half's for rotate-half) is never a
    knob.  A program holds all its heads' rows when they fit (``block_h`` = the heads' power of two, else as many
    as fit), and 2**k positions, from ``max(block, 1024)`` to :data:`TUNE_MAX_ELEMENTS` elements of x; warps leave
    each lane 4 to 32 elements (64 for one interleaved row).  The current choice is :func:`rope_config`'s rule."""
    from kernels.tune import Tune, pow2_range, warps_for_elements

    def geometry(shape):
        heads = 1 if len(shape) == 3 else int(shape[2])
        width = int(shape[-1])
        return heads, next_pow2(width if interleaved else width // 2)

    def candidates(shape, arch):
        heads, block_d = geometry(shape)
        per_row = block_d if interleaved else 2 * block_d  # elements of x a (position, head) row loads
        out = []
        for elements in pow2_range(max(per_row, 1024), max(per_row, TUNE_MAX_ELEMENTS)):
            rows = elements // per_row
            block_h = min(next_pow2(heads), rows)
            block_s = rows // block_h
            per_lane = (4, 64 if interleaved and rows == 1 else 32)
            for warps in warps_for_elements(elements, arch, per_lane):
                out.append({"block_s": block_s, "block_h": block_h, "num_warps": warps})
        return out

    def current(shape, arch):
        heads, block_d = geometry(shape)
        cfg = _rope_config(heads, block_d, arch, interleaved)
        return {"block_s": cfg.block_s, "block_h": cfg.block_h, "num_warps": cfg.num_warps}

    def bucket(shape):
        heads, block_d = geometry(shape)
        return rope_bucket(heads, block_d, interleaved)

    def with_choices(row, choices):
        tiles = dict(row.tiles)
        for b, c in choices.items():
            tiles[b] = (int(c["block_s"]), int(c["block_h"]), int(c["num_warps"]))
        return dataclasses.replace(row, tiles=tuple(sorted(tiles.items())))

    return Tune(
        knobs=("block_s", "block_h", "num_warps"),
        candidates=candidates,
        current=current,
        config=lambda c, shape: RopeConfig(int(c["block_s"]), int(c["block_h"]), int(c["num_warps"])),
        bucket=bucket,
        launch=launch,
        description="positions and heads per program, and warps (the head dim's block is never tuned)",
        table=ROPE_LAUNCH if interleaved else ROTATE_HALF_LAUNCH,
        with_choices=with_choices,
    )
