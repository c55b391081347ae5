"""Norm modules (and norm + adaptive modulation) computed by kernelfleet kernels where the numerics match.

Every helper here takes the module it stands in for and decides, from static facts (module type, dtypes, shapes,
devices: all known while tracing, so ``torch.compile(fullgraph=True)`` sees no data-dependent branch), whether
the kernel computes exactly what the module computes, and whether autograd wants a gradient through the call
(:mod:`kernels.inject.grad`); if not, or if it does, it runs the module's own code.  Nothing reads a tensor's
values and nothing is cached on the Python side.

Replacement forwards for diffusers' adaptive norms (``AdaLayerNormZero``, ``AdaLayerNormZeroSingle``,
``AdaLayerNormContinuous``, ``SD35AdaLayerNormZeroX``: LayerNorm + ``* (1 + scale) + shift``), shared by SD3 and
FLUX, and for plain RMSNorm modules (SD3.5's per-head q/k norms) live here too.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm

from kernels import adaln_layer_norm, adaln_rms, rms_norm
from kernels.checks import FLOAT_DTYPES
from kernels.inject.grad import grad_enabled, stock_for_grad
from kernels.inject.rules import ADALN, ADALN_LAYER_NORM, RMSNORM
from kernels.inject.state import mark


def _runs_here(x: torch.Tensor) -> bool:
    """Triton runs on CUDA/ROCm tensors (and CPU tensors under the interpreter, which the kernels check)."""
    return x.device.type in ("cuda", "cpu") and x.dtype in FLOAT_DTYPES


def _param_ok(p: torch.Tensor | None, x: torch.Tensor) -> bool:
    return p is None or (p.dtype == x.dtype and p.device == x.device and p.dim() == 1 and p.shape[0] == x.shape[-1])


def modulation_ok(t: torch.Tensor, x: torch.Tensor) -> bool:
    """scale/shift of shape [B, 1, C] or [B, S, C] for x [B, S, C], in x's dtype and on its device."""
    return (
        t.dim() == 3
        and t.dtype == x.dtype
        and t.device == x.device
        and t.shape[0] in (1, x.shape[0])
        and t.shape[1] in (1, x.shape[1])
        and t.shape[2] == x.shape[2]
    )


# ----------------------------------------------------------------------------------------------------------------
# Plain norms
# ----------------------------------------------------------------------------------------------------------------
def torch_rms_norm_ok(norm: nn.Module, x: torch.Tensor) -> bool:
    """rms_norm(numerics='torch') computes exactly what ``torch.nn.RMSNorm`` ``norm`` computes on ``x``."""
    return (
        type(norm) is nn.RMSNorm
        and len(norm.normalized_shape) == 1
        and norm.normalized_shape[0] == x.shape[-1]
        and _runs_here(x)
        and _param_ok(norm.weight, x)
    )


def torch_eps(norm: nn.Module, x: torch.Tensor) -> float:
    """torch.nn.RMSNorm's eps: ``None`` means the dtype's machine epsilon."""
    return float(norm.eps) if norm.eps is not None else float(torch.finfo(x.dtype).eps)


def rows_rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float, numerics: str) -> torch.Tensor:
    """rms_norm over the last dim of ``x``; a head-transposed ``[B, H, S, D]`` view of a contiguous ``[B, S, H, D]``
    tensor (SD3's q/k) is normalised through that contiguous layout: no copy, and the result has the input's
    strides, as the eager module's output does."""
    if x.dim() == 4 and not x.is_contiguous() and x.transpose(1, 2).is_contiguous():
        return rms_norm(x.transpose(1, 2), weight, eps, numerics=numerics).transpose(1, 2)
    return rms_norm(x, weight, eps, numerics=numerics)


