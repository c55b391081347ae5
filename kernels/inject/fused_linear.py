"""Projections that read the same input, computed as one GEMM: LTX-Video's attn1 q/k/v and attn2 k/v.

Each of the three projections of a self-attention reads the same ``[B, S, C]`` input, and eager PyTorch launches
three GEMMs for them (and two for a cross-attention's key and value, which read the text states).  :func:`fuse`
concatenates the weights (and biases) of such a group of ``nn.Linear`` modules once and makes each module's own
weight and bias views of their rows of the concatenation, so the model holds no second copy; one
``F.linear(x, weight, bias)`` then yields all the projections, split along the last dim as views (batch and token
strides of the whole, unit-stride channels: what the kernels and SDPA take).

The modules keep computing exactly what they computed: their values are unchanged and each view is contiguous.
:meth:`FusedLinear.intact` says whether every module still holds its view (``model.to(...)``, offloading or a new
``Parameter`` replace them; the caller then uses the modules as they are), and :func:`unshare` gives each module
its own storage again (``restore``), so that, e.g., safetensors, which refuses tensors that share memory, can save
the model.  The fused result differs from the separate GEMMs only by the GEMM's own rounding order.

Code that torch.compile traces cannot read addresses.  :class:`ForwardCheck` checks every group of one model at the
start of each of the model's forwards (a forward pre-hook) and keeps the answer in a plain bool that the calls
during that forward read instead: Dynamo guards the bool's value, so compiled blocks (``compile_repeated_blocks``)
use the fused GEMM while the model's eager forward has found the groups intact, and are compiled again without it
otherwise; eager calls save their own check (one per group per forward either way).  Weights replaced during a
forward, after it started, are not seen until the next one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from kernels.inject.calls import plain


def _addresses(linears) -> tuple[int, ...]:
    # each module's weight and bias address, read from its parameter dict: ``m.weight`` goes through
    # nn.Module.__getattr__, several times slower, and this runs for every group at every forward of the model (a
    # tensor set in place of a parameter leaves the dict, so the addresses differ and the group is not intact)
    out = []
    for m in linears:
        params = m._parameters
        for name in ("weight", "bias"):
            p = params.get(name)
            if p is not None:
                out.append(p.data_ptr())
    return tuple(out)


@dataclass(eq=False)
class FusedLinear:
    linears: tuple[nn.Linear, ...]
    weight: torch.Tensor  # [sum of out_features, in_features]; each module's weight is a view of its rows
    bias: torch.Tensor | None  # the same for the biases
    sizes: tuple[int, ...]  # out_features of each module, in order
    addresses: tuple[int, ...]  # each weight's and bias's address once fused
    check: ForwardCheck | None = None  # the model's check per forward (None: compiled code keeps them separate)

    def intact(self) -> bool:
        """Every module still holds its view of the fused weight (and bias)."""
        return _addresses(self.linears) == self.addresses

    def usable(self) -> bool:
        """Whether this call may use the fused GEMM: what the model's :class:`ForwardCheck` found at the start of
        the forward in progress; outside one (or where it found a group broken), :meth:`intact` in eager calls and
        False while torch.compile traces."""
        if self.check is not None and self.check.intact:
            return True
        return not torch.compiler.is_compiling() and self.intact()

    def parameters(self) -> list[torch.Tensor]:
        """The modules' weights and biases as they are now (for the gradient check: the concatenation itself
        carries no gradient to them, so a call that must give them one takes the separate projections)."""
        return [p for m in self.linears for p in m._parameters.values() if p is not None]

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``tuple(m(x) for m in linears)`` as one GEMM (views of its output)."""
        return F.linear(x, self.weight, self.bias).split(self.sizes, dim=-1)


class ForwardCheck:
    """Whether every fused group of one model is :meth:`~FusedLinear.intact`, found once per forward of the model.

    :meth:`attach` registers a forward pre-hook that sets :attr:`intact` from the groups' addresses before the
    model's forward runs, and a forward hook (also run when the forward raises) that clears it after, so a block
    called on its own, outside a forward of the model, never relies on an earlier answer.  A forward that is itself
    traced (torch.compile of the whole model) cannot read addresses: it sets False, and the projections stay
    separate there.
    """

    def __init__(self, groups):
        self.groups = tuple(groups)
        self.intact = False

    def _before(self, module, args) -> None:
        self.intact = not torch.compiler.is_compiling() and all(g.intact() for g in self.groups)

    def _after(self, module, args, output) -> None:
        self.intact = False

    def attach(self, model: nn.Module):
        """Check at every forward of ``model`` and let the groups read the answer; returns a function that undoes
        both."""
        handles = (
            model.register_forward_pre_hook(self._before),
            model.register_forward_hook(self._after, always_call=True),
        )
        for g in self.groups:
            g.check = self

        def detach() -> None:
            for h in handles:
                h.remove()
            for g in self.groups:
                g.check = None
            self.intact = False

        return detach


def why_not(linears) -> str | None:
    """Why these modules cannot be fused (None if they can)."""
    first = linears[0]
    if not all(plain(m, nn.Linear) for m in linears):
        return "not all plain nn.Linear (a subclass, a replaced forward or hooks)"
    if len({(m.in_features, m.weight.dtype, m.weight.device) for m in linears}) != 1:
        return "in_features, dtype or device differ"
    if len({m.bias is None for m in linears}) != 1:
        return "some have a bias and some do not"
    if any(
        not m.weight.is_contiguous() or (m.bias is not None and m.bias.dtype != first.weight.dtype) for m in linears
    ):
        return "a weight is not contiguous or a bias has another dtype"
    if first.weight.device.type == "meta":
        return "the weights are on the meta device (not loaded)"
    return None


@torch.no_grad()
def fuse(linears) -> FusedLinear:
    """Concatenate the modules' weights and biases and make each module's parameters views of their rows."""
    linears = tuple(linears)
    why = why_not(linears)
    if why:
        raise ValueError(f"cannot fuse these projections: {why}")
    weight = torch.cat([m.weight for m in linears])
    bias = None if linears[0].bias is None else torch.cat([m.bias for m in linears])
    start = 0
    for m in linears:
        rows = slice(start, start + m.out_features)
        m.weight.data = weight[rows]
        if bias is not None:
            m.bias.data = bias[rows]
        start = rows.stop
    return FusedLinear(linears, weight, bias, tuple(m.out_features for m in linears), _addresses(linears))


@torch.no_grad()
def unshare(fused: FusedLinear) -> None:
    """Give each module that still holds a view of the fused weight (or bias) its own copy, and drop ``fused``'s
    own references, so the concatenation is freed now (not when the last holder of ``fused`` goes: restoring a
    whole model would otherwise hold every concatenation and its copies at once, +1.2 GB at the peak for the
    full-size LTX-Video); ``fused`` is no longer :meth:`~FusedLinear.intact`."""
    for m in fused.linears:
        for p, whole in ((m.weight, fused.weight), (m.bias, fused.bias)):
            if (
                p is not None
                and whole is not None
                and p.untyped_storage().data_ptr() == whole.untyped_storage().data_ptr()
            ):
                p.data = p.data.clone()
    fused.weight = fused.bias = None
    fused.addresses = ()
