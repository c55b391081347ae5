"""The input cases every kernel's correctness job checks, declared once for every registry entry.

Random normal inputs (the ``random`` case) are what a kernel sees most, not what breaks it on a GPU: the cases below
are the ones that do — large activations and 16-bit values near their range's end (a square or a product taken in
the input's precision overflows), rows of zeros and of tiny values (0/0 and flushed denormals in a norm), NaN and
inf (a kernel that swallows them, or invents them), a row width just below and just above the block the kernel
covers a row with (masks and the last partial block), and rows that are views with a row stride larger than the row
(a fused projection's slice).  Each case transforms the entry's own fresh random inputs; the ``activations`` the
entry declares (:attr:`kernels.registry.KernelEntry.activations`; its first tensor input when it declares none) are
what a case scales, zeroes or poisons, never its weights or tables.  The float64 reference runs on the same inputs,
so a case's expectation is always the reference's: NaN where it gives NaN, inf where its result rounded to the
output's dtype overflows (workers/jobs/correctness.py compares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from kernels.launch import next_pow2
from kernels.registry import KernelEntry

NEAR_MAX = 0.5 * torch.finfo(torch.float16).max  # 32,752: half of fp16's largest finite value


@dataclass(frozen=True)
class InputCase:
    name: str
    description: str
    # (entry, shape, dtype, device, generator) -> the case's inputs, or None where the case does not apply
    make: Callable[[KernelEntry, tuple, torch.dtype, torch.device, torch.Generator], dict | None]
    # whether its reference's magnitude differs from the random case's: the max-abs limit then scales with it
    scaled: bool = False


def activations(entry: KernelEntry, inputs: dict) -> list[str]:
    """The names of the inputs a case transforms: the entry's declared activations, else its first tensor input."""
    names = list(entry.activations) or [next(k for k, v in inputs.items() if isinstance(v, torch.Tensor))]
    missing = [n for n in names if not isinstance(inputs.get(n), torch.Tensor)]
    if missing:
        raise ValueError(f"{entry.name} declares activations {missing} that its inputs do not hold")
    return names


def _fresh(entry: KernelEntry, shape: tuple, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> dict:
    return entry.make_inputs(shape, dtype, device, gen)


def _rewritten(inputs: dict, names: Sequence[str], fn: Callable[[torch.Tensor], torch.Tensor]) -> dict:
    """The inputs with each named tensor's values replaced by ``fn(values)``, written in place of the original
    storage so that the entry's layouts (views of a fused projection, strides) are kept."""
    out = dict(inputs)
    for name in names:
        t = inputs[name]
        with torch.no_grad():
            t.copy_(fn(t.detach().to(torch.float64)).to(t.dtype))
        out[name] = t
    return out


def _rows(t: torch.Tensor) -> torch.Tensor:
    """``t`` as rows of its last dim (a view where the layout allows, for writing single rows)."""
    return t.reshape(-1, t.shape[-1]) if t.dim() > 1 else t.reshape(1, -1)


def _scaled(factor_of: Callable[[torch.dtype], float | None]):
    def make(entry, shape, dtype, device, gen):
        factor = factor_of(dtype)
        if factor is None:
            return None
        inputs = _fresh(entry, shape, dtype, device, gen)

        def scale(v):
            peak = v.abs().max()
            return v * (factor / peak) if peak > 0 else v

        return _rewritten(inputs, activations(entry, inputs), scale)

    return make


def _zero_and_tiny_rows(entry, shape, dtype, device, gen):
    inputs = _fresh(entry, shape, dtype, device, gen)
    names = activations(entry, inputs)
    if _rows(inputs[names[0]]).shape[0] < 3:
        return None
    tiny = 8 * torch.finfo(dtype).tiny  # a few times the smallest normal value: squares flush to zero

    def rows(v):
        r = v.clone()
        flat = _rows(r)
        flat[0] = 0.0
        flat[1] = flat[1].sign() * tiny
        return flat.reshape(v.shape)

    return _rewritten(inputs, names, rows)


def _nan_and_inf(entry, shape, dtype, device, gen):
    inputs = _fresh(entry, shape, dtype, device, gen)
    names = activations(entry, inputs)
    if _rows(inputs[names[0]]).shape[0] < 3 or inputs[names[0]].shape[-1] < 3:
        return None

    def poison(v):
        r = v.clone()
        flat = _rows(r)
        flat[0, 1] = float("nan")
        flat[1, 2] = float("inf")
        return flat.reshape(v.shape)

    return _rewritten(inputs, names[:1], poison)


def _strided_rows(entry, shape, dtype, device, gen):
    """Each activation a view of a wider buffer: the row stride is the row plus 8 elements, the last dim unit-stride
    (what a slice of a fused projection hands a kernel)."""
    inputs = _fresh(entry, shape, dtype, device, gen)
    out = dict(inputs)
    for name in activations(entry, inputs):
        t = inputs[name]
        if t.dim() < 2:
            return None
        wide = torch.full((*t.shape[:-1], t.shape[-1] + 8), float("nan"), dtype=t.dtype, device=t.device)
        view = wide[..., : t.shape[-1]]
        view.copy_(t)
        out[name] = view
    return out


def _width(step: int):
    """The shape's last dim moved by ``step`` (by 2 * ``step`` where the kernel takes only even widths) from the
    block that covers it: one element over a power of two, or one under it."""

    def make(entry, shape, dtype, device, gen):
        last = shape[-1]
        block = next_pow2(last)  # the power of two a row of ``last`` elements fills
        for width in (block + step, block + 2 * step):
            new = (*shape[:-1], width)
            if width < 2 or tuple(new) == tuple(shape):
                continue
            try:
                entry.check_shape(new)
            except ValueError:
                continue
            return _fresh(entry, new, dtype, device, gen)
        return None

    return make


RANDOM = InputCase("random", "fresh random normal inputs (the entry's own)", _fresh)
CASES: tuple[InputCase, ...] = (
    RANDOM,
    InputCase("large", "activations scaled to a peak of 300 (in the hundreds)", _scaled(lambda d: 300.0), True),
    InputCase(
        "near_max",
        "16-bit activations scaled to a peak of 32,752, half of fp16's largest value (bf16 takes the same values: near "
        "its own maximum, squares overflow any fp32 sum, the reference's too)",
        _scaled(lambda d: NEAR_MAX if d in (torch.float16, torch.bfloat16) else None),
        True,
    ),
    InputCase("zero_tiny_rows", "a row of zeros and a row of tiny normal values", _zero_and_tiny_rows),
    InputCase("nan_inf", "a NaN in one row and an inf in another of the first activation", _nan_and_inf),
    InputCase("strided_rows", "activations as views of rows 8 elements longer than the row", _strided_rows),
    InputCase("width_over_block", "rows one element wider than a power of two (two: even-only)", _width(1)),
    InputCase("width_under_block", "rows one element narrower than a power of two (two: even-only)", _width(-1)),
)
BY_NAME = {c.name: c for c in CASES}
