"""What every row kernel shares: any tensor viewed as ``[B, S, D]`` rows addressed through its strides (so
non-contiguous inputs need no copy), the program's block of rows (:func:`row_block`, the kernels' prologue), the
launch knobs (rows per program, warps: :func:`row_launch_config`, from each kernel's launch table of
:class:`RowLaunch` rows) and the launch geometry (:func:`row_grid`).

The row kernels: :mod:`kernels.rmsnorm`, :mod:`kernels.adaln`, :mod:`kernels.residual_norm`,
:mod:`kernels.gated_residual`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
import triton
import triton.language as tl

from kernels.arch import for_arch, launch_arch
from kernels.launch import cdiv, next_pow2
from kernels.launch_table import LaunchRow, LaunchTable


@triton.jit
def row_offsets(pid, seq, ROWS: tl.constexpr):
    """The row indices a program owns and their (batch, token) coordinates in a ``[B, S, D]`` geometry.

    The division runs in int32 (rows < 2**31, checked by the wrappers: see :func:`check_row_count`); the
    coordinates are widened to int64 so that offsets into tensors of 2**31 elements and more do not overflow.
    """
    rows = pid * ROWS + tl.arange(0, ROWS)
    b = rows // seq
    s = rows - b * seq
    return rows, b.to(tl.int64), s.to(tl.int64)


@triton.jit
def row_ptrs(ptr, b, s, stride_b, stride_s, stride_d, cols):
    """Pointers to the ``[ROWS, BLOCK_D]`` block of a ``[B, S, D]`` tensor at rows (``b``, ``s``) (from
    :func:`row_offsets`) and columns ``cols``, through the tensor's strides."""
    return ptr + (b * stride_b + s * stride_s)[:, None] + cols[None, :] * stride_d


@triton.jit
def row_block(n_rows, seq, width, ROWS: tl.constexpr, BLOCK_D: tl.constexpr):
    """The prologue of every row kernel: this program's rows as (batch, token) coordinates ``b``, ``s`` (see
    :func:`row_offsets`), the columns ``cols`` of its ``[ROWS, BLOCK_D]`` block, which of them are in the row
    (``col_ok``) and the block's mask (rows in range and columns in the row)."""
    rows, b, s = row_offsets(tl.program_id(0), seq, ROWS)
    cols = tl.arange(0, BLOCK_D)
    col_ok = cols < width
    mask = (rows < n_rows)[:, None] & col_ok[None, :]
    return b, s, cols, col_ok, mask


