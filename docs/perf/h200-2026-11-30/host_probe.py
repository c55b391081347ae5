"""Where the host time of the `triton` e2e mode goes (device-side diagnostic, one GPU).

1. Per kernel at LTX-Video's shapes: host microseconds per call of the public function, of the torch op
   (torch.ops.kernelfleet.*) and of an eager PyTorch add as a yardstick: 300 back-to-back calls, one sync at the
   end; the kernels are small enough here that the loop is bound by the host.
2. cProfile of three denoising steps of the LTX-Video pipeline in `eager` and in `triton` mode (top functions by
   own time), and the host time to enqueue one transformer step against the step's total.
Prints plain text; run: python3 docs/perf/h200-2026-11-30/host_probe.py
"""
import cProfile
import io
import pstats
import time

import torch

import kernels
from workers import e2e
from workers.spec import JobSpec

dev = torch.device("cuda")
bf = torch.bfloat16


def host_us(fn, n=300, warmup=20):
    """Host microseconds per call of ``fn`` (enqueue only, and with the final sync) over ``n`` back-to-back calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    t_enq = time.perf_counter() - t
    torch.cuda.synchronize()
    return t_enq / n * 1e6, (time.perf_counter() - t) / n * 1e6


def kernels_host():
    torch.manual_seed(0)
    x = torch.randn(1, 16, 2048, device=dev, dtype=bf)
    r = torch.randn_like(x)
    sc = torch.randn(1, 1, 2048, device=dev, dtype=bf)
    sh = torch.randn_like(sc)
    norm = torch.nn.RMSNorm(2048, eps=1e-5, device=dev, dtype=bf)
    cos = torch.randn(1, 16, 2048, device=dev)
    sin = torch.randn_like(cos)
    w = norm.weight
    cases = {
        "torch add (yardstick)": lambda: x + r,
        "adaln_rms": lambda: kernels.adaln_rms(x, sc, sh),
        "op adaln_rms": lambda: torch.ops.kernelfleet.adaln_rms(x, sc, sh, None, 1e-6),
        "add_rms_norm_modulate": lambda: kernels.add_rms_norm_modulate(x, r, sc, sh),
        "rms_norm(weight=Parameter)": lambda: kernels.rms_norm(x, w, 1e-5),
        "qk_norm_rope(Parameter weights)": lambda: kernels.qk_norm_rope(x, r, w, w, cos, sin, 1e-5),
        "op qk_norm_rope": lambda: torch.ops.kernelfleet.qk_norm_rope(x, r, w, w, cos, sin, 1e-5),
        "nn.RMSNorm module": lambda: norm(x),
    }
    print("== host us per call (enqueue, with sync) at [1,16,2048] bf16, no_grad")
    with torch.no_grad():
        for name, fn in cases.items():
            enq, tot = host_us(fn)
            print(f"  {name:34s} {enq:8.1f} {tot:8.1f}")
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(300):
            kernels.adaln_rms(x, sc, sh)
        pr.disable()
        torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14)
    print(s.getvalue()[-3500:])


def pipeline_host():
    spec = JobSpec(kind="e2e", model="ltx-video", shape=[25, 480, 704], dtype="bf16", impls=["eager", "triton"],
                   key="probe", params={"steps": 4})
    p = e2e._params(spec)
    s = e2e.setup(spec, dev, p)
    tr = s.pipe.transformer
    for mode in ("eager", "triton"):
        if mode == "triton":
            from kernels.inject import inject
            inject(tr)
        e2e.run_call(s, spec, p, dev)  # warm
        call = e2e.run_call(s, spec, p, dev)
        print(f"== {mode}: ms/step {call.ms_per_step:.2f}")
        pr = cProfile.Profile()
        pr.enable()
        e2e.run_call(s, spec, p, dev)
        pr.disable()
        out = io.StringIO()
        pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue()[-7000:])


if __name__ == "__main__":
    kernels_host()
    pipeline_host()
