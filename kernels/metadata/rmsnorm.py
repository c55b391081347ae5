"""Kernel ``rmsnorm`` (code: kernels/entries/rmsnorm.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta
from kernels.metadata.ltx import LTX_NORM_SHAPES

RMSNORM = KernelMeta(
    name="rmsnorm",
    public_name="rms_norm",
    impls=(*STANDARD_IMPLS, "F.rms_norm", "liger"),
    tolerances={"fp32": (1e-5, 1e-4), "bf16": (8e-3, 8e-2), "fp16": (1e-3, 1e-2)},
    grid=Grid(shapes=LTX_NORM_SHAPES),
)

KERNELS = [RMSNORM]
