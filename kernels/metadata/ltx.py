"""LTX-Video's grids and the row kernels' tolerances, declared by several kernel families."""

# LTX-Video's norm rows at its real token counts and widths (2048: LTX-Video 2B, 3072: 13B): the grid of the LTX norm
# kernels (adaln and rmsnorm).
LTX_NORM_SHAPES = (
    (1, 1024, 2048),
    (2, 1024, 2048),
    (4, 1024, 2048),
    (1, 4096, 2048),
    (2, 4096, 3072),
    (1, 8192, 2048),
    (4, 4096, 3072),
    (2, 1320, 2048),
    (2, 6336, 2048),
)
# The element-wise block lines around them (gated residual, residual add + norm2) at LTX-Video 2B's token counts.
LTX_BLOCK_LINE_SHAPES = ((1, 256, 2048), (2, 1320, 2048), (2, 6336, 2048))

# The tolerances of the modulated row kernels (adaln, adaln_layer_norm, gated_residual, add_rms_norm_modulate).
MODULATED_ROW_TOLERANCES = {"fp32": (1e-5, 1e-4), "bf16": (1e-2, 0.125), "fp16": (2e-3, 2e-2)}
