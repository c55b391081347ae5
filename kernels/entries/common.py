"""Pieces every registry entry builds its implementations from."""

from __future__ import annotations

import functools
import importlib.util
from typing import Any, Callable, Sequence

import torch

from kernels.arch import interpreting
from kernels.registry import Contract, Impl


def triton_unavailable(device: torch.device) -> str | None:
    if device.type == "cpu" and not interpreting():
        return "Triton needs a GPU, or TRITON_INTERPRET=1 on the CPU"
    return None


def compile_unavailable(mode: str | None) -> Callable[[torch.device], str | None]:
    def check(device: torch.device) -> str | None:
        if mode is not None and device.type == "cpu":
            return f"torch.compile mode={mode} tunes GPU kernels; not run on the CPU"
        return None

    return check


def liger_unavailable(device: torch.device) -> str | None:
    if importlib.util.find_spec("liger_kernel") is None:
        return "liger-kernel is not installed"
    if device.type != "cuda":
        return "liger-kernel runs on a GPU only"
    return None


def compiled(fn: Callable, mode: str | None = None) -> Callable[[], Callable]:
    """A ``make`` for torch.compile of ``fn`` (built once per process, compiled on first call)."""

    @functools.cache
    def make() -> Callable:
        if mode is None:
            return torch.compile(fn, dynamic=False)
        return torch.compile(fn, mode=mode, dynamic=False)

    return make


def compile_impls(eager: Callable) -> dict[str, Impl]:
    """torch.compile of the eager chain in its default mode and in max-autotune-no-cudagraphs (timed side by side)."""
    return {
        "compile": Impl(
            "compile", compiled(eager), compile_unavailable(None), description="torch.compile(eager), default mode"
        ),
        "compile_max": Impl(
            "compile_max",
            compiled(eager, "max-autotune-no-cudagraphs"),
            compile_unavailable("max-autotune-no-cudagraphs"),
            description="torch.compile(eager, mode='max-autotune-no-cudagraphs')",
        ),
    }


def standard_impls(
    triton_fn: Callable, triton_description: str, eager_fn: Callable, eager_description: str
) -> dict[str, Impl]:
    """The implementations every entry has: ``triton`` (takes ``out=`` so correctness can poison it), ``eager``
    (the model's own PyTorch code path) and torch.compile of that eager chain in both modes."""
    return {
        "triton": Impl(
            "triton", lambda: triton_fn, triton_unavailable, accepts_out=True, description=triton_description
        ),
        "eager": Impl("eager", lambda: eager_fn, description=eager_description),
        **compile_impls(eager_fn),
    }


def triton_with_out(public: Callable, into: Callable, **fixed: Any) -> Callable:
    """An entry's ``triton`` implementation, called with the entry's inputs as keywords: the public function
    ``public(**inputs)``, or, with ``out`` given, its ``_into`` variant ``into(out, **inputs)`` (with ``_config``, a
    tune candidate's launch override, when one is given).  ``fixed``: keywords every call adds (rmsnorm's
    ``numerics``)."""

    def call(out=None, _config=None, **inputs):
        if out is None:
            return public(**inputs, **fixed)
        if _config is None:
            return into(out, **inputs, **fixed)
        return into(out, **inputs, **fixed, _config=_config)

    call.__name__ = call.__qualname__ = f"triton_{public.__name__}"
    return call


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def randn(
    shape: Sequence[int],
    dtype: torch.dtype,
    device: torch.device,
    gen: torch.Generator,
    scale: float = 1.0,
    offset: float = 0.0,
) -> torch.Tensor:
    """Fresh standard-normal data drawn on the CPU generator (reproducible from the seed on any device)."""
    t = torch.randn(tuple(shape), generator=gen, dtype=torch.float32)
    if scale != 1.0 or offset != 0.0:
        t = t * scale + offset
    return t.to(device=device, dtype=dtype)


def upcast(inputs: dict) -> dict:
    """Every floating tensor to float64 (on its own device): the reference's view of the inputs."""
    out = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            out[k] = v.detach().to(dtype=torch.float64)
        else:
            out[k] = v
    return out


# The contract of the row kernels of the norm family (one program a row of C, or several rows packed into one): a
# small [B, S, C] and rows that reach the narrow, the middle and the widest rows of their launch tables.
ROW_CONTRACT = Contract(small_shape=(2, 12, 64), launch_shapes=((1, 16, 256), (1, 16, 1024), (1, 16, 8192)))


# The [B, S, C] row kernels that modulate (adaln, adaln_layer_norm, gated_residual, add_rms_norm_modulate): their
# shape check, the spread of their scale/shift/gate rows and the float64 RMS normalisation of their references.
MODULATION_STD = 0.25  # scale/shift ~ N(0, 0.25^2): 1 + scale stays positive almost always, as in the models


def check_shape_bsc(name: str):
    def check(shape: Sequence[int]) -> None:
        if len(shape) != 3 or any(not isinstance(s, int) or s < 1 for s in shape):
            raise ValueError(f"{name} expects a shape [B, S, C] of 3 positive ints; got {list(shape)}")

    return check


def rms_normalised(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
