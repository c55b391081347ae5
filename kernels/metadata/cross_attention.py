"""Kernel ``cross_attention`` (code: kernels/entries/cross_attention.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta

CROSS_ATTENTION = KernelMeta(
    name="cross_attention",
    public_name="cross_attention",
    impls=STANDARD_IMPLS,
    tolerances={"fp32": (1e-5, 1e-4), "bf16": (1e-2, 6.25e-2), "fp16": (2e-3, 8e-3)},
    grid=Grid(shapes=((1, 256, 32, 64, 128), (2, 1320, 32, 64, 128), (2, 6336, 32, 64, 128))),
)

KERNELS = [CROSS_ATTENTION]
