"""Kernel ``gated_residual`` (code: kernels/entries/gated_residual.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta
from kernels.metadata.ltx import LTX_BLOCK_LINE_SHAPES, MODULATED_ROW_TOLERANCES

GATED_RESIDUAL = KernelMeta(
    name="gated_residual",
    public_name="gated_residual",
    impls=STANDARD_IMPLS,
    tolerances=MODULATED_ROW_TOLERANCES,
    grid=Grid(shapes=LTX_BLOCK_LINE_SHAPES),
)

KERNELS = [GATED_RESIDUAL]
