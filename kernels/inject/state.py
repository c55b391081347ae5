"""Installing replacements on module instances, and the record that lets ``restore`` undo them exactly.

Two ways code is replaced, both per instance (other models of the same class are untouched):

* a module's ``forward`` becomes an instance attribute (``types.MethodType`` of a kernelfleet function); undoing
  it deletes the attribute, so the class's own ``forward`` is found again;
* a diffusers attention module's processor is swapped through ``set_processor``; undoing it sets the original
  processor object back.

One rewrite touches weights, without changing a value: fused projections (:mod:`kernels.inject.fused_linear`) make
a group of ``nn.Linear`` weights views of one concatenation; undoing it gives each its own copy again.  Those carry
a check per forward of their model: a forward pre-hook and a forward hook, removed by the undo.  Nothing else
(buffers, other hooks) is touched, so after :func:`undo` the model computes bit for bit what it computed before.  The
record lives on the root module under :data:`STATE_ATTR`.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch.nn as nn

from kernels.inject import rules
from kernels.inject.report import KIND_ATTN_PROCESSOR, InjectionReport, Left, Replaced

STATE_ATTR = "_kernelfleet_injection"
MARK = "_kernelfleet_replacement"  # set on every function/processor class this package installs


def mark(obj: Any) -> Any:
    """Tag a replacement forward function or processor class as kernelfleet's (a decorator)."""
    setattr(obj, MARK, True)
    return obj


def is_ours(obj: Any) -> bool:
    fn = getattr(obj, "__func__", obj)
    return bool(getattr(fn, MARK, False) or getattr(type(obj), MARK, False))


@dataclass
class _Undo:
    module: nn.Module
    what: str  # "forward" | "processor" | "call"
    original: Any = None  # the original processor; for "call", the function that undoes the change


@dataclass
class InjectionState:
    """What one inject() installed on one root module."""

    kernels: tuple[str, ...]
    report: InjectionReport
    undo: list[_Undo] = field(default_factory=list)


def get_state(module: nn.Module) -> InjectionState | None:
    return module.__dict__.get(STATE_ATTR)


def _forward_taken(module: nn.Module) -> str | None:
    """Why the module's forward cannot be replaced, or None."""
    if "forward" in module.__dict__:
        current = module.__dict__["forward"]
        owner = getattr(getattr(current, "__func__", current), "__qualname__", type(current).__name__)
        return (
            f"its forward is already replaced on the instance ({owner}: a hook, CPU offloading or another "
            f"patch); call inject() before enabling offloading, caches or other hooks"
        )
    if getattr(module, "_hf_hook", None) is not None:
        return "it carries an accelerate hook (CPU offloading); call inject() before enabling offloading"
    return None


class Session:
    """Collects the replacements of one inject() call on one root module (and what was left, and why)."""

    def __init__(self, root: nn.Module, prefix: str, kernels: tuple[str, ...], report: InjectionReport):
        self.root = root
        self.prefix = prefix
        self.kernels = kernels
        self.report = report
        self.undo: list[_Undo] = []
        self._covered: set[int] = set()
        self._reasons: dict[int, str] = {}
        self.families: list[str] = []

    # ------------------------------------------------------------------------------------------------------------
    def path(self, name: str) -> str:
        if not name:
            return self.prefix or type(self.root).__name__
        return f"{self.prefix}.{name}" if self.prefix else name

    def allowed(self, kernel: str) -> bool:
        """Whether the injection's selection holds ``kernel``, a name of :mod:`kernels.inject.rules` (any other is a
        ValueError: a rule that asked for a misspelt name would be off without a word)."""
        if kernel not in rules.NAMES:
            raise ValueError(f"no injection rule selects by {kernel!r}; names: {', '.join(sorted(rules.NAMES))}")
        return kernel in self.kernels

    def family(self, name: str) -> None:
        if name not in self.families:
            self.families.append(name)

    def cover(self, *modules: nn.Module | None) -> None:
        """Mark modules whose work a replacement took over (so they are not reported as left)."""
        for m in modules:
            if m is not None:
                self._covered.add(id(m))

    def is_covered(self, module: nn.Module) -> bool:
        return id(module) in self._covered

    def reason(self, module: nn.Module | None, why: str) -> None:
        """Why ``module`` is left as it is (used by the final sweep over modules a kernel could serve)."""
        if module is not None:
            self._reasons.setdefault(id(module), why)

    def reason_for(self, module: nn.Module) -> str | None:
        return self._reasons.get(id(module))

    def leave(self, name: str, module: nn.Module, why: str) -> None:
        self.report.left.append(Left(self.path(name), type(module).__name__, why))
        self.cover(module)

    # ------------------------------------------------------------------------------------------------------------
    def replace_forward(
        self, name: str, module: nn.Module, fn: Callable, kind: str, kernels: tuple[str, ...], note: str = ""
    ) -> bool:
        """Make ``fn`` (a kernelfleet function taking ``self``) the instance's forward; False if it cannot be."""
        if not getattr(fn, MARK, False):
            raise ValueError(f"{fn!r} is not marked as a kernelfleet replacement (use state.mark)")
        why = _forward_taken(module)
        if why:
            self.leave(name, module, why)
            return False
        module.forward = types.MethodType(fn, module)
        self.undo.append(_Undo(module, "forward"))
        self.report.replaced.append(Replaced(self.path(name), kind, type(module).__name__, tuple(kernels), note))
        self.cover(module)
        return True

    def replace_processor(
        self, name: str, attn: nn.Module, processor: Any, kernels: tuple[str, ...], note: str = ""
    ) -> bool:
        """Swap a diffusers attention module's processor, carrying over its attention backend/parallel config."""
        original = attn.processor
        for attr in ("_attention_backend", "_parallel_config"):
            if hasattr(original, attr) and getattr(original, attr) is not None:
                setattr(processor, attr, getattr(original, attr))
        attn.set_processor(processor)
        self.undo.append(_Undo(attn, "processor", original))
        self.report.replaced.append(
            Replaced(self.path(name), KIND_ATTN_PROCESSOR, type(attn).__name__, tuple(kernels), note)
        )
        self.cover(attn)
        return True

    def on_undo(self, module: nn.Module, fn: Callable[[], None]) -> None:
        """Run ``fn()`` when the injection is undone (in reverse order with the other replacements)."""
        self.undo.append(_Undo(module, "call", fn))


def undo(root: nn.Module) -> int:
    """Undo every replacement recorded on ``root`` (newest first); returns how many were undone."""
    state = get_state(root)
    if state is None:
        return 0
    for u in reversed(state.undo):
        if u.what == "forward":
            current = u.module.__dict__.get("forward")
            if current is None or not is_ours(current):
                raise RuntimeError(
                    f"cannot restore {type(u.module).__name__}: its forward was replaced again after inject() "
                    f"(by {current!r}); remove that wrapper first"
                )
            del u.module.__dict__["forward"]
        elif u.what == "call":
            u.original()
        else:
            ours = u.module.processor
            # a backend chosen after injection (set_attention_backend) stays chosen
            for attr in ("_attention_backend", "_parallel_config"):
                if attr in vars(ours) and hasattr(u.original, attr):
                    setattr(u.original, attr, getattr(ours, attr))
            u.module.set_processor(u.original)
    n = sum(u.what != "call" for u in state.undo)  # replacements (a "call" undoes part of one)
    del root.__dict__[STATE_ATTR]
    return n
