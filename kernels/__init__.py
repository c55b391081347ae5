"""kernelfleet's Triton kernels (forward only), each also registered as a torch op in the `kernelfleet` namespace.

Portable between CUDA and ROCm; on the CPU they run through Triton's interpreter (TRITON_INTERPRET=1).  The public
functions are those the registry's entries name (kernels/entries/, :func:`kernels.registry.public_functions`).
"""

from kernels import registry as _registry

_FUNCTIONS = _registry.public_functions()
globals().update(_FUNCTIONS)
__all__ = list(_FUNCTIONS)
