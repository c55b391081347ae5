"""A tiny registry entry for the profile-job tests (loaded with
KERNELFLEET_PLUGINS=tests.workers.profile_plugin_entries,
or used directly).

``kf_test_scale_shift``: out = x * w + b over rows of width C.  Implementations: ``eager`` (two torch ops),
``fused`` (one ``torch.addcmul``), ``gpu_only`` (unavailable on the CPU) and ``broken`` (raises when called).
"""

from __future__ import annotations

from typing import Sequence

import torch

from kernels.registry import Impl, KernelEntry


def _check_shape(shape: Sequence[int]) -> None:
    if len(shape) != 2 or any(int(s) <= 0 for s in shape):
        raise ValueError(f"kf_test_scale_shift takes shape [rows, C]; got {list(shape)}")


def _make_inputs(shape, dtype, device, gen):
    rows, c = (int(s) for s in shape)
    x = torch.randn(rows, c, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)
    w = torch.randn(c, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)
    b = torch.randn(c, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)
    return {"x": x, "w": w, "b": b}


def _eager(x, w, b):
    return x * w + b


def _fused(x, w, b):
    return torch.addcmul(b, x, w)


def _broken(x, w, b):
    raise RuntimeError("this implementation fails on purpose")


ENTRIES = [
    KernelEntry(
        name="kf_test_scale_shift",
        description="x * w + b (profile-job test kernel)",
        check_shape=_check_shape,
        make_inputs=_make_inputs,
        reference=lambda inp: inp["x"].double() * inp["w"].double() + inp["b"].double(),
        alloc_out=lambda inp: torch.empty_like(inp["x"]),
        impls={
            "eager": Impl("eager", lambda: _eager),
            "fused": Impl("fused", lambda: _fused),
            "gpu_only": Impl(
                "gpu_only", lambda: _fused, unavailable=lambda d: None if d.type == "cuda" else "needs a GPU"
            ),
            "broken": Impl("broken", lambda: _broken),
        },
        bytes_moved=lambda shape, dtype: (
            2 * int(shape[0]) * int(shape[1]) * torch.empty((), dtype=dtype).element_size()
        ),
        flops=lambda shape: 2 * int(shape[0]) * int(shape[1]),
        tolerances={"fp32": (1e-6, 1e-5), "bf16": (1e-2, 1e-2), "fp16": (1e-3, 1e-3)},
        default_impls=("eager", "fused"),
    )
]