def torch_rms_norm(norm: nn.Module, x: torch.Tensor, use_kernel: bool) -> torch.Tensor:
    """``norm(x)`` for a ``torch.nn.RMSNorm``, through the kernel when it matches."""
    if (
        use_kernel
        and torch_rms_norm_ok(norm, x)
        and not (grad_enabled() and stock_for_grad(norm, RMSNORM, x, norm.weight))
    ):
        return rows_rms_norm(x, norm.weight, torch_eps(norm, x), "torch")
    return norm(x)


def diffusers_rms_norm_ok(norm: nn.Module, x: torch.Tensor) -> bool:
    """rms_norm(numerics='diffusers') computes exactly what diffusers' ``RMSNorm`` computes (no bias, no NPU)."""
    if type(norm) is not DiffusersRMSNorm or getattr(norm, "bias", None) is not None:
        return False
    if len(norm.dim) != 1 or norm.dim[0] != x.shape[-1] or not _runs_here(x):
        return False
    w = norm.weight
    # the weight may differ in dtype from x (rms_norm rounds to a half weight's dtype, keeps fp32 for an fp32 one)
    return w is None or (w.dtype in FLOAT_DTYPES and w.device == x.device and w.dim() == 1)


@mark
def diffusers_rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    """Replacement forward of diffusers ``RMSNorm`` (SD3.5's per-head q/k norms)."""
    if diffusers_rms_norm_ok(self, hidden_states) and not (
        grad_enabled() and stock_for_grad(self, RMSNORM, hidden_states, self.weight)
    ):
        return rows_rms_norm(hidden_states, self.weight, float(self.eps), "diffusers")
    return type(self).forward(self, hidden_states)


