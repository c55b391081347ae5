"""The kernel registry: everything the planner and the workers know about a kernel.

The workers and the planner know kernels only through this module. Each kernel family has one module under
``kernels/entries/`` that declares its ``ENTRIES`` (a list of :class:`KernelEntry`); this module finds them by scanning
that package (every module but the helpers ``common`` and ``ltx_rope``), so a kernel exists when its entry says so. What
can be known of a kernel without its code (its names, implementations, baseline, dtypes, grid and tolerances) the entry
takes from its declaration in ``kernels/metadata/`` (:mod:`kernels.metadata`: read without torch); an entry that
disagrees with its declaration is refused when the registry loads. Derived from the declarations: ``kernels.__all__``
(each kernel's public name) and the orchestrator's ``--help``. Derived from the entries: ``kernels``' public functions,
the orchestrator's check that ``conf/kernel/`` names no unknown kernel
(``orchestrator.config.validate.check_kernel_grids``), the ``kernels`` sweep's list of kernels (every registered kernel
with a grid, ``orchestrator.config.compose``), the names the injection's rules may select by (``kernels.inject.rules``)
and the per-kernel contract tests (tests/kernels/test_contract.py, from each entry's :class:`Contract`). A kernel's
default grid is its entry's ``grid`` (:class:`Grid`); a ``conf/kernel/<name>.yaml``, when present, overrides it. Adding
a kernel = one kernel module + one declaration + one entry module (README, "Add a kernel").

Extra entries can be loaded from modules named in the environment variable ``KERNELFLEET_PLUGINS``
(comma-separated module paths, each with an ``ENTRIES`` list); the test-suite uses this for kernels that crash
or hang on purpose.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch

from kernels import metadata
from kernels.launch_table import LaunchTable
from kernels.metadata import Grid
from kernels.tune import Tune

DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}

Inputs = dict[str, Any]
Output = Any  # a tensor or a tuple of tensors


@dataclass(frozen=True)
class Impl:
    """One way of computing a kernel.

    ``make()`` builds the callable once per process (torch.compile happens there, lazily); the callable takes
    the inputs as keyword arguments.  ``unavailable(device)`` returns None when the implementation can run on
    that device, else the reason it cannot (shown to the user, stored with the result).
    ``accepts_out``: the callable takes ``out=`` (a tensor, or a tuple for several outputs), so correctness can
    poison the output before the call.
    """

    name: str
    make: Callable[[], Callable[..., Output]]
    unavailable: Callable[[torch.device], str | None] = lambda device: None
    accepts_out: bool = False
    description: str = ""


@dataclass(frozen=True)
class Contract:
    """What the per-kernel contract tests run a kernel's Triton implementation on (tests/kernels/test_contract.py:
    bad inputs, ``_into`` outputs, launch plans, the op under tracing; tests/workers/test_isa.py: its machine code
    for each AMD target), so that a new kernel's entry is all those tests need."""

    # A shape the CPU interpreter runs in well under a second, with a row width of at least 64 elements.
    small_shape: tuple[int, ...]
    # Shapes beyond the default grid that reach the other rows of the kernel's launch tables (rows packed per
    # program, other warps, other tiles): the isa tests compile the grid and these.
    launch_shapes: tuple[tuple[int, ...], ...] = ()
    # The narrowest global load, in bits, its gfx950 code may issue for what it does not pack several of into one
    # program (16-bit rows load 128 bits a lane); lower only with the reason beside the entry.
    narrowest_load_bits: int = 128


