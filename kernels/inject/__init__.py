"""Put kernelfleet's Triton kernels into diffusers and transformers models, and take them out again.

    from kernels.inject import inject, restore
    report = inject(pipe)            # a diffusers pipeline, a diffusers model or a transformers model
    print(report)                    # what was replaced (module path + kind + kernels) and what was left, and why
    ...
    restore(pipe)                    # the original code again: bit-identical outputs

Families: LTX-Video (:mod:`kernels.inject.ltx`), FLUX (:mod:`kernels.inject.flux`), SD3/SD3.5
(:mod:`kernels.inject.sd3`) and transformers' Llama family (:mod:`kernels.inject.llama`).  Replacement is per
instance (a module's ``forward`` or a diffusers attention processor), so other models in the process are untouched.

===================  ==================================================================================================
module               holds
===================  ==================================================================================================
``__init__``         ``inject``, ``restore``, ``cuda_graphs``: the entry points, and which family a model is
``ltx``, ``flux``,   where the kernels go in each model family
``sd3``, ``llama``
``norms``            norm modules (and norm + modulate) through the kernels where the numerics match
``attention``        the attention call of the injected diffusers processors
``fused_linear``     projections that read the same input as one GEMM (LTX-Video's q/k/v, k/v)
``linear_gelu``      a feed-forward's first projection and its GELU as one GEMM with the GELU in the epilogue
``calls``            calls of plain submodules without ``nn.Module.__call__``
``memo``             one remembered result per tensor object, for per-forward reuse
``grad``             what an injected model does when autograd wants a gradient through a kernel
``graphs``           a module's calls replayed from CUDA (HIP) graphs
``compile_options``  Inductor options for ``torch.compile`` of an injected model
``state``            installing replacements on module instances, and the record ``restore`` undoes
``rules``            the names an injection selects its replacements by
``report``           what an injection did, module by module
===================  ==================================================================================================

* Call ``inject`` before CPU offloading, cache hooks or ``torch.compile``/``compile_repeated_blocks``: a module
  whose forward is already wrapped on the instance is left alone (the report says so).
* ``inject`` twice is harmless: the second call finds its own record and changes nothing (with a different
  ``kernels`` selection it restores first and injects again).
* The replacement code is traceable (no ``.item()``, no Python-side caches keyed on tensors, no data-dependent
  branches), so ``torch.compile(fullgraph=True)`` and ``compile_repeated_blocks(fullgraph=True)`` work on an
  injected model on a GPU.  On the CPU the kernels run under Triton's interpreter (``TRITON_INTERPRET=1`` set
  before ``kernels`` is imported), which works eagerly but cannot be traced.
* Compile with ``options=compile_options(mode)`` (:mod:`kernels.inject.compile_options`): Inductor then launches the
  injected kernels the way it launches its own (static launch), which takes host time off every call.
* ``cuda_graphs(pipe.transformer)`` (:mod:`kernels.inject.graphs`) replays every later call from a CUDA graph: no
  host cost per kernel at all, for static shapes; remove it before ``restore`` or any change to the model.
* The kernels are forward-only.  A call that autograd records (``torch.is_grad_enabled()``) with an input or weight
  that requires grad takes the model's own code for that kernel (``grad="fallback"``, the default), so an injected
  model trains, checkpoints and compiles for training as the stock one does; ``grad="error"`` raises at the first
  such call instead (:mod:`kernels.inject.grad`).  Under ``torch.no_grad()``/``inference_mode()`` (diffusers'
  pipelines run so) every kernel is used.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch.nn as nn

from kernels import registry
from kernels.inject import rules
from kernels.inject.compile_options import compile_options
from kernels.inject.grad import MODES as GRAD_MODES
from kernels.inject.grad import GradNotSupported, check_mode, refuse_grad
from kernels.inject.graphs import GraphedForward, cuda_graphs, remove_cuda_graphs
from kernels.inject.report import InjectionReport, Left, Replaced
from kernels.inject.state import STATE_ATTR, InjectionState, Session, get_state, undo

# Kernels an injection can use: those its rules use (kernels.inject.rules), by their registry names.
KERNEL_NAMES = rules.KERNELS
# Rewrites an injection can make that are not Triton kernels; selected like kernels ("all" includes them).
REWRITES = rules.REWRITES
# Every other kernel of the registry, with why no injection uses it.
NOT_INJECTABLE = rules.not_injectable()

__all__ = [
    "inject",
    "restore",
    "is_injected",
    "compile_options",
    "cuda_graphs",
    "remove_cuda_graphs",
    "GraphedForward",
    "InjectionReport",
    "Replaced",
    "Left",
    "KERNEL_NAMES",
    "REWRITES",
    "GRAD_MODES",
    "GradNotSupported",
]


def _families():
    from kernels.inject import flux, llama, ltx, sd3

    return (ltx, flux, sd3, llama)


def resolve_kernels(kernels: str | Iterable[str]) -> tuple[str, ...]:
    """``"all"`` or an iterable of kernel names -> the sorted tuple of kernel names; a kernel's public function name
    stands for the kernel (``rms_norm`` for ``rmsnorm``: :data:`kernels.registry.PUBLIC_NAMES`); unknown names
    raise ValueError."""
    selectable = KERNEL_NAMES + tuple(REWRITES)
    if isinstance(kernels, str):
        if kernels == "all":
            return tuple(sorted(selectable))
        kernels = [kernels]
    names = [registry.kernel_name(k) if isinstance(k, str) else k for k in kernels]
    for k in names:
        if k in NOT_INJECTABLE:
            raise ValueError(
                f"kernel {k!r} cannot be injected: {NOT_INJECTABLE[k]}; injectable: {', '.join(selectable)}"
            )
        if k not in selectable:
            raise ValueError(
                f"unknown kernel {k!r}; injectable kernels: {', '.join(KERNEL_NAMES)}; rewrites: "
                f"{', '.join(REWRITES)} (or 'all')"
            )
    if not names:
        raise ValueError(f"kernels: empty selection; choose 'all' or some of {', '.join(selectable)}")
    return tuple(sorted(set(names)))


def _roots(obj: Any) -> list[tuple[str, nn.Module]]:
    """(name, module) pairs to inject into: the module itself, or a pipeline's nn.Module components."""
    if isinstance(obj, nn.Module):
        return [("", obj)]
    components = getattr(obj, "components", None)
    if isinstance(components, dict):
        return [(name, m) for name, m in components.items() if isinstance(m, nn.Module)]
    model = getattr(obj, "model", None)  # a transformers pipeline
    if isinstance(model, nn.Module):
        return [("model", model)]
    raise TypeError(
        f"inject() takes a torch.nn.Module (diffusers/transformers model) or a diffusers pipeline; "
        f"got {type(obj).__name__}"
    )


