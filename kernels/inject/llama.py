"""transformers' Llama family: RMSNorm and rotate-half RoPE through kernelfleet kernels.

Two ways in:

* :func:`inject` (via ``kernels.inject.inject``) on an already-built model: per-instance forward replacement.
  ``LlamaRMSNorm``-like modules (any transformers ``*RMSNorm`` whose forward is LlamaRMSNorm's, e.g. Mistral,
  Qwen2) compute through :func:`kernels.rms_norm` with numerics "llama" (``weight * normed.to(input_dtype)``);
  attention modules whose forward calls the module-level ``apply_rotary_pos_emb`` (Llama's rotate-half, with
  cos/sin in the activations' dtype) run their own, unchanged forward code with that one name resolved to
  :func:`kernels.rope_rotate_half` (rounding after each op, as transformers does).
* :func:`patched` / :func:`patch_mapping`: transformers' own patch API (``transformers.monkey_patching``:
  ``register_patch_mapping`` + ``apply_patches``), for models built (``from_pretrained``/``from_config``/a
  constructor) inside the context: ``LlamaRMSNorm`` -> :class:`KernelLlamaRMSNorm`, ``LlamaAttention`` ->
  :class:`KernelLlamaAttention`.

transformers' hub-kernel decorators (``use_kernel_forward_from_hub``, ``use_kernelized_func``) need the Hub
``kernels`` package and downloads; they are no-ops without it, so they are not used here.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import textwrap
import types
from typing import Any, Callable

import torch
import torch.nn as nn

from kernels import rms_norm, rope_rotate_half
from kernels.checks import FLOAT_DTYPES
from kernels.inject import grad
from kernels.inject.grad import grad_enabled, stock_for_grad
from kernels.inject.report import KIND_ATTENTION_FORWARD, KIND_NORM_FORWARD
from kernels.inject.rules import RMSNORM, ROPE_ROTATE_HALF
from kernels.inject.state import MARK, Session, mark

FAMILY = "llama"


def _llama():
    from transformers.models.llama import modeling_llama

    return modeling_llama


def _source(fn: Callable) -> str | None:
    """A function's source without its decorators (None if it has none, e.g. a builtin)."""
    fn = inspect.unwrap(fn)
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    lines = src.splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    return "\n".join(lines)


@functools.cache
def _llama_norm_source() -> str | None:
    return _source(_llama().LlamaRMSNorm.forward)


@functools.cache
def _llama_rope_source() -> str | None:
    return _source(_llama().apply_rotary_pos_emb)


def _from_transformers(cls: type) -> bool:
    return cls.__module__.startswith("transformers.")


# ----------------------------------------------------------------------------------------------------------------
# RMSNorm
# ----------------------------------------------------------------------------------------------------------------
def llama_rms_norm_ok(norm: nn.Module, x: torch.Tensor) -> bool:
    w = getattr(norm, "weight", None)
    return (
        isinstance(w, torch.Tensor)
        and w.dim() == 1
        and w.shape[0] == x.shape[-1]
        and w.dtype in FLOAT_DTYPES
        and w.device == x.device
        and x.dtype in FLOAT_DTYPES
        and x.device.type in ("cuda", "cpu")
        and x.dim() >= 1
    )


@mark
def llama_rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    """``LlamaRMSNorm.forward`` through rms_norm(numerics='llama')."""
    if llama_rms_norm_ok(self, hidden_states) and not (
        grad_enabled() and stock_for_grad(self, RMSNORM, hidden_states, self.weight)
    ):
        return rms_norm(hidden_states, self.weight, float(self.variance_epsilon), numerics="llama")
    return type(self).forward(self, hidden_states)


def llama_norm_compatible(cls: type) -> bool:
    """A transformers ``*RMSNorm`` whose forward is exactly LlamaRMSNorm's (same numerics)."""
    src = _llama_norm_source()
    return (
        _from_transformers(cls) and cls.__name__.endswith("RMSNorm") and src is not None and _source(cls.forward) == src
    )