@dataclass(frozen=True)
class KernelEntry:
    name: str
    description: str
    # Shape checking: raise ValueError naming the expected layout when a shape does not fit this kernel.
    check_shape: Callable[[Sequence[int]], None]
    # make_inputs(shape, dtype, device, generator) -> kwargs for every implementation (fresh random, never zeros)
    make_inputs: Callable[[Sequence[int], torch.dtype, torch.device, torch.Generator], Inputs]
    # reference(inputs) -> the float64 result (the entry upcasts itself)
    reference: Callable[[Inputs], Output]
    # alloc_out(inputs) -> empty output(s) shaped and typed like an implementation's result (for poisoning)
    alloc_out: Callable[[Inputs], Output]
    impls: Mapping[str, Impl]
    # Fewest bytes the op must move (each input read once, each output written once) and its FLOPs.
    bytes_moved: Callable[[Sequence[int], torch.dtype], int]
    flops: Callable[[Sequence[int]], int]
    # dtype name -> (max relative L2 error ||out-ref||/||ref||, max absolute error)
    tolerances: Mapping[str, tuple[float, float]]
    baseline: str = "eager"
    dtypes: tuple[str, ...] = ("fp32", "bf16", "fp16")
    default_impls: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The public function ``kernels.<function.__name__>`` that the ``triton`` implementation calls; every entry of
    # kernels/entries/ names one (kernels.__all__ is made of them), test plugins may leave it out.
    function: Callable[..., Output] | None = None
    # Why kernels.inject never uses this kernel (empty: the injection may use it).
    not_injected: str = ""
    # The default grid of sweeps (conf/kernel/<name>.yaml, when present, overrides it).
    grid: Grid | None = None
    # What the contract tests run it on; every entry of kernels/entries/ declares one, test plugins may leave it out.
    contract: Contract | None = None
    # Its own launch parameters per architecture, where it has any (the table its module keeps; kernels.arch holds
    # what every kernel shares): what a tuning run reads and proposes rows for.
    launch_table: LaunchTable | None = None
    # Its launch knobs and their legal values (kernels/tune.py): what a ``tune`` job measures; None: not tunable.
    tune: Tune | None = None
    # The inputs that carry the model's activations (not weights, tables or masks): what the correctness job's input
    # cases scale, zero and poison (workers/jobs/input_cases.py); empty: the first tensor input.
    activations: tuple[str, ...] = ()

    def impl_names(self) -> list[str]:
        return list(self.impls)

    def default_grid(self) -> dict[str, Any] | None:
        """The entry's grid as a sweep's kernel config (``name``, ``shapes``, ``dtypes``, ``impls``), or None."""
        if self.grid is None:
            return None
        return {
            "name": self.name,
            "shapes": [list(s) for s in self.grid.shapes],
            "dtypes": list(self.grid.dtypes),
            "impls": list(self.grid.impls or self.impls),
        }


# The kernels whose public function has another name than the kernel: ``kernels.rms_norm`` and its op
# ``kernelfleet::rms_norm`` are the public API's names of the kernel ``rmsnorm``, which sweeps, the store, the
# injection and reports call it.  Every other kernel's function is named as its kernel (both declared in
# kernels/metadata/, checked at registration); :func:`kernel_name` takes either name.
PUBLIC_NAMES = metadata.public_names()

ENTRY_PACKAGE = "kernels.entries"
_HELPER_MODULES = ("common", "ltx_rope")  # pieces the entries share; declare no kernel

_REGISTRY: dict[str, KernelEntry] | None = None
_BUILTIN: dict[str, KernelEntry] | None = None
_MODULES: dict[str, str] = {}  # kernel name -> the module that declares its entry


class UnknownKernelError(KeyError):
    def __init__(self, name: str, known: Sequence[str]):
        super().__init__(name)
        self.name = name
        self.known = list(known)

    def __str__(self) -> str:
        return f"unknown kernel {self.name!r}; known kernels: {', '.join(self.known)}"


def entry_modules() -> list[str]:
    """The modules of kernels/entries/ that declare kernels, by name."""
    package = importlib.import_module(ENTRY_PACKAGE)
    return sorted(
        f"{ENTRY_PACKAGE}.{m.name}"
        for m in pkgutil.iter_modules(package.__path__)
        if not m.name.startswith("_") and m.name not in _HELPER_MODULES
    )


