"""GELU (tanh approximation) and GEGLU kernels.

* ``gelu_tanh(x)`` = ``F.gelu(x, approximate="tanh")``: ``0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3)))`` in
  fp32, one rounding.  The kernel uses the identity ``0.5*(1 + tanh(a)) = 1/(1 + exp(-2a))``, i.e.
  ``x / (1 + exp(-2a))``: one exp, no tanh (``tl.math.tanh``/libdevice are not portable to ROCm), and it stays
  finite for any finite x (exp overflowing to inf gives x/inf = -0, as torch's 0.5*x*(1-1) does).
* ``geglu(x)`` = ``F.gelu(x[..., :H], approximate="tanh") * x[..., H:]`` for ``x [..., 2H]`` (gate = first
  half, as liger-kernel's ``LigerGELUMulFunction(gate, value)`` takes them; diffusers' GEGLU module gates with the
  second half).  It rounds where that eager
  expression rounds: the GELU result to x's dtype, then the product.  Only ``approximate="tanh"`` is offered:
  ``tl.erf`` is not known to lower on every ROCm Triton, so "none" (erf) raises.

Both are purely elementwise: a program covers a [BLOCK_M, BLOCK_N] tile of the output, so rows of any width
work (no block has to cover a whole row).  A contiguous x is processed as one flat row; other strided inputs are
addressed through a 2-D view (copied only when the leading dims cannot be viewed as one).

Like every public kernel function here, a plain eager call launches directly (a repeated geometry replays its
launch plan); under torch.compile, for tensor subclasses, or when autograd must record the call, it goes through the
``kernelfleet::`` op (:class:`kernels.launch.PublicKernel`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from kernels.arch import for_arch, launch_arch
from kernels.checks import check_device, check_float, check_out
from kernels.launch import PublicKernel, cdiv, launcher, next_pow2
from kernels.launch_table import LaunchRow, LaunchTable
from kernels.rounding import round_to

APPROXIMATIONS = ("tanh",)


class ElementwiseConfig(NamedTuple):
    """Per-launch knobs: the output tile of one program and its warps."""

    block_m: int
    block_n: int
    num_warps: int


@dataclass(frozen=True)
class ElementwiseLaunch(LaunchRow):
    """gelu_tanh's or geglu's row of its launch table: ``tiles``, (width bucket, (output elements a program
    covers, num_warps)) pairs (:func:`elementwise_bucket`) that take the place of the architecture's elementwise
    block and its warps there."""

    tiles: tuple[tuple[str, tuple[int, int]], ...] = ()


# Each kernel's own table; an architecture without a row takes its elementwise block.  H200 (docs/perf/tune-h200.md):
# gelu_tanh 2 warps a 2048-element block, 4.6 % faster per call over its grid than 4 (beyond noise at 2x6336x8192,
# slower nowhere); geglu's rule (2048 elements, 4 warps) confirmed at every width
GELU_LAUNCH = LaunchTable(
    "gelu_tanh",
    ElementwiseLaunch(),
    {
        "sm_90": ElementwiseLaunch(
            measured=True,
            source="docs/perf/tune-h200.md, runs 5, 6 (2026-12-02, NVIDIA H200, b8cd78b8bb)",
            tiles=(("flat", (2048, 2)),),
        )
    },
)
GEGLU_LAUNCH = LaunchTable(
    "geglu",
    ElementwiseLaunch(),
    {
        "sm_90": ElementwiseLaunch(
            measured=True,
            source="docs/perf/tune-h200.md, runs 5, 6 (2026-12-02, NVIDIA H200, b8cd78b8bb)",
            tiles=(("width=2048", (2048, 4)), ("width=4096", (2048, 4)), ("width=8192", (2048, 4))),
        )
    },
)


def elementwise_bucket(cols: int | None) -> str:
    """A launch's width bucket: ``flat`` (a contiguous tensor as one row) or the row's power of two."""
    return "flat" if cols is None else f"width={next_pow2(cols)}"


def elementwise_config(cols: int | None, device: torch.device | None = None, gated: bool = False) -> ElementwiseConfig:
    """A tile of the architecture's elementwise block (2048 on Hopper), or of the kernel's table's block at this
    width: as wide as a row of ``cols`` allows, or one flat stretch (``cols=None``: a contiguous tensor seen as one
    row).  The row count never enters, so a dynamic leading dim under torch.compile stays dynamic."""
    return _elementwise_config(cols, launch_arch(device), gated)


def _tile(cols: int | None, block: int, num_warps: int) -> ElementwiseConfig:
    block_n = block if cols is None else min(next_pow2(cols), block)
    return ElementwiseConfig(max(1, block // block_n), block_n, num_warps)


@functools.lru_cache(maxsize=256)
def _elementwise_config(cols: int | None, arch: str, gated: bool = False) -> ElementwiseConfig:
    tiled = dict((GEGLU_LAUNCH if gated else GELU_LAUNCH).for_arch(arch).tiles).get(elementwise_bucket(cols))
    if tiled is not None:
        return _tile(cols, *tiled)
    tile = for_arch(arch).elementwise_block
    block_n = tile if cols is None else min(next_pow2(cols), tile)
    block_m = max(1, tile // block_n)
    num_warps = max(1, min(8, (block_m * block_n) // 512))
    return ElementwiseConfig(block_m, block_n, num_warps)


@triton.jit
def _gelu_tanh_f32(x):
    """GELU with the tanh approximation, fp32 in and out, through exp only."""
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) * (x + 0.044715 x^3)
    return x / (1.0 + tl.exp(-2.0 * inner))


@triton.jit
def _gelu_kernel(
    x_ptr,
    out_ptr,
    M,
    N,
    sxm,
    sxn,
    som,
    son,
    n_col_blocks,
    GATED: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Output tile [BLOCK_M, BLOCK_N]; for GATED the gate is column j of x and the value column j + N.
    pid = tl.program_id(0)
    m0 = (pid // n_col_blocks).to(tl.int64) * BLOCK_M
    n0 = (pid % n_col_blocks).to(tl.int64) * BLOCK_N
    lm = tl.arange(0, BLOCK_M)[:, None]
    ln = tl.arange(0, BLOCK_N)[None, :]
    mask = ((m0 + lm) < M) & ((n0 + ln) < N)
    x_tile = x_ptr + m0 * sxm + n0 * sxn + lm * sxm + ln * sxn
    out_ty = out_ptr.dtype.element_ty
    gate = tl.load(x_tile, mask=mask, other=0.0).to(tl.float32)
    if GATED:
        value = tl.load(x_tile + N * sxn, mask=mask, other=0.0).to(tl.float32)
        out = round_to(_gelu_tanh_f32(gate), out_ty).to(tl.float32) * value
    else:
        out = _gelu_tanh_f32(gate)
    tl.store(out_ptr + m0 * som + n0 * son + lm * som + ln * son, round_to(out, out_ty), mask=mask)


# --------------------------------------------------------------------------------------------------------------
# Launch


def _launch_2d(
    out2d: torch.Tensor,
    x2d: torch.Tensor,
    gated: bool,
    flat: bool,
    traced: bool,
    config: ElementwiseConfig | None = None,
) -> None:
    """Launch over [rows, cols] views (``flat``: one row holding a whole contiguous tensor)."""
    rows, cols = out2d.shape
    if out2d.numel() == 0:
        return
    # Compile-time sizes from the row width only, as plain ints (a traced SymInt is specialised).
    cfg = config or elementwise_config(None if flat else int(cols), x2d.device, gated)
    n_col_blocks = cdiv(cols, cfg.block_n)
    launcher(_gelu_kernel, traced)[(cdiv(rows, cfg.block_m) * n_col_blocks,)](
        x2d,
        out2d,
        rows,
        cols,
        x2d.stride(0),
        x2d.stride(1),
        out2d.stride(0),
        out2d.stride(1),
        n_col_blocks,
        GATED=gated,
        BLOCK_M=cfg.block_m,
        BLOCK_N=cfg.block_n,
        num_warps=cfg.num_warps,
    )


def _launch_gelu(
    outs: tuple[torch.Tensor], x: torch.Tensor, *, traced: bool, config: ElementwiseConfig | None = None
) -> None:
    """A contiguous x into a contiguous out as one flat row; otherwise x's rows (copied only when the leading dims
    cannot be viewed as one) into out's."""
    (out,) = outs
    if x.is_contiguous() and out.is_contiguous():
        _launch_2d(out.view(1, -1), x.view(1, -1), False, True, traced, config)
    else:
        x2d = x.reshape(_rows(x), x.shape[-1])
        _launch_2d(_rows_view(out, x.shape[-1]), x2d, False, False, traced, config)


