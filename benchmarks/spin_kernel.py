"""A Triton kernel that never returns, for rehearsing a fleet's fault handling on real GPU nodes.

Load it with ``KERNELFLEET_PLUGINS=benchmarks.spin_kernel`` (the variable travels to the nodes with the sweep, and
``benchmarks/`` travels with the sweep's code): it registers the kernel ``fault_spin``, whose ``spin`` implementation
launches one program that polls a flag nobody sets.  On a GPU the job's process then waits on the device forever;
on a CPU (Triton's interpreter) it loops in Python.  Either way the sandbox must time the job out (``sweep.timeout_s``),
kill its process group, and go on with the next job on the same node.

    KERNELFLEET_PLUGINS=benchmarks.spin_kernel python -m orchestrator +sweep=rmsnorm sweep.timeout_s=20 \\
        '+kernel@kernels.spin=rmsnorm' kernels.spin.name=fault_spin 'kernels.spin.shapes=[[16]]' \\
        'kernels.spin.dtypes=[fp32]' 'kernels.spin.impls=[spin]'
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.registry import Impl, KernelEntry


@triton.jit
def _spin_kernel(flag_ptr, out_ptr):
    # a volatile load is re-issued every iteration: the loop cannot be folded away, and nothing ever writes the flag
    seen = tl.load(flag_ptr, volatile=True)
    while seen == 0:
        seen = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr, seen)


def spin(x: torch.Tensor) -> torch.Tensor:
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    out = torch.empty(1, dtype=torch.int32, device=x.device)
    _spin_kernel[(1,)](flag, out)
    if x.is_cuda:
        torch.cuda.synchronize(x.device)  # waits for a kernel that never ends
    return x.clone()


def _check_shape(shape) -> None:
    if len(shape) != 1:
        raise ValueError(f"expected a 1-D shape [N], got {list(shape)}")


def _inputs(shape, dtype, device, gen):
    return {"x": torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)}


ENTRIES = [
    KernelEntry(
        name="fault_spin",
        description="fault rehearsal: a Triton kernel that never returns",
        check_shape=_check_shape,
        make_inputs=_inputs,
        reference=lambda inp: inp["x"].double(),
        alloc_out=lambda inp: torch.empty_like(inp["x"]),
        impls={"spin": Impl("spin", lambda: spin), "eager": Impl("eager", lambda: lambda x: x.clone())},
        bytes_moved=lambda shape, dtype: 2 * shape[0] * torch.tensor([], dtype=dtype).element_size(),
        flops=lambda shape: 0,
        tolerances={"fp32": (1e-6, 1e-6), "bf16": (1e-2, 1e-2), "fp16": (1e-3, 1e-3)},
        default_impls=("spin", "eager"),
        not_injected="a fault rehearsal kernel; no model uses it",
    )
]
