"""Per-architecture launch parameters and the checks every Triton wrapper shares.

One table, keyed by the architecture the device reports (``sm_90``, ``gfx950``, ``gfx1201``...), gives the warp
(wavefront) size and the warps per program for a row of a given width.  No entry is tuned yet: on the H200 the
RMSNorm kernel reached 88-98 % of the copy ceiling launch-free (>= 64 MB) with the sm_90 entry as it
stands (docs/perf/rmsnorm-h200-2026-11-29.md), but a sweep of its knobs has not been run; the AMD entries follow the ROCm
guidance the project started from (wave64 on CDNA, wave32 on RDNA; 4/8/16 warps by row width) and have NOT run on
AMD hardware.  ``measured`` says which entries come from a tuning sweep on that architecture.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ArchLaunch:
    arch: str
    warp_size: int
    # (max BLOCK width, num_warps) for row kernels, ascending by width; the last entry covers anything wider
    row_warps: tuple[tuple[int, int], ...]
    # elements per program for purely elementwise kernels
    elementwise_block: int
    measured: bool  # whether these numbers come from a measurement on this architecture


_TABLE: dict[str, ArchLaunch] = {
    # NVIDIA Hopper (H100/H200).
    "sm_90": ArchLaunch("sm_90", 32, ((512, 2), (1024, 4), (2048, 8), (4096, 8), (1 << 30, 16)), 2048, False),
    # AMD CDNA3+/4 (MI300X gfx942, MI355X gfx950): wave64, so half the warps cover the same row.
    "gfx950": ArchLaunch("gfx950", 64, ((1024, 4), (4096, 8), (1 << 30, 16)), 2048, False),
    "gfx942": ArchLaunch("gfx942", 64, ((1024, 4), (4096, 8), (1 << 30, 16)), 2048, False),
    # AMD RDNA4 (R9700 gfx1201) and RDNA3 (gfx1100): wave32; nw=32 measured worst in the seed, so cap at 16.
    "gfx1201": ArchLaunch("gfx1201", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False),
    "gfx1100": ArchLaunch("gfx1100", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False),
}
# Anything else (other NVIDIA generations, the CPU interpreter): the generic row heuristic.
_GENERIC = ArchLaunch("generic", 32, ((1024, 4), (4096, 8), (1 << 30, 16)), 1024, False)


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.lru_cache(maxsize=None)
def device_arch(index: int = 0) -> str:
    """sm_XY on CUDA, the gfx name (without feature suffixes) on ROCm, 'cpu' without a GPU."""
    if not torch.cuda.is_available():
        return "cpu"
    props = torch.cuda.get_device_properties(index)
    gcn = getattr(props, "gcnArchName", "") or ""
    if torch.version.hip is not None and gcn:
        return gcn.split(":")[0]
    return f"sm_{props.major}{props.minor}"


def arch_launch(device: torch.device | None = None) -> ArchLaunch:
    if device is None or device.type != "cuda":
        return _GENERIC
    arch = device_arch(device.index or 0)
    return _TABLE.get(arch, _GENERIC)


def row_num_warps(block: int, device: torch.device | None = None) -> int:
    for width, warps in arch_launch(device).row_warps:
        if block <= width:
            return warps
    return arch_launch(device).row_warps[-1][1]


def check_device(name: str, t: torch.Tensor) -> None:
    """A Triton kernel runs on a GPU tensor, or on a CPU tensor under the interpreter (TRITON_INTERPRET=1)."""
    if t.device.type == "cpu" and not interpreting():
        raise ValueError(
            f"{name} is a CPU tensor; Triton kernels need a GPU tensor, or TRITON_INTERPRET=1 to run on the CPU")
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name} is on {t.device}; expected a CUDA/ROCm (torch 'cuda') or CPU tensor")


FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def check_float(name: str, t: torch.Tensor) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} has dtype {t.dtype}; expected one of float32, bfloat16, float16")


def no_backward(op_name: str):
    """A setup_context/backward pair for torch.library ops that are inference-only."""

    def backward(ctx, *grads):
        raise RuntimeError(f"{op_name} is forward-only (inference); backward is not implemented")

    def setup_context(ctx, inputs, output):
        return None

    return backward, setup_context


def _current_dispatch_mode():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    return _get_current_dispatch_mode()


def eager_direct(*tensors: torch.Tensor | None) -> bool:
    """Whether a public kernel function may launch its kernel directly instead of calling its torch op.

    The op's dispatch costs tens of microseconds of host time per call, which is the whole runtime of a small
    kernel.  A direct launch computes the same thing, so it is taken in plain eager calls; the op is used while
    torch.compile traces (so it sees the op), for tensor subclasses and fake tensors, and when autograd has to
    record the op (so that backward raises its forward-only error).
    """
    if torch.compiler.is_compiling() or torch.jit.is_tracing() or _current_dispatch_mode() is not None:
        return False  # traced (torch.compile, jit.trace, make_fx, export, fake tensors): the op must be seen
    grad = torch.is_grad_enabled()
    for t in tensors:
        if t is not None and (type(t) not in _PLAIN or (grad and t.requires_grad)):
            return False
    return True


# Tensors a direct launch may take: plain tensors and module parameters (a weight is an nn.Parameter); any other
# subclass goes through the op so that its __torch_dispatch__/__torch_function__ sees the call.
_PLAIN = (torch.Tensor, torch.nn.Parameter)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): ``triton.next_power_of_2`` without its per-call cost
    (a @jit function called from Python); for plain ints only."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def cdiv(a, b):
    """Ceiling division for ints and SymInts (``triton.cdiv`` without its per-call cost)."""
    return (a + b - 1) // b
