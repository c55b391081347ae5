"""Kernels ``geglu`` and ``gelu_tanh`` (code: kernels/entries/geglu.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta

GEGLU = KernelMeta(
    name="geglu",
    public_name="geglu",
    impls=(*STANDARD_IMPLS, "liger"),
    tolerances={"fp32": (1e-5, 1e-4), "bf16": (1e-2, 2.5e-1), "fp16": (2e-3, 6.25e-2)},
    grid=Grid(shapes=((1, 1024, 2048), (2, 1024, 4096), (2, 4096, 3072), (4, 4096, 4096), (4, 4096, 8192))),
)

GELU_TANH = KernelMeta(
    name="gelu_tanh",
    public_name="gelu_tanh",
    impls=STANDARD_IMPLS,
    tolerances={"fp32": (1e-5, 1e-4), "bf16": (8e-3, 6.25e-2), "fp16": (1e-3, 8e-3)},
    grid=Grid(shapes=((2, 1320, 8192), (2, 6336, 8192), (1, 4096, 3072), (4, 4096, 4096))),
)

KERNELS = [GEGLU, GELU_TANH]
