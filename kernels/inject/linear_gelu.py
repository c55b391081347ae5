"""A feed-forward's first projection and its GELU (tanh approximation) as one GEMM with the GELU in the epilogue.

diffusers' ``GELU(approximate="tanh")`` module (the first layer of LTX-Video's feed-forward) computes ``gelu(x @ W.T
+ b)``: a GEMM that writes its ``[tokens, 4C]`` result, then an elementwise kernel that reads it back and writes the
activation.  At the ltx_e2e sweep's default setting (25 frames at 480x704) that round trip is 86 MB per block, about
26 us at the H200's copy bandwidth, 28 times per denoising step.  ``torch._addmm_activation(b, x, W.T,
use_gelu=True)`` asks cuBLASLt for the GEMM with its GELU-and-bias epilogue (the tanh approximation; hipBLASLt on
ROCm has the same epilogue), so the activation is applied to the fp32 accumulator before the one store.  Where the
BLAS library cannot take the epilogue, PyTorch's CUDA/ROCm code applies ``gelu(approximate="tanh")`` to the GEMM's
result: the same function either way.  On the CPU, ``_addmm_activation`` applies the exact (erf) GELU instead, so
there this function computes the two eager ops (nothing is fused on the CPU; the tests there check where it is used,
the GPU tests what it computes).

Numerics: eager rounds the GEMM's result to the model's dtype and computes GELU from that; the epilogue computes
GELU from the unrounded fp32 sum, so the two differ by about one rounding of the activation's input (one bf16 ulp
of the pre-activation at most), the same order as a different GEMM algorithm.

Under torch.compile the GEMM is the opaque op ``kernelfleet::addmm_gelu_tanh``: Inductor would otherwise
decompose ``_addmm_activation`` into a GEMM and a separate pointwise kernel.

Where it goes: LTX-Video's injected block forward calls :func:`linear_gelu` for its feed-forward
(:mod:`kernels.inject.ltx`); FLUX's and SD3's feed-forwards keep their blocks' code and get
:func:`inject_gelu_projections`, which replaces the forward of each diffusers ``GELU(approximate="tanh")``
projection module (``ff.net[0]``, ``ff_context.net[0]``).
"""

from __future__ import annotations

import functools

import torch
import torch.nn as nn
from diffusers.models.activations import GELU

from kernels.inject.calls import plain
from kernels.inject.grad import grad_enabled, stock_for_grad
from kernels.inject.report import KIND_ACTIVATION_FORWARD
from kernels.inject.rules import LINEAR_GELU
from kernels.inject.state import Session, mark

# bias + mat1 @ mat2 and its GELU-tanh in cuBLASLt's (hipBLASLt's) epilogue; on the CPU the erf GELU instead
_ADDMM_GELU_TANH = functools.partial(torch._addmm_activation, use_gelu=True)


