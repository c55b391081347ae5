"""Kernel ``qk_norm_rope`` (code: kernels/entries/qk_norm_rope.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta

QK_NORM_ROPE = KernelMeta(
    name="qk_norm_rope",
    public_name="qk_norm_rope",
    impls=STANDARD_IMPLS,
    tolerances={"fp32": (5e-6, 1e-4), "bf16": (1e-2, 1.25e-1), "fp16": (2e-3, 1.6e-2)},
    grid=Grid(shapes=((2, 1320, 2048), (2, 6336, 2048))),
)

KERNELS = [QK_NORM_ROPE]
