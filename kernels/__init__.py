"""kernelfleet's Triton kernels (forward only), each also registered as a torch op in the `kernelfleet` namespace.

Portable between CUDA and ROCm; on the CPU they run through Triton's interpreter (TRITON_INTERPRET=1).
"""
from kernels.adaln import adaln_layer_norm, adaln_rms
from kernels.cross_attention import cross_attention
from kernels.gated_residual import gated_residual
from kernels.geglu import geglu, gelu_tanh
from kernels.qk_norm_rope import qk_norm_rope
from kernels.residual_norm import add_rms_norm_modulate
from kernels.rmsnorm import rms_norm
from kernels.rope import rope_interleaved, rope_rotate_half

__all__ = [
    "rms_norm",
    "rope_interleaved",
    "rope_rotate_half",
    "gelu_tanh",
    "geglu",
    "adaln_rms",
    "adaln_layer_norm",
    "qk_norm_rope",
    "add_rms_norm_modulate",
    "gated_residual",
    "cross_attention",
]
