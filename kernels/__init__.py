"""kernelfleet's Triton kernels (forward only), each also registered as a torch op in the `kernelfleet` namespace.

Portable between CUDA and ROCm; on the CPU they run through Triton's interpreter (TRITON_INTERPRET=1).  The public
functions are those the registry's entries name (kernels/entries/, :func:`kernels.registry.public_functions`); their
names (``__all__``) come from the kernels' declarations (kernels/metadata/), so importing this package, or
``kernels.metadata``, imports neither torch nor Triton: the first use of a public function loads the registry.

=====================  ============================================================================================
module                 holds
=====================  ============================================================================================
``metadata/``          each kernel's declaration without its code: names, implementations, baseline, grid,
                       tolerances (one module per entry module)
``entries/``           each kernel family's registry entry: inputs, reference, eager code, implementations, byte and
                       FLOP models, contract shapes (``common``, ``ltx_rope``: pieces several entries share)
``registry``           the kernels by name, built from ``entries/`` and checked against ``metadata/``
``<kernel>``           a kernel family's Triton code and public functions (``rmsnorm``, ``adaln``, ``rope``,
                       ``qk_norm_rope``, ``residual_norm``, ``gated_residual``, ``geglu``, ``cross_attention``)
``launch``             :class:`PublicKernel` (the torch op, the ``_into`` variant, the direct launch) and layout
                       helpers
``launch_plans``,      a repeated launch replayed from its plan; the direct launcher
``fast_launch``
``launch_table``       a kernel's own launch parameters, one row per GPU architecture
``arch``               the architecture a launch is for, and the launch parameters every kernel shares there
``rows``               what every row kernel shares: ``[B, S, D]`` addressing, row blocks, row launch knobs
``rounding``           rounding where eager code rounds, the same on a GPU and in the interpreter
``checks``             the argument checks of the public functions (clear ``ValueError``/``TypeError``)
``tune``               the launch knobs a kernel declares and their legal values (the ``tune`` job)
``triton_dist``        which Triton this process runs (its distribution and version)
``inject/``            replacing model modules' code by the kernels (diffusers, transformers)
=====================  ============================================================================================
"""

import sys as _sys
import types as _types

from kernels import metadata as _metadata

_PUBLIC = frozenset(m.public_name for m in _metadata.declared().values())
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    """A public function, loaded with the registry on first use (``kernels.rms_norm``, ``from kernels import
    geglu``)."""
    if name in _PUBLIC:
        from kernels import registry

        functions = registry.public_functions()
        globals().update(functions)
        return functions[name]
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")


class _Package(_types.ModuleType):
    """``kernels.<public name>`` is the kernel's public function even where the kernel's module has the same name
    (``kernels/geglu.py`` and ``kernels.geglu``): importing that module would bind it onto the package, hiding the
    function from :func:`__getattr__`; the binding is skipped for those names (the module stays in sys.modules)."""

    def __setattr__(self, name: str, value) -> None:
        if name in _PUBLIC and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