# ----------------------------------------------------------------------------------------------------------------
# Norm + modulate
# ----------------------------------------------------------------------------------------------------------------
def rms_modulate_ok(norm: nn.Module, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> bool:
    """adaln_rms reproduces ``norm(x) * (1 + scale) + shift`` for a diffusers RMSNorm ``norm``."""
    if type(norm) is not DiffusersRMSNorm or getattr(norm, "bias", None) is not None:
        return False
    return (
        x.dim() == 3
        and len(norm.dim) == 1
        and norm.dim[0] == x.shape[-1]
        and _runs_here(x)
        and _param_ok(norm.weight, x)
        and modulation_ok(scale, x)
        and modulation_ok(shift, x)
    )


def rms_modulate(
    norm: nn.Module, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, use_kernel: bool
) -> torch.Tensor:
    if (
        use_kernel
        and rms_modulate_ok(norm, x, scale, shift)
        and not (grad_enabled() and stock_for_grad(norm, ADALN, x, scale, shift, norm.weight))
    ):
        return adaln_rms(x, scale, shift, norm.weight, float(norm.eps))
    return norm(x) * (1 + scale) + shift


def layer_norm_modulate_ok(norm: nn.Module, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> bool:
    """adaln_layer_norm reproduces ``norm(x) * (1 + scale) + shift`` for an ``nn.LayerNorm`` ``norm``.

    Exactly ``nn.LayerNorm`` (FP32LayerNorm, a subclass, computes in fp32 and is left alone)."""
    return (
        type(norm) is nn.LayerNorm
        and len(norm.normalized_shape) == 1
        and x.dim() == 3
        and norm.normalized_shape[0] == x.shape[-1]
        and _runs_here(x)
        and _param_ok(norm.weight, x)
        and _param_ok(norm.bias, x)
        and modulation_ok(scale, x)
        and modulation_ok(shift, x)
    )


def layer_norm_modulate(
    norm: nn.Module, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, use_kernel: bool = True
) -> torch.Tensor:
    """``norm(x) * (1 + scale) + shift`` (scale/shift [B, 1, C] or [B, S, C]) through adaln_layer_norm if it matches."""
    if (
        use_kernel
        and layer_norm_modulate_ok(norm, x, scale, shift)
        and not (grad_enabled() and stock_for_grad(norm, ADALN_LAYER_NORM, x, scale, shift, norm.weight, norm.bias))
    ):
        return adaln_layer_norm(x, scale, shift, norm.weight, norm.bias, float(norm.eps))
    return norm(x) * (1 + scale) + shift


def norm_modulate(norm: nn.Module, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """LayerNorm or diffusers RMSNorm, then the modulation, each through its kernel where it matches."""
    if type(norm) is DiffusersRMSNorm:
        return rms_modulate(norm, x, scale, shift, True)
    return layer_norm_modulate(norm, x, scale, shift, True)


def norm_modulate_supported(norm: nn.Module) -> bool:
    """Whether :func:`norm_modulate` can ever use a kernel for this norm module (static check, at injection)."""
    if type(norm) is nn.LayerNorm:
        return len(norm.normalized_shape) == 1
    if type(norm) is DiffusersRMSNorm:
        return getattr(norm, "bias", None) is None and len(norm.dim) == 1
    return False


# ----------------------------------------------------------------------------------------------------------------
# diffusers adaptive norms (their forwards, with the norm + modulate through the kernel)
# ----------------------------------------------------------------------------------------------------------------
@mark
def ada_layer_norm_zero_forward(self, x, timestep=None, class_labels=None, hidden_dtype=None, emb=None):
    """``AdaLayerNormZero.forward`` with LayerNorm + modulate in one kernel."""
    if self.emb is not None:
        emb = self.emb(timestep, class_labels, hidden_dtype=hidden_dtype)
    emb = self.linear(self.silu(emb))
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = emb.chunk(6, dim=1)
    x = layer_norm_modulate(self.norm, x, scale_msa[:, None], shift_msa[:, None])
    return x, gate_msa, shift_mlp, scale_mlp, gate_mlp


@mark
def ada_layer_norm_zero_single_forward(self, x, emb=None):
    """``AdaLayerNormZeroSingle.forward`` (FLUX single blocks) with LayerNorm + modulate in one kernel."""
    emb = self.linear(self.silu(emb))
    shift_msa, scale_msa, gate_msa = emb.chunk(3, dim=1)
    x = layer_norm_modulate(self.norm, x, scale_msa[:, None], shift_msa[:, None])
    return x, gate_msa


@mark
def ada_layer_norm_continuous_forward(self, x, conditioning_embedding):
    """``AdaLayerNormContinuous.forward`` (norm_out; SD3's last context norm) with norm + modulate in one kernel."""
    emb = self.linear(self.silu(conditioning_embedding).to(x.dtype))
    scale, shift = torch.chunk(emb, 2, dim=1)
    return norm_modulate(self.norm, x, scale[:, None, :], shift[:, None, :])


@mark
def sd35_ada_layer_norm_zero_x_forward(self, hidden_states, emb=None):
    """``SD35AdaLayerNormZeroX.forward`` (SD3.5 dual attention): two modulations of one LayerNorm, each one kernel."""
    emb = self.linear(self.silu(emb))
    (shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp, shift_msa2, scale_msa2, gate_msa2) = emb.chunk(
        9, dim=1
    )
    norm = self.norm
    # (emb holds every scale and shift: one of them requires grad only if it does)
    if layer_norm_modulate_ok(norm, hidden_states, scale_msa[:, None], shift_msa[:, None]) and not (
        grad_enabled() and stock_for_grad(norm, ADALN_LAYER_NORM, hidden_states, emb, norm.weight, norm.bias)
    ):
        out = layer_norm_modulate(self.norm, hidden_states, scale_msa[:, None], shift_msa[:, None])
        out2 = layer_norm_modulate(self.norm, hidden_states, scale_msa2[:, None], shift_msa2[:, None])
    else:
        normed = self.norm(hidden_states)
        out = normed * (1 + scale_msa[:, None]) + shift_msa[:, None]
        out2 = normed * (1 + scale_msa2[:, None]) + shift_msa2[:, None]
    return out, gate_msa, shift_mlp, scale_mlp, gate_mlp, out2, gate_msa2
