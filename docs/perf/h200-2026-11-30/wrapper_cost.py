"""Host microseconds per call of the public kernel functions, without the launch itself (CPU, no GPU needed).

The fast launch path runs as on a GPU up to the launch: argument checks, output allocation, the specialisation key,
the cache lookup; Triton's compile/launch is replaced by a no-op kernel object, and the tensors are small CPU
tensors.  A torch add of the same tensors is the yardstick.  Run: python docs/perf/h200-2026-11-30/wrapper_cost.py
"""
import os
import time

os.environ.setdefault("TRITON_INTERPRET", "1")  # import the kernels without a GPU

import torch  # noqa: E402

import kernels  # noqa: E402
from kernels import launch  # noqa: E402


class _NoLaunch:
    """Stands in for a compiled kernel (``run`` does nothing) and for Triton's launch path (returns itself)."""

    function = packed_metadata = None

    def __init__(self, fn):
        self.arg_names = fn.arg_names

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self

    def run(self, *args):
        pass


def without_launches():
    """Patch the fast launch path to run as on a GPU up to the launch, and the launch to do nothing."""
    real = launch.DirectLauncher._launch

    def launch_without_triton(self, grid, *args, **kwargs):
        if not isinstance(self.fn, _NoLaunch):
            self.fn = _NoLaunch(self.fn)
        saved = launch.interpreting
        launch.interpreting = lambda: False
        try:
            return real(self, grid, *args, **kwargs)
        finally:
            launch.interpreting = saved

    launch.DirectLauncher._launch = launch_without_triton
    launch._FAST_SUPPORTED = True
    launch._launch_hooks_set = lambda: False
    torch.cuda.current_device = lambda: 0
    torch._C._cuda_getCurrentRawStream = lambda device: 0


def main(n=3000):
    without_launches()
    x = torch.randn(1, 16, 2048, dtype=torch.bfloat16)
    r = torch.randn_like(x)
    sc, sh = torch.randn(1, 1, 2048, dtype=torch.bfloat16), torch.randn(1, 1, 2048, dtype=torch.bfloat16)
    w = torch.nn.Parameter(torch.randn(2048, dtype=torch.bfloat16))
    cos, sin = torch.randn(1, 16, 2048), torch.randn(1, 16, 2048)
    cases = {
        "torch add (yardstick)": lambda: x + r,
        "adaln_rms": lambda: kernels.adaln_rms(x, sc, sh),
        "add_rms_norm_modulate": lambda: kernels.add_rms_norm_modulate(x, r, sc, sh),
        "rms_norm (weight)": lambda: kernels.rms_norm(x, w, 1e-5),
        "qk_norm_rope": lambda: kernels.qk_norm_rope(x, r, w, w, cos, sin, 1e-5),
    }
    with torch.no_grad():
        for name, fn in cases.items():
            for _ in range(50):
                fn()
            t = time.perf_counter()
            for _ in range(n):
                fn()
            print(f"{name:24s} {(time.perf_counter() - t) / n * 1e6:6.1f} us per call")


if __name__ == "__main__":
    main()