def _launch_geglu(
    outs: tuple[torch.Tensor], x: torch.Tensor, *, traced: bool, config: ElementwiseConfig | None = None
) -> None:
    (out,) = outs
    width = x.shape[-1] // 2
    _launch_2d(_rows_view(out, width), x.reshape(_rows(x), x.shape[-1]), True, False, traced, config)


# --------------------------------------------------------------------------------------------------------------
# Validation


def _validate_gelu(x: torch.Tensor) -> None:
    check_float("x", x)
    check_device("x", x)


def _validate_geglu(x: torch.Tensor, approximate: str) -> None:
    check_float("x", x)
    check_device("x", x)
    if approximate not in APPROXIMATIONS:
        raise ValueError(
            f"approximate must be one of {APPROXIMATIONS}, got {approximate!r} (the erf form needs tl.erf, "
            f"which is not portable to every ROCm Triton)"
        )
    if x.dim() < 1 or x.shape[-1] % 2:
        raise ValueError(f"x must be [..., 2H] with an even last dim (gate, value); got shape {tuple(x.shape)}")


def _rows(t: torch.Tensor) -> int:
    """The number of rows of ``t`` seen as [rows, last dim] (well defined for empty tensors too)."""
    return math.prod(t.shape[:-1])


def _rows_view(out: torch.Tensor, width: int) -> torch.Tensor:
    try:
        return out.view(_rows(out), width)
    except RuntimeError:
        raise ValueError(f"out (strides {out.stride()}) must be viewable as [rows, {width}]") from None


