"""Kernels ``adaln`` and ``adaln_layer_norm`` (code: kernels/entries/adaln.py)."""

from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta
from kernels.metadata.ltx import LTX_NORM_SHAPES, MODULATED_ROW_TOLERANCES

ADALN = KernelMeta(
    name="adaln",
    public_name="adaln_rms",
    impls=STANDARD_IMPLS,
    tolerances=MODULATED_ROW_TOLERANCES,
    grid=Grid(shapes=LTX_NORM_SHAPES),
)

ADALN_LAYER_NORM = KernelMeta(
    name="adaln_layer_norm",
    public_name="adaln_layer_norm",
    impls=STANDARD_IMPLS,
    tolerances=MODULATED_ROW_TOLERANCES,
    grid=Grid(
        shapes=((2, 1024, 1536), (2, 4096, 1536), (2, 4096, 2432), (1, 512, 3072), (1, 4096, 3072), (2, 1024, 3072))
    ),
)

KERNELS = [ADALN, ADALN_LAYER_NORM]