def _on_rows(addmm_gelu, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``addmm_gelu(bias, mat1, mat2)`` on x's rows and the transposed weight, shaped back like x."""
    out = addmm_gelu(bias, x.reshape(-1, x.shape[-1]), weight.t())
    return out.view(*x.shape[:-1], weight.shape[0])


def _addmm_gelu_tanh_cpu(bias: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(torch.addmm(bias, mat1, mat2), approximate="tanh")


# ``kernelfleet::addmm_gelu_tanh(bias, mat1, mat2)`` = ``gelu(bias + mat1 @ mat2, approximate="tanh")``, 2-D like
# ``addmm``: the traced graph does the reshape of x and the transpose of the weight (Inductor turns them into views
# in its wrapper), so the CUDA kernel is ``_addmm_activation`` itself, with no Python frame of ours in between.
# Defined with the plain ``torch.library.Library`` calls rather than ``torch.library.custom_op``, whose Python
# autograd and output-aliasing wrappers run on every call of the compiled graph: on the H200 a call from a
# compiled LTX-Video block cost 53 us of host time more than calling the function itself, a plain op 13 us more;
# with the reshape, transpose and view inside the op's Python function the op still cost more host time than
# Inductor's addmm + GELU kernel (docs/perf/ltx-e2e-h200.md, host cost of compiled injected blocks).  No autograd
# kernel: the callers take the model's own code for a call that wants a gradient (kernels.inject.grad).
_LIB = torch.library.Library("kernelfleet", "FRAGMENT")
_LIB.define("addmm_gelu_tanh(Tensor bias, Tensor mat1, Tensor mat2) -> Tensor")
_LIB.impl("addmm_gelu_tanh", _ADDMM_GELU_TANH, "CUDA")
_LIB.impl("addmm_gelu_tanh", _addmm_gelu_tanh_cpu, "CPU")


@torch.library.register_fake("kernelfleet::addmm_gelu_tanh", lib=_LIB)
def _(bias, mat1, mat2):
    return mat1.new_empty((mat1.shape[0], mat2.shape[1]))


def linear_gelu_ok(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> bool:
    """Whether :func:`linear_gelu` computes ``F.gelu(F.linear(x, weight, bias), approximate="tanh")`` here: a
    bias, one floating dtype and one device for all three (CUDA, ROCm or CPU).  Whether autograd wants a gradient
    through the call the caller asks :mod:`kernels.inject.grad` (the compiled op has no backward)."""
    if bias is None or x.dim() < 2 or weight.dim() != 2 or bias.dim() != 1:
        return False
    if not (x.dtype == weight.dtype == bias.dtype and x.dtype in (torch.bfloat16, torch.float16, torch.float32)):
        return False
    if not (x.device == weight.device == bias.device and x.device.type in ("cuda", "cpu")):
        return False
    return x.shape[-1] == weight.shape[1] and bias.shape[0] == weight.shape[0] and x.numel() != 0


def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``gelu(x @ weight.T + bias, approximate="tanh")`` as one GEMM (see the module doc); check
    :func:`linear_gelu_ok` first."""
    if torch.compiler.is_compiling():
        return _on_rows(torch.ops.kernelfleet.addmm_gelu_tanh, x, weight, bias)
    if x.device.type != "cuda":  # the CPU's _addmm_activation is the erf GELU
        return torch.nn.functional.gelu(torch.nn.functional.linear(x, weight, bias), approximate="tanh")
    return _on_rows(_ADDMM_GELU_TANH, x, weight, bias)


def gelu_projection_ok(module: nn.Module) -> bool:
    """``module`` is diffusers' GELU with the tanh approximation and a plain projection that has a bias."""
    return (
        type(module) is GELU
        and module.approximate == "tanh"
        and plain(module.proj, nn.Linear)
        and module.proj.bias is not None
    )


@mark
def gelu_projection_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    """diffusers ``GELU.forward`` (projection, then GELU-tanh) as one GEMM where :func:`linear_gelu_ok`; otherwise
    the class's own forward."""
    proj = self.proj
    if (
        plain(proj, nn.Linear)
        and linear_gelu_ok(hidden_states, proj.weight, proj.bias)
        and not (grad_enabled() and stock_for_grad(self, LINEAR_GELU, hidden_states, proj.weight, proj.bias))
    ):
        return linear_gelu(hidden_states, proj.weight, proj.bias)
    return GELU.forward(self, hidden_states)


def inject_gelu_projections(s: Session, root: nn.Module) -> None:
    """Every diffusers GELU-tanh projection module under ``root`` not yet handled: its forward through
    :func:`linear_gelu` (when ``linear_gelu`` is selected)."""
    for name, mod in root.named_modules():
        if type(mod) is not GELU or s.is_covered(mod):
            continue
        if not s.allowed(LINEAR_GELU):
            s.reason(mod, "linear_gelu not selected")
        elif not gelu_projection_ok(mod):
            s.reason(mod, "linear_gelu: not the tanh approximation with a plain biased projection")
        else:
            s.replace_forward(
                name,
                mod,
                gelu_projection_forward,
                KIND_ACTIVATION_FORWARD,
                (LINEAR_GELU,),
                "projection + GELU-tanh as one GEMM (BLAS epilogue)",
            )
