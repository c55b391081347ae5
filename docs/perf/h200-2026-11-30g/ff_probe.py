"""Device-side probe for the linear_gelu rewrite and the +graph modes (one GPU, nothing else running).

1. LTX-Video's feed-forward projection at the seed setting ([2640, 2048] @ [2048, 8192] + bias, bf16): F.linear then
   F.gelu(tanh) (eager: 2 kernels) against kernels.inject.linear_gelu (torch._addmm_activation, use_gelu=True:
   cuBLASLt's GELU-bias epilogue).  Median us per call over 200 interleaved calls (CUDA events around 20 calls),
   the kernels one call launches (torch.profiler), and the max abs error of each against float64 gelu-tanh (and
   erf GELU, to show which one the epilogue computes).
2. The full-size transformer's forward at the seed setting, replayed from a CUDA graph (workers.e2e_graph): device
   ms per forward over 20 back-to-back replays (CUDA events), against the kernels' own time in one profiled replay
   (sum of kernel durations): the difference is the device's idle time between kernels inside the graph.
   Modes: eager; injected ("all"); injected without linear_gelu.
Run on the device: python3 docs/perf/h200-2026-11-30g/ff_probe.py
"""
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, "docs/perf/h200-2026-11-30")
from host_probe_2 import _ltx_inputs, ltx_transformer  # noqa: E402  (the seed setting's inputs)

dev = torch.device("cuda")
bf = torch.bfloat16


def kernels_of(fn):
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [(e.name, e.device_time) for e in evs]


def part1():
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(2, 1320, 2048, device=dev, generator=g).to(bf)
    w = (torch.randn(8192, 2048, device=dev, generator=g) / 2048 ** 0.5).to(bf)
    b = (torch.randn(8192, device=dev, generator=g) * 0.1).to(bf)
    from kernels.inject.linear_gelu import linear_gelu

    fns = {"F.linear + F.gelu(tanh)": lambda: F.gelu(F.linear(x, w, b), approximate="tanh"),
           "linear_gelu (_addmm_activation)": lambda: linear_gelu(x, w, b)}
    pre = F.linear(x.double(), w.double(), b.double())
    ref_tanh, ref_erf = F.gelu(pre, approximate="tanh"), F.gelu(pre)
    for fn in fns.values():
        for _ in range(5):
            fn()
    times = {k: [] for k in fns}
    for _ in range(10):
        for k, fn in fns.items():
            a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(20):
                fn()
            e.record()
            e.synchronize()
            times[k].append(a.elapsed_time(e) * 1e3 / 20)
    print("| feed-forward projection [2640,2048]x[2048,8192] bf16 | median us per call | kernels (us) | "
          "max abs vs f64 gelu-tanh | max abs vs f64 erf GELU |")
    print("|---|---|---|---|---|")
    for k, fn in fns.items():
        out = fn().double()
        ks = ", ".join(f"{n[:60]} ({t:.1f})" for n, t in kernels_of(fn))
        print(f"| {k} | {statistics.median(times[k]):.1f} | {ks} | {(out - ref_tanh).abs().max().item():.4g} | "
              f"{(out - ref_erf).abs().max().item():.4g} |", flush=True)


def replayed_ms_per_forward(model, kw, replays=20, rounds=3) -> list[float]:
    """Device ms per forward of a model whose forward replays a CUDA graph (workers.e2e_graph.install): two calls
    (the capture), then ``rounds`` times ``replays`` back-to-back calls between CUDA events."""
    model(**kw)
    model(**kw)
    torch.cuda.synchronize()
    per = []
    for _ in range(rounds):
        a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(replays):
            model(**kw)
        e.record()
        e.synchronize()
        per.append(a.elapsed_time(e) / replays)
    return per


def part2():
    from kernels.inject import REWRITES, KERNEL_NAMES, inject, restore
    from workers import e2e_graph

    model = ltx_transformer()
    kw = _ltx_inputs()
    modes = {"eager": None, "triton (all)": "all",
             "triton without linear_gelu": [k for k in KERNEL_NAMES + tuple(REWRITES) if k != "linear_gelu"]}
    print("\n| mode (forward replayed from a CUDA graph) | device ms per forward (20 replays) | kernel time ms "
          "(one replay) | idle between kernels ms | kernels |")
    print("|---|---|---|---|---|")
    for name, sel in modes.items():
        if sel is not None:
            inject(model, kernels=sel)
        graphed = e2e_graph.install(model)
        with torch.no_grad():
            per = replayed_ms_per_forward(model, kw)
            ks = kernels_of(lambda: model(**kw))
        busy = sum(t for _, t in ks) / 1e3
        assert graphed.captures == 1, graphed.captures
        print(f"| {name} | {statistics.median(per):.3f} | {busy:.3f} | {statistics.median(per) - busy:.3f} | "
              f"{len(ks)} |", flush=True)
        e2e_graph.uninstall(model)
        restore(model)


if __name__ == "__main__":
    part1()
    part2()