def _collect(reg: dict[str, KernelEntry], modname: str, builtin: bool) -> None:
    mod = importlib.import_module(modname)
    entries = getattr(mod, "ENTRIES", None)
    if not isinstance(entries, (list, tuple)) or (builtin and not entries):
        raise ValueError(f"{modname} declares no ENTRIES (a list of kernels.registry.KernelEntry)")
    for entry in entries:
        if entry.name in reg:
            raise ValueError(f"kernel {entry.name!r} registered twice (again in {modname})")
        if builtin and entry.function is None:
            raise ValueError(f"kernel {entry.name!r} ({modname}) names no public function (KernelEntry.function)")
        if builtin:
            _check_declared(entry, modname)
        if builtin and entry.contract is None:
            raise ValueError(f"kernel {entry.name!r} ({modname}) declares no contract shapes (KernelEntry.contract)")
        reg[entry.name] = entry
        _MODULES[entry.name] = modname


def _check_declared(entry: KernelEntry, modname: str) -> None:
    """A kernel of kernels/entries/ is what kernels/metadata/ declares of it: the same public function name,
    implementations (in the same order), baseline, dtypes, grid and tolerances."""
    declared = metadata.declared().get(entry.name)
    if declared is None:
        raise ValueError(
            f"kernel {entry.name!r} ({modname}) is declared nowhere in kernels/metadata/ (a KernelMeta in the "
            f"module of the same name's KERNELS)"
        )
    found = {
        "public_name": entry.function.__name__,
        "impls": tuple(entry.impls),
        **{k: getattr(entry, k) for k in declared.entry_fields()},
    }
    for key, value in found.items():
        want = getattr(declared, key)
        if value != want:
            raise ValueError(
                f"kernel {entry.name!r} ({modname}): its {key} is {value!r}, its declaration in "
                f"{metadata.family_module(entry.name)} says {want!r}"
            )


def builtin() -> dict[str, KernelEntry]:
    """The kernels of kernels/entries/ (without test plugins), by name."""
    global _BUILTIN
    if _BUILTIN is None:
        reg: dict[str, KernelEntry] = {}
        for modname in entry_modules():
            _collect(reg, modname, builtin=True)
        _BUILTIN = reg
    return _BUILTIN


def _load() -> dict[str, KernelEntry]:
    global _REGISTRY
    if _REGISTRY is None:
        reg = dict(builtin())
        plugins = [m.strip() for m in os.environ.get("KERNELFLEET_PLUGINS", "").split(",") if m.strip()]
        for modname in plugins:
            _collect(reg, modname, builtin=False)
        _REGISTRY = reg
    return _REGISTRY


def public_functions() -> dict[str, Callable[..., Output]]:
    """``kernels``' public functions (its ``__all__``), by name: one per kernel of kernels/entries/."""
    functions: dict[str, Callable[..., Output]] = {}
    for entry in builtin().values():
        name = entry.function.__name__
        if functions.get(name, entry.function) is not entry.function:
            raise ValueError(f"two kernel functions are named {name!r} (kernel {entry.name!r})")
        functions[name] = entry.function
    return dict(sorted(functions.items()))


def kernel_name(name: str) -> str:
    """The kernel's name for ``name``, a kernel's name or its public function's (:data:`PUBLIC_NAMES`); other names
    are returned as they are."""
    for kernel, public in PUBLIC_NAMES.items():
        if name == public:
            return kernel
    return name


def entry_module(name: str) -> str:
    """The module that declares kernel ``name``'s entry (``kernels.entries.rmsnorm``...)."""
    get(name)
    return _MODULES[name]


def kernel_names() -> list[str]:
    return sorted(_load())


def get(name: str) -> KernelEntry:
    reg = _load()
    try:
        return reg[name]
    except KeyError:
        raise UnknownKernelError(name, sorted(reg)) from None


def dtype_of(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; allowed: {', '.join(DTYPES)}") from None
