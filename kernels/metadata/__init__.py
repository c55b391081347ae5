"""What the project declares about each kernel, readable without torch, Triton or a kernel's module.

A kernel's name, its public function's name (``kernels.<public_name>``), its implementations, the one its speed-ups
are measured against (``baseline``), its dtypes, its default grid and its tolerances are plain data: the orchestrator's
``--help``, the store's queries and the exports read them here, in a process that never imports torch.  The registry
(:mod:`kernels.registry`) builds each kernel's entry from this declaration and the code of its entry module, and
refuses an entry that disagrees with it.

====================  =============================================================================================
module                holds
====================  =============================================================================================
``__init__``          :class:`KernelMeta`, :class:`Grid`, the standard implementation names, the catalogue
                      (:func:`declared`: every declaration, by kernel name)
``<family>``          one per entry module of ``kernels/entries/`` (same name): its ``KERNELS`` — ``rmsnorm``,
                      ``adaln`` (two kernels), ``residual_norm``, ``gated_residual``, ``rope`` (two),
                      ``qk_norm_rope``, ``geglu`` (two), ``cross_attention``
``ltx``               the LTX-Video grids and the row kernels' tolerances several families declare
====================  =============================================================================================

Each family has a module of its own, so that a kernel's declaration is part of that kernel's job code only
(workers/runtime/job_code.py): changing one kernel's tolerance re-keys that kernel's jobs, not its neighbours'.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Mapping

# The implementations every kernel has (kernels/entries/common.py builds them): its Triton kernel, the model's own
# PyTorch code (the baseline of speed-ups) and torch.compile of that code in two modes.
TRITON_IMPL = "triton"
BASELINE_IMPL = "eager"
COMPILE_IMPLS = ("compile", "compile_max")
STANDARD_IMPLS = (TRITON_IMPL, BASELINE_IMPL, *COMPILE_IMPLS)
ALL_DTYPES = ("fp32", "bf16", "fp16")

SHARED_MODULES = ("ltx",)  # pieces several families declare; declare no kernel


@dataclass(frozen=True)
class Grid:
    """A kernel's default grid: what a sweep runs it on unless ``conf/kernel/<name>.yaml`` says otherwise."""

    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...] = ("bf16",)
    impls: tuple[str, ...] = ()  # empty: every implementation of the kernel


@dataclass(frozen=True)
class KernelMeta:
    """A kernel as the project declares it, without its code."""

    name: str
    # The name of its public function, ``kernels.<public_name>`` (and its op ``kernelfleet::<public_name>``).
    public_name: str
    # Its implementations, in the order its entry lists them (the ``impls`` of :class:`kernels.registry.KernelEntry`).
    impls: tuple[str, ...]
    # dtype name -> (max relative L2 error ||out-ref||/||ref||, max absolute error)
    tolerances: Mapping[str, tuple[float, float]]
    grid: Grid | None = None
    baseline: str = BASELINE_IMPL  # the implementation its speed-ups are measured against
    dtypes: tuple[str, ...] = ALL_DTYPES

    def entry_fields(self) -> dict[str, Any]:
        """The fields of its registry entry this declaration holds (``KernelEntry(**meta.entry_fields(), ...)``)."""
        return {
            "name": self.name,
            "tolerances": self.tolerances,
            "grid": self.grid,
            "baseline": self.baseline,
            "dtypes": self.dtypes,
        }


def family_modules() -> list[str]:
    """The modules of this package that declare kernels, by name (one per entry module of kernels/entries/)."""
    return sorted(
        f"{__name__}.{m.name}"
        for m in pkgutil.iter_modules(__path__)
        if not m.name.startswith("_") and m.name not in SHARED_MODULES
    )


def declared() -> dict[str, KernelMeta]:
    """Every kernel's declaration, by kernel name (read again on each call: a test may extend this package's path)."""
    found: dict[str, KernelMeta] = {}
    for modname in family_modules():
        kernels = getattr(importlib.import_module(modname), "KERNELS", None)
        if not isinstance(kernels, (list, tuple)) or not kernels:
            raise ValueError(f"{modname} declares no KERNELS (a list of kernels.metadata.KernelMeta)")
        for meta in kernels:
            if meta.name in found:
                raise ValueError(f"kernel {meta.name!r} declared twice (again in {modname})")
            found[meta.name] = meta
    return dict(sorted(found.items()))


def kernel_names() -> list[str]:
    return list(declared())


def public_names() -> dict[str, str]:
    """Kernel name -> its public function's name, for the kernels whose two names differ (``rmsnorm`` ->
    ``rms_norm``); every other kernel's function is named as its kernel."""
    return {m.name: m.public_name for m in declared().values() if m.public_name != m.name}


def baseline_of(kernel: str) -> str:
    """The implementation ``kernel``'s speed-ups are measured against: its declared baseline, or the standard one
    for a kernel declared nowhere (a test plugin's, or one stored before it was removed)."""
    meta = declared().get(kernel)
    return meta.baseline if meta is not None else BASELINE_IMPL


def family_module(kernel: str) -> str:
    """The metadata module that declares ``kernel`` (``kernels.metadata.rmsnorm``)."""
    for modname in family_modules():
        if any(m.name == kernel for m in getattr(importlib.import_module(modname), "KERNELS", ())):
            return modname
    raise KeyError(kernel)