# ----------------------------------------------------------------------------------------------------------------
# RoPE
# ----------------------------------------------------------------------------------------------------------------
def rope_ok(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, unsqueeze_dim: int) -> bool:
    """rope_rotate_half reproduces transformers' ``x * cos + rotate_half(x) * sin`` (cos/sin unsqueezed at
    ``unsqueeze_dim``) on these tensors: x [B, H, S, D] (unsqueeze_dim 1) or [B, S, H, D] (2), cos/sin [B, S, D]
    in x's dtype (so every op rounds to it, as eager does)."""
    if not (isinstance(cos, torch.Tensor) and isinstance(sin, torch.Tensor)):
        return False
    if unsqueeze_dim not in (1, 2) or x.dim() != 4 or cos.dim() != 3 or cos.shape != sin.shape:
        return False
    seq_dim = 2 if unsqueeze_dim == 1 else 1
    return (
        x.dtype in FLOAT_DTYPES
        and cos.dtype == x.dtype
        and sin.dtype == x.dtype
        and x.shape[-1] % 2 == 0
        and x.device.type in ("cuda", "cpu")
        and cos.device == x.device
        and sin.device == x.device
        and cos.shape[0] in (1, x.shape[0])
        and cos.shape[1] == x.shape[seq_dim]
        and cos.shape[2] == x.shape[-1]
    )


def _calling_module() -> nn.Module | None:
    """The attention module whose forward called ``apply_rotary_pos_emb`` (its ``self``), for the message of
    ``grad="error"``: the function is shared by every instance of the class, so only the caller's frame knows."""
    owner = sys._getframe(2).f_locals.get("self")
    return owner if isinstance(owner, nn.Module) else None


def make_apply_rotary_pos_emb(stock: Callable) -> Callable:
    """A drop-in ``apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)`` through rope_rotate_half."""

    def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
        if (
            rope_ok(q, cos, sin, unsqueeze_dim)
            and rope_ok(k, cos, sin, unsqueeze_dim)
            and not (
                grad_enabled()
                and stock_for_grad(_calling_module() if grad.refusing() else None, ROPE_ROTATE_HALF, q, k, cos, sin)
            )
        ):
            layout = "bhsd" if unsqueeze_dim == 1 else "bshd"
            return rope_rotate_half(q, cos, sin, layout=layout), rope_rotate_half(k, cos, sin, layout=layout)
        return stock(q, k, cos, sin, unsqueeze_dim)

    apply_rotary_pos_emb.__qualname__ = "kernelfleet.apply_rotary_pos_emb"
    return mark(apply_rotary_pos_emb)


def _rebind_global(fn: Callable, name: str, value: Any) -> Callable:
    """A copy of ``fn`` (through any ``functools.wraps`` wrappers) in which the global ``name`` is ``value``.

    The code objects are the original ones: the copy computes exactly what ``fn`` computes, except for that name.
    """
    inner = getattr(fn, "__wrapped__", None)
    if inner is None:
        if name not in fn.__code__.co_names:
            raise LookupError(f"{fn.__qualname__} does not use the global {name!r}")
        globs = dict(fn.__globals__)
        globs[name] = value
        # Without "__name__", torch.compile (Dynamo) guards global lookups on this very dict; with it, Dynamo would
        # guard on the module attribute of that name (the stock function) and recompile on every call.
        globs.pop("__name__", None)
        new = types.FunctionType(fn.__code__, globs, fn.__name__, fn.__defaults__, fn.__closure__)
    else:
        new_inner = _rebind_global(inner, name, value)
        cells = fn.__closure__ or ()
        hits = [i for i, c in enumerate(cells) if c.cell_contents is inner]
        if len(hits) != 1:
            raise LookupError(f"cannot find the function {fn.__qualname__} wraps in its closure")
        closure = tuple(types.CellType(new_inner) if i == hits[0] else c for i, c in enumerate(cells))
        new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    if inner is not None:
        new.__wrapped__ = new_inner
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    return new


_ATTN_FORWARDS: dict[type, Callable | None] = {}  # per attention class: its forward with the kernel RoPE


def attention_forward_for(cls: type) -> Callable | None:
    """``cls.forward`` with ``apply_rotary_pos_emb`` resolved to the kernel, or None if ``cls`` does not use
    Llama's rotate-half RoPE through that module-level name."""
    if cls in _ATTN_FORWARDS:
        return _ATTN_FORWARDS[cls]
    fwd = None
    if _from_transformers(cls) and not getattr(cls, MARK, False):
        base = inspect.unwrap(cls.forward)
        stock = base.__globals__.get("apply_rotary_pos_emb")
        if (
            stock is not None
            and "apply_rotary_pos_emb" in base.__code__.co_names
            and _source(stock) == _llama_rope_source()
        ):
            try:
                fwd = mark(_rebind_global(cls.forward, "apply_rotary_pos_emb", make_apply_rotary_pos_emb(stock)))
            except LookupError:
                fwd = None
    _ATTN_FORWARDS[cls] = fwd
    return fwd


