"""The kernel registry: everything the planner and the workers know about a kernel.

The workers and the planner know kernels only through this module.  Each kernel family has one module under
``kernels/entries/`` that defines its ``ENTRIES`` (a list of :class:`KernelEntry`); this module collects them.
Adding a kernel = one kernel module + one entry module listed in ``_ENTRY_MODULES`` + one ``conf/kernel/*.yaml``.

Extra entries can be loaded from modules named in the environment variable ``KERNELFLEET_PLUGINS``
(comma-separated module paths, each with an ``ENTRIES`` list); the test-suite uses this for kernels that crash
or hang on purpose.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch

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

    def impl_names(self) -> list[str]:
        return list(self.impls)


_ENTRY_MODULES = (
    "kernels.entries.rmsnorm",  # rmsnorm
    "kernels.entries.adaln",  # adaln (RMSNorm + modulate), adaln_layer_norm
    "kernels.entries.residual_norm",  # add_rms_norm_modulate (LTX attn2 residual + norm2 + modulate)
    "kernels.entries.gated_residual",  # gated_residual (LTX residual + branch * gate)
    "kernels.entries.rope",  # rope (LTX interleaved), rope_rotate_half
    "kernels.entries.qk_norm_rope",  # qk_norm_rope (LTX attn1 q/k norm + RoPE)
    "kernels.entries.geglu",  # geglu, gelu_tanh
    "kernels.entries.cross_attention",  # cross_attention (LTX attn2: attention to the text tokens)
)

_REGISTRY: dict[str, KernelEntry] | None = None


class UnknownKernelError(KeyError):
    def __init__(self, name: str, known: Sequence[str]):
        super().__init__(name)
        self.name = name
        self.known = list(known)

    def __str__(self) -> str:
        return f"unknown kernel {self.name!r}; known kernels: {', '.join(self.known)}"


def _load() -> dict[str, KernelEntry]:
    global _REGISTRY
    if _REGISTRY is None:
        reg: dict[str, KernelEntry] = {}
        plugins = [m.strip() for m in os.environ.get("KERNELFLEET_PLUGINS", "").split(",") if m.strip()]
        for modname in (*_ENTRY_MODULES, *plugins):
            mod = importlib.import_module(modname)
            for entry in mod.ENTRIES:
                if entry.name in reg:
                    raise ValueError(f"kernel {entry.name!r} registered twice (again in {modname})")
                reg[entry.name] = entry
        _REGISTRY = reg
    return _REGISTRY


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
