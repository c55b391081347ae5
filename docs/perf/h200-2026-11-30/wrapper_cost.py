"""Host microseconds per call of the public kernel functions, without the launch itself (CPU, no GPU needed).

The fast launch path runs as on a GPU up to the launch: the first call of a shape takes the full path (argument
checks, output allocation, the specialisation key, the cache lookup) and records a launch plan, the repeats replay
it (kernels.launch.LaunchPlans).  Triton's compile/launch is replaced by a fake kernel whose launch only logs
(tests/support/fake_launch.py), and the tensors are small CPU tensors.  A torch add of the same tensors is the
yardstick.  Run: python docs/perf/h200-2026-11-30/wrapper_cost.py
"""
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")  # import the kernels without a GPU

import torch  # noqa: E402

import kernels  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.support import fake_launch  # noqa: E402  (the launch replaced by a no-op that logs)


def main(n=3000):
    fake_launch.install(setattr)
    x = torch.randn(1, 16, 2048, dtype=torch.bfloat16)
    r = torch.randn_like(x)
    sc, sh = torch.randn(1, 1, 2048, dtype=torch.bfloat16), torch.randn(1, 1, 2048, dtype=torch.bfloat16)
    w = torch.nn.Parameter(torch.randn(2048, dtype=torch.bfloat16))
    w2 = torch.nn.Parameter(torch.randn(2048, dtype=torch.bfloat16))  # norm_q's and norm_k's weights
    cos, sin = torch.randn(1, 16, 2048), torch.randn(1, 16, 2048)
    cases = {
        "torch add (yardstick)": lambda: x + r,
        "adaln_rms": lambda: kernels.adaln_rms(x, sc, sh),
        "add_rms_norm_modulate": lambda: kernels.add_rms_norm_modulate(x, r, sc, sh),
        "rms_norm (weight)": lambda: kernels.rms_norm(x, w, 1e-5),
        "qk_norm_rope": lambda: kernels.qk_norm_rope(x, r, w, w2, cos, sin, 1e-5),
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
