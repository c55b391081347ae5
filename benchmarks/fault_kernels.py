"""Plugin kernels that fail on purpose, for the tests and the overhead benchmarks: loaded with
KERNELFLEET_PLUGINS=benchmarks.fault_kernels.

`fault_segv` kills its process with SIGSEGV (a stand-in for a GPU memory fault), `fault_exit` calls os._exit,
`fault_hang` never returns, `fault_hog` fills 2 GiB of RAM and holds it, `fault_raise` raises, `noop` returns its
input at once (for overhead measurements).
All are plain torch: they exercise the sandbox, not Triton.
"""

from __future__ import annotations

import os
import signal
import time

import torch

from kernels.registry import Impl, KernelEntry

HOG_BYTES = 2 << 30  # what fault_hog holds: over the sandbox memory limit its test sets


def _check_shape(shape):
    if len(shape) != 1:
        raise ValueError(f"expected a 1-D shape [N], got {list(shape)}")


def _inputs(shape, dtype, device, gen):
    return {"x": torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)}


def _entry(name: str, body) -> KernelEntry:
    def make():
        return body

    return KernelEntry(
        name=name,
        description=f"test-only: {name}",
        check_shape=_check_shape,
        make_inputs=_inputs,
        reference=lambda inp: inp["x"].double(),
        alloc_out=lambda inp: torch.empty_like(inp["x"]),
        impls={"boom": Impl("boom", make), "eager": Impl("eager", lambda: lambda x: x.clone())},
        bytes_moved=lambda shape, dtype: 2 * shape[0] * torch.tensor([], dtype=dtype).element_size(),
        flops=lambda shape: 0,
        tolerances={"fp32": (1e-6, 1e-6), "bf16": (1e-2, 1e-2), "fp16": (1e-3, 1e-3)},
        default_impls=("boom", "eager"),
    )


def _segv(x):
    os.kill(os.getpid(), signal.SIGSEGV)


def _exit(x):
    os._exit(3)


def _hang(x):
    while True:
        time.sleep(1)


def _hog(x):
    held = torch.ones(HOG_BYTES // 4, dtype=torch.float32)  # written, so resident
    while True:
        time.sleep(1 + held[0].item())


def _raise(x):
    raise RuntimeError("planted failure")


ENTRIES = [
    _entry("fault_segv", _segv),
    _entry("fault_exit", _exit),
    _entry("fault_hang", _hang),
    _entry("fault_raise", _raise),
    _entry("fault_hog", _hog),
    _entry("noop", lambda x: x.clone()),
]


def enable() -> None:
    """Add this module to KERNELFLEET_PLUGINS (keeping any others), for this process and the sandboxes it starts;
    call it before the kernel registry is first used."""
    plugins = [p for p in os.environ.get("KERNELFLEET_PLUGINS", "").split(",") if p]
    if __name__ not in plugins:
        os.environ["KERNELFLEET_PLUGINS"] = ",".join(plugins + [__name__])
