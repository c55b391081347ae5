"""Kernels ``rope`` and ``rope_rotate_half`` (code: kernels/entries/rope.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta

ROPE = KernelMeta(
    name="rope",
    public_name="rope_interleaved",
    impls=STANDARD_IMPLS,
    tolerances={"fp32": (2e-6, 2e-5), "bf16": (8e-3, 6.25e-2), "fp16": (1e-3, 8e-3)},
    grid=Grid(shapes=((2, 1320, 2048), (2, 6336, 2048), (1, 4096, 2048), (1, 1024, 2048))),
)

ROPE_ROTATE_HALF = KernelMeta(
    name="rope_rotate_half",
    public_name="rope_rotate_half",
    impls=STANDARD_IMPLS,
    tolerances={"fp32": (2e-6, 2e-5), "bf16": (1e-2, 6.25e-2), "fp16": (2e-3, 8e-3)},
    grid=Grid(shapes=((1, 1024, 16, 64), (1, 4096, 16, 64), (2, 4096, 16, 128), (1, 8192, 32, 64), (2, 6336, 32, 64))),
)

KERNELS = [ROPE, ROPE_ROTATE_HALF]