def _geglu_shape(x: torch.Tensor) -> tuple:
    return (*x.shape[:-1], x.shape[-1] // 2)


_GELU_TANH = PublicKernel(
    "gelu_tanh",
    check=_validate_gelu,
    new_outs=lambda x: (torch.empty(x.shape, dtype=x.dtype, device=x.device),),
    launch=_launch_gelu,
    check_out=lambda outs, x: check_out(outs[0], x.shape, x.dtype, x.device),
)
_GEGLU = PublicKernel(
    "geglu",
    check=_validate_geglu,
    prepare=lambda x, approximate: (x,),  # "tanh", the only approximation, is what the kernel computes
    new_outs=lambda x: (torch.empty(_geglu_shape(x), dtype=x.dtype, device=x.device),),
    launch=_launch_geglu,
    check_out=lambda outs, x: check_out(outs[0], _geglu_shape(x), x.dtype, x.device),
)


# --------------------------------------------------------------------------------------------------------------
# Public API


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """``F.gelu(x, approximate="tanh")`` (fp32 math, one rounding); any shape and strides."""
    return _GELU_TANH(x)


def geglu(x: torch.Tensor, approximate: str = "tanh") -> torch.Tensor:
    """``F.gelu(x[..., :H], approximate="tanh") * x[..., H:]`` for x [..., 2H] -> [..., H]."""
    return _GEGLU(x, approximate)


def gelu_tanh_into(out: torch.Tensor, x: torch.Tensor, *, _config: ElementwiseConfig | None = None) -> torch.Tensor:
    """gelu_tanh writing into ``out`` (x's shape, viewable as 2-D); ``_config`` overrides the launch knobs."""
    return _GELU_TANH.into(out, (x,), _config)


def geglu_into(
    out: torch.Tensor, x: torch.Tensor, approximate: str = "tanh", *, _config: ElementwiseConfig | None = None
) -> torch.Tensor:
    """geglu writing into ``out`` ([..., H], viewable as 2-D); ``_config`` overrides the launch knobs."""
    return _GEGLU.into(out, (x, approximate), _config)


# --------------------------------------------------------------------------------------------------------------
# Tuning: the knobs a tuning run may change (kernels.tune)
TUNE_BLOCKS = (1024, 2048, 4096, 8192)  # elements of the output one program covers
TUNE_PER_LANE = (4, 32)


def elementwise_tune(launch, gated: bool):
    """GELU/GEGLU's :class:`kernels.tune.Tune`: ``block`` (output elements a program covers, a tile as wide as the
    row allows: :func:`elementwise_config`'s shape) and ``num_warps`` (each lane 4 to 32 elements).  ``gelu_tanh``
    of a contiguous tensor runs as one flat row, so its tile is one row of ``block``."""
    from kernels.tune import Tune, warps_for_elements

    def cols(shape):
        return None if not gated else int(shape[-1])  # the registry's gelu_tanh inputs are contiguous: flat

    def candidates(shape, arch):
        return [
            {"block": block, "num_warps": warps}
            for block in TUNE_BLOCKS
            for warps in warps_for_elements(block, arch, TUNE_PER_LANE)
        ]

    def current(shape, arch):
        cfg = _elementwise_config(cols(shape), arch, gated)
        return {"block": cfg.block_m * cfg.block_n, "num_warps": cfg.num_warps}

    def with_choices(row, choices):
        tiles = dict(row.tiles)
        for b, c in choices.items():
            tiles[b] = (int(c["block"]), int(c["num_warps"]))
        return dataclasses.replace(row, tiles=tuple(sorted(tiles.items())))

    return Tune(
        knobs=("block", "num_warps"),
        candidates=candidates,
        current=current,
        config=lambda c, shape: _tile(cols(shape), int(c["block"]), int(c["num_warps"])),
        bucket=lambda shape: elementwise_bucket(cols(shape)),
        launch=launch,
        description="output elements per program and warps",
        table=GEGLU_LAUNCH if gated else GELU_LAUNCH,
        with_choices=with_choices,
    )