# ----------------------------------------------------------------------------------------------------------------
# Launch knobs
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormLaunch:
    """Per-launch knobs of the row kernels: how many rows one program normalises, and its warps."""

    rows_per_program: int
    num_warps: int

    def __post_init__(self):
        for name in ("rows_per_program", "num_warps"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1 or (v & (v - 1)) != 0:
                raise ValueError(f"NormLaunch.{name} must be a power of two >= 1, got {v!r}")


@dataclass(frozen=True)
class RowLaunch(LaunchRow):
    """A row kernel's row of its launch table: ``warps``, (padded row width, num_warps) pairs that take the place
    of the architecture's rule (:meth:`kernels.arch.ArchLaunch.warps_for`) at those widths, and ``rows``, (padded
    row width, rows per program) pairs that take the place of the rows the rule packs into a program there (one
    from 2048 elements)."""

    warps: tuple[tuple[int, int], ...] = ()
    rows: tuple[tuple[int, int], ...] = ()


# A row kernel's table without rows: the architecture's rule at every width.
RULE_ONLY = LaunchTable("row kernels", RowLaunch())

# Elements one program should hold when rows are narrow: several narrow rows per program keep the loads wide.
_ELEMENTS_PER_PROGRAM = 2048
_MAX_ROWS_PER_PROGRAM = 32


def row_launch_config(
    block_d: int, device: Optional[torch.device] = None, table: LaunchTable = RULE_ONLY
) -> NormLaunch:
    """Rows per program and num_warps for rows of padded width ``block_d`` on ``device``: several narrow rows per
    program, one row from 2048 elements; the warps from the kernel's launch ``table`` where its row for the
    architecture names the width, else the architecture's rule for the elements a program holds.

    It depends on the row width only, not on the number of rows, so that a dynamic row count stays symbolic
    under torch.compile.
    """
    return _row_launch_config(block_d, launch_arch(device), table)


@functools.lru_cache(maxsize=None)
def _row_launch_config(block_d: int, arch: str, table: LaunchTable) -> NormLaunch:
    row = table.for_arch(arch)
    rows = dict(row.rows).get(block_d) or _rule_rows(block_d)
    measured = dict(row.warps).get(block_d)
    return NormLaunch(rows, measured or for_arch(arch).warps_for(rows * block_d))


def _rule_rows(block_d: int) -> int:
    """Rows per program the rule packs at a padded width: ``_ELEMENTS_PER_PROGRAM`` elements, one row from there."""
    return max(1, min(_MAX_ROWS_PER_PROGRAM, _ELEMENTS_PER_PROGRAM // block_d))


def resolve_config(config, block_d: int, device: torch.device, table: LaunchTable) -> NormLaunch:
    """``config`` (a private tuning override: NormLaunch, ``(rows, warps)`` or a dict) or the table's."""
    if config is None:
        return row_launch_config(block_d, device, table)
    if isinstance(config, NormLaunch):
        return config
    if isinstance(config, dict):
        return NormLaunch(**config)
    if isinstance(config, (tuple, list)) and len(config) == 2:
        return NormLaunch(int(config[0]), int(config[1]))
    raise TypeError(f"_config must be a NormLaunch, a (rows_per_program, num_warps) pair or a dict, got {config!r}")


@dataclass(frozen=True)
class RowGrid:
    """How a row kernel is launched over ``[B, S, D]`` rows: their count, tokens per batch element and width, the
    padded block width and the launch knobs."""

    n_rows: int
    seq: int
    width: int
    block_d: int
    knobs: NormLaunch

    @property
    def grid(self) -> tuple:
        return (cdiv(self.n_rows, self.knobs.rows_per_program),)

    def options(self) -> dict:
        """The launch keywords every row kernel takes (ROWS, BLOCK_D, num_warps)."""
        return {"ROWS": self.knobs.rows_per_program, "BLOCK_D": self.block_d, "num_warps": self.knobs.num_warps}


def row_grid(shape3: Sequence[int], device: torch.device, table: LaunchTable, config=None) -> RowGrid:
    """The :class:`RowGrid` of rows shaped ``[B, S, D]`` for a kernel of launch ``table``; ``config``: a tuning
    override (:func:`resolve_config`)."""
    n_b, seq, width = shape3
    block_d = next_pow2(int(width))  # a compile-time block: the row width is specialised
    return RowGrid(n_b * seq, seq, width, block_d, resolve_config(config, block_d, device, table))


# ----------------------------------------------------------------------------------------------------------------
# Row geometry: any [..., D] tensor as [B, S, D] rows
# ----------------------------------------------------------------------------------------------------------------
def rows_3d(t: torch.Tensor) -> torch.Tensor:
    """A ``[B, S, D]`` view of ``t`` (no copy where the strides allow one; a contiguous copy otherwise).

    1-D and 2-D tensors get leading unit dimensions; 3-D tensors are used as they are (any strides); more leading
    dimensions are merged into B (or into S) when their strides allow it.
    """
    if t.dim() == 1:
        return t.view(1, 1, t.shape[0])
    if t.dim() == 2:
        return t.unsqueeze(0)
    if t.dim() == 3:
        return t
    d = t.shape[-1]
    for shape in ((-1, t.shape[-2], d), (1, -1, d)):
        try:
            return t.view(shape)
        except RuntimeError:
            pass
    return t.contiguous().view(-1, t.shape[-2], d)


def strides_3d(t: torch.Tensor) -> tuple[int, int, int]:
    """Strides of a ``[B, S, D]`` view, with 0 for a batch or token dimension of size 1 (so it broadcasts)."""
    (n_b, seq, _), (s_b, s_s, s_d) = t.shape, t.stride()
    return (0 if n_b == 1 else s_b, 0 if seq == 1 else s_s, s_d)


def out_rows_3d(out: torch.Tensor, shape3: Sequence[int]) -> torch.Tensor:
    try:
        return out.view(tuple(shape3))
    except RuntimeError:
        raise ValueError(
            f"out (shape {list(out.shape)}, strides {list(out.stride())}) cannot be viewed as rows "
            f"{list(shape3)}; pass a contiguous out"
        ) from None


def new_rows_out(x: torch.Tensor) -> torch.Tensor:
    """A contiguous output shaped and typed like ``x`` (the row kernels' outputs)."""
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


# ----------------------------------------------------------------------------------------------------------------
# Tuning: the knobs a tuning run may change (kernels.tune)
# ----------------------------------------------------------------------------------------------------------------
# Elements one program may hold in a tuning candidate (rows x padded width), and per lane (fp32 in registers: more
# spills, fewer starve the loads)
TUNE_MAX_ELEMENTS = 4 * _ELEMENTS_PER_PROGRAM
TUNE_PER_LANE = (4, 64)


def row_tune(launch, table: LaunchTable, description: str = ""):
    """A row kernel's :class:`kernels.tune.Tune`: ``num_warps`` and ``rows_per_program``.  The block is the next
    power of two of the row (never a knob); rows per program are powers of two with rows x block from
    ``max(block, 2048)`` (the rule's) up to :data:`TUNE_MAX_ELEMENTS` (one row when the row alone is wider), warps
    those leaving each lane :data:`TUNE_PER_LANE` elements; the current choice is :func:`row_launch_config`
    with ``table``."""
    from kernels.tune import Tune, pow2_range, warps_for_elements

    def candidates(shape, arch):
        block = next_pow2(int(shape[-1]))
        out = []
        for elements in pow2_range(max(block, _ELEMENTS_PER_PROGRAM), max(block, TUNE_MAX_ELEMENTS)):
            rows = elements // block
            if rows > _MAX_ROWS_PER_PROGRAM:
                continue
            for warps in warps_for_elements(elements, arch, TUNE_PER_LANE):
                out.append({"num_warps": warps, "rows_per_program": rows})
        return out

    def current(shape, arch):
        knobs = _row_launch_config(next_pow2(int(shape[-1])), arch, table)
        return {"num_warps": knobs.num_warps, "rows_per_program": knobs.rows_per_program}

    def with_choices(row: RowLaunch, choices: dict) -> RowLaunch:
        """``row`` with the warps (and, where they differ from the rule's, the rows) of ``choices`` (bucket
        ``block=N`` -> candidate) at those widths."""
        warps, rows = dict(row.warps), dict(row.rows)
        for bucket, c in choices.items():
            block = int(bucket.removeprefix("block="))
            warps[block] = int(c["num_warps"])
            if int(c["rows_per_program"]) == _rule_rows(block):
                rows.pop(block, None)
            else:
                rows[block] = int(c["rows_per_program"])
        return dataclasses.replace(row, warps=tuple(sorted(warps.items())), rows=tuple(sorted(rows.items())))

    return Tune(
        knobs=("num_warps", "rows_per_program"),
        candidates=candidates,
        current=current,
        config=lambda c, shape: NormLaunch(int(c["rows_per_program"]), int(c["num_warps"])),
        bucket=lambda shape: f"block={next_pow2(int(shape[-1]))}",
        launch=launch,
        description=description or "warps per program and rows per program (the block is the row's width)",
        table=table,
        with_choices=with_choices,
    )