# ----------------------------------------------------------------------------------------------------------------
# What could use a kernel but was left as it is (the final sweep)
# ----------------------------------------------------------------------------------------------------------------
def _candidate_reason(module: nn.Module) -> str | None:
    """A generic reason for a module of a kind a kernel could serve; None for modules of no interest."""
    from diffusers.models import activations as dact
    from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm

    name = type(module).__name__
    if isinstance(module, nn.GELU) or type(module) in (dact.GELU,):
        approx = getattr(module, "approximate", "none")
        if approx == "tanh":
            return NOT_INJECTABLE["gelu_tanh"]
        return "exact (erf) GELU; kernelfleet's gelu_tanh is the tanh approximation"
    if type(module) in (dact.GEGLU, dact.ApproximateGELU, dact.SwiGLU):
        return f"{name}: no kernelfleet kernel with these numerics"
    if isinstance(module, (nn.LayerNorm, nn.RMSNorm, DiffusersRMSNorm)) or name.endswith(("RMSNorm", "LayerNorm")):
        return f"no injection rule for this {name} here (no fusable neighbour, or numerics differ)"
    return None


def _sweep_left(s: Session, root: nn.Module) -> None:
    for name, mod in root.named_modules():
        if s.is_covered(mod):
            continue
        why = s.reason_for(mod) or _candidate_reason(mod)
        if why is not None:
            s.report.left.append(Left(s.path(name), type(mod).__name__, why))


# ----------------------------------------------------------------------------------------------------------------
def _refuse_grad(s: Session, root: nn.Module) -> None:
    """grad="error": the modules whose work the injected code took over raise when asked for a gradient."""
    paths = {mod: s.path(name) for name, mod in root.named_modules() if s.is_covered(mod)}
    if paths:
        s.on_undo(root, refuse_grad(paths))


def _inject_root(prefix: str, root: nn.Module, names: tuple[str, ...], grad: str) -> InjectionReport:
    state = get_state(root)
    if state is not None:
        if state.kernels == names and state.report.grad == grad:
            rep = state.report
            return InjectionReport(
                rep.target, rep.kernels, rep.families, list(rep.replaced), list(rep.left), True, rep.grad
            )
        undo(root)
    report = InjectionReport(type(root).__name__, names, grad=grad)
    s = Session(root, prefix, names, report)
    try:
        for fam in _families():
            fam.inject(s, root)
        if grad == "error":
            _refuse_grad(s, root)
    except BaseException:
        # leave nothing half-done
        root.__dict__[STATE_ATTR] = InjectionState(names, report, s.undo)
        undo(root)
        raise
    _sweep_left(s, root)
    report.families = tuple(s.families)
    root.__dict__[STATE_ATTR] = InjectionState(names, report, s.undo)
    return report


def inject(model_or_pipeline: Any, kernels: str | Iterable[str] = "all", grad: str = "fallback") -> InjectionReport:
    """Replace the parts of ``model_or_pipeline`` that kernelfleet's kernels compute; returns the report.

    ``kernels``: ``"all"`` or the kernel names allowed (see :data:`KERNEL_NAMES`: the registry's names; a kernel's
    public function name is taken for it); a replacement needing only kernels that are not allowed is not made (and
    the report says why).

    ``grad``: what a kernel call does when autograd records it and an input or weight requires grad (the kernels
    are forward-only): ``"fallback"`` computes that call with the model's own code, ``"error"`` raises
    :class:`GradNotSupported` naming the module (:mod:`kernels.inject.grad`).  Injecting again with another
    ``grad`` restores first and injects again.
    """
    grad = check_mode(grad)
    names = resolve_kernels(kernels)
    roots = _roots(model_or_pipeline)
    if len(roots) == 1 and roots[0][0] == "":
        return _inject_root("", roots[0][1], names, grad)
    merged = InjectionReport(type(model_or_pipeline).__name__, names, grad=grad)
    already = True
    for name, root in roots:
        rep = _inject_root(name, root, names, grad)
        merged.replaced += rep.replaced
        merged.left += rep.left
        merged.families = tuple(dict.fromkeys(merged.families + rep.families))
        already = already and rep.already_injected
    merged.already_injected = already and bool(roots)
    return merged


def restore(model_or_pipeline: Any) -> int:
    """Undo :func:`inject` on ``model_or_pipeline`` (a no-op if nothing is injected); returns the number of
    replacements undone.  Undo ``torch.compile``/``compile_repeated_blocks`` first: compiled code keeps what it
    traced."""
    return sum(undo(root) for _, root in _roots(model_or_pipeline))


def is_injected(model_or_pipeline: Any) -> bool:
    return any(get_state(root) is not None for _, root in _roots(model_or_pipeline))
