"""Kernel ``add_rms_norm_modulate`` (code: kernels/entries/residual_norm.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta
from kernels.metadata.ltx import LTX_BLOCK_LINE_SHAPES, MODULATED_ROW_TOLERANCES

ADD_RMS_NORM_MODULATE = KernelMeta(
    name="add_rms_norm_modulate",
    public_name="add_rms_norm_modulate",
    impls=STANDARD_IMPLS,
    tolerances=MODULATED_ROW_TOLERANCES,
    grid=Grid(shapes=LTX_BLOCK_LINE_SHAPES),
)

KERNELS = [ADD_RMS_NORM_MODULATE]