# ----------------------------------------------------------------------------------------------------------------
# transformers' patch API
# ----------------------------------------------------------------------------------------------------------------
@functools.cache
def _patch_classes() -> tuple[type, type]:
    m = _llama()
    attn_forward = attention_forward_for(m.LlamaAttention)
    norm_cls = mark(
        type(
            "KernelLlamaRMSNorm",
            (m.LlamaRMSNorm,),
            {
                "__doc__": "LlamaRMSNorm computed by kernelfleet's rms_norm (numerics 'llama').",
                "__module__": __name__,
                "forward": llama_rms_norm_forward,
            },
        )
    )
    attn_cls = mark(
        type(
            "KernelLlamaAttention",
            (m.LlamaAttention,),
            {
                "__doc__": "LlamaAttention with the rotate-half RoPE computed by kernelfleet's rope_rotate_half.",
                "__module__": __name__,
                "forward": attn_forward,
            },
        )
    )
    return norm_cls, attn_cls


def __getattr__(name: str):
    if name == "KernelLlamaRMSNorm":
        return _patch_classes()[0]
    if name == "KernelLlamaAttention":
        return _patch_classes()[1]
    raise AttributeError(name)


def patch_mapping() -> dict[str, type[nn.Module]]:
    """{transformers class name: kernelfleet replacement class} for ``register_patch_mapping``."""
    norm_cls, attn_cls = _patch_classes()
    return {"LlamaRMSNorm": norm_cls, "LlamaAttention": attn_cls}


@contextlib.contextmanager
def patched(mapping: dict[str, type[nn.Module]] | None = None):
    """Models built inside use the kernel classes (transformers' ``register_patch_mapping`` + ``apply_patches``).

    The global registry is put back as it was on exit (mappings registered before for the same names too).
    """
    from transformers import monkey_patching as mp

    mapping = dict(mapping or patch_mapping())
    before = mp.get_patch_mapping()
    mp.register_patch_mapping(mapping, overwrite=True)
    try:
        with mp.apply_patches():
            yield mapping
    finally:
        mp.unregister_patch_mapping(list(mapping))
        restore = {k: v for k, v in before.items() if k in mapping}
        if restore:
            mp.register_patch_mapping(restore, overwrite=True)


# ----------------------------------------------------------------------------------------------------------------
def _gated_mlp_reason(act: nn.Module) -> str:
    if "gelu" in type(act).__name__.lower():
        return (
            "gated GELU over two projections (act(gate_proj(x)) * up_proj(x), rounding after each op): geglu "
            "takes one [..., 2H] tensor and rounds once, so it would not reproduce this"
        )
    return "SwiGLU-style gate (act(gate) * up): no kernelfleet kernel for it (geglu is GELU-gated)"


def inject(s: Session, root: nn.Module) -> None:
    found = False
    for name, mod in root.named_modules():
        cls = type(mod)
        if not _from_transformers(cls) and not getattr(cls, MARK, False):
            continue
        if getattr(cls, MARK, False):  # built through patched(): kernels already in the class
            found = True
            s.leave(name, mod, "built with kernelfleet's transformers patch classes (kernels already in use)")
            continue
        if cls.__name__.endswith("RMSNorm"):
            if llama_norm_compatible(cls):
                found = True
                if not s.allowed(RMSNORM):
                    s.leave(name, mod, "rmsnorm not selected")
                else:
                    s.replace_forward(
                        name, mod, llama_rms_norm_forward, KIND_NORM_FORWARD, (RMSNORM,), "numerics llama"
                    )
            else:
                s.reason(mod, "its forward differs from LlamaRMSNorm's (other numerics): no kernel reproduces it")
            continue
        fwd = attention_forward_for(cls)
        if fwd is not None:
            found = True
            if not s.allowed(ROPE_ROTATE_HALF):
                s.leave(name, mod, "rope_rotate_half not selected")
            else:
                s.replace_forward(
                    name, mod, fwd, KIND_ATTENTION_FORWARD, (ROPE_ROTATE_HALF,), "rotate-half RoPE on q and k"
                )
        elif cls.__name__.endswith("MLP") and hasattr(mod, "act_fn") and hasattr(mod, "gate_proj"):
            s.reason(mod.act_fn, _gated_mlp_reason(mod.act_fn))
    if found:
        s.family(FAMILY)
