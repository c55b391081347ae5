"""Where a graphed forward's device timeline has no kernel running (one GPU, nothing else running).

The sixth session found a `triton+graph` denoising step 1.4-1.8 ms longer than the union of its kernels' intervals
(eager+graph: 0.4-0.6 ms).  This probe replays LTX-Video's full-size transformer forward at the seed setting from a
CUDA graph (workers.e2e_graph), eager and injected, and for one profiled replay lists every device activity
(kernels, memsets, copies) in start order.  Per activity, the gap before it is the time since the latest end of
everything before it (0 when it overlaps); the gaps are summed by the pair (previous activity's name, this one's)
and by this one's class (workers.e2e_profile.kernel_class).  Also: device ms per forward over 20 back-to-back
replays, the union ("busy") and the sum of durations.

Modes: ``eager``, ``triton`` (everything injected), ``triton-NAME`` (everything but the kernel or rewrite NAME).
Run on the device: python3 docs/perf/h200-2026-11-30h/gap_probe.py [--modes eager,triton,triton-fused_qkv] [--top 25]
"""
import argparse
import collections
import json
import os
import statistics
import sys
import tempfile

import torch

sys.path[:0] = ["docs/perf/h200-2026-11-30", "docs/perf/h200-2026-11-30g"]
from ff_probe import replayed_ms_per_forward  # noqa: E402  (device ms per graphed forward)
from host_probe_2 import _ltx_inputs, ltx_transformer  # noqa: E402  (the seed setting's inputs)

from workers.e2e_profile import busy_ms, kernel_class, kernelfleet_kernel_names  # noqa: E402

DEVICE_CATS = ("kernel", "gpu_memset", "gpu_memcpy")
dev = torch.device("cuda")


def short(name: str) -> str:
    return name.split("(")[0].split("<")[0][:70]


def device_activities(fn) -> list[dict]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        fn()
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    acts = [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in DEVICE_CATS]
    return sorted(acts, key=lambda e: float(e["ts"]))


def gaps(acts: list[dict], ours: frozenset, top: int) -> None:
    by_pair = collections.defaultdict(lambda: [0, 0.0])
    by_class = collections.defaultdict(lambda: [0, 0.0])
    end = None
    prev = "(start)"
    overlap = 0.0
    for a in acts:
        ts, dur = float(a["ts"]), float(a["dur"])
        name = a["name"] if a["cat"] == "kernel" else f"[{a['cat']}] {a['name']}"
        if end is not None:
            g = ts - end
            if g > 0:
                p = by_pair[(short(prev), short(name))]
                p[0] += 1
                p[1] += g
                c = by_class[kernel_class(a["name"], ours) if a["cat"] == "kernel" else a["cat"]]
                c[0] += 1
                c[1] += g
            else:
                overlap += min(-g, dur)
        end = ts + dur if end is None else max(end, ts + dur)
        prev = name
    span = end - float(acts[0]["ts"])
    total_gap = sum(v[1] for v in by_pair.values())
    print(f"activities {len(acts)} ({collections.Counter(a['cat'] for a in acts)}); span {span / 1e3:.3f} ms; "
          f"busy {busy_ms((float(a['ts']), float(a['dur'])) for a in acts):.3f} ms; sum of durations "
          f"{sum(float(a['dur']) for a in acts) / 1e3:.3f} ms; gaps {total_gap / 1e3:.3f} ms; overlapped "
          f"{overlap / 1e3:.3f} ms")
    print("\n| gap before (class) | gaps | total us | mean us |\n|---|---|---|---|")
    for k, (n, t) in sorted(by_class.items(), key=lambda kv: -kv[1][1]):
        print(f"| {k} | {n} | {t:.1f} | {t / n:.2f} |")
    print("\n| previous -> next | gaps | total us | mean us |\n|---|---|---|---|")
    for (p, q), (n, t) in sorted(by_pair.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"| {p} -> {q} | {n} | {t:.1f} | {t / n:.2f} |")
    durs = collections.defaultdict(lambda: [0, 0.0])
    for a in acts:
        d = durs[short(a["name"])]
        d[0] += 1
        d[1] += float(a["dur"])
    att = [float(a["dur"]) for a in acts if a["cat"] == "kernel" and kernel_class(a["name"], ours) == "attention"]
    if att:
        print(f"attention calls in order: odd (attn1) mean {statistics.fmean(att[0::2]):.2f} us, even (attn2) mean "
              f"{statistics.fmean(att[1::2]) if att[1::2] else float('nan'):.2f} us")
    print("\n| activity | count | total us | mean us |\n|---|---|---|---|")
    for k, (n, t) in sorted(durs.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"| {k} | {n} | {t:.1f} | {t / n:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default="eager,triton")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--layouts", action="store_true", help="also time attn1's SDPA with v contiguous or a slice")
    args = ap.parse_args()
    from kernels.inject import KERNEL_NAMES, REWRITES, inject, restore
    from workers import e2e_graph

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    if args.layouts:
        attention_layouts()
    model = ltx_transformer()
    kw = _ltx_inputs()
    ours = kernelfleet_kernel_names()
    for mode in args.modes.split(","):
        if mode == "triton":
            inject(model)
        elif mode.startswith("triton-"):
            left_out = mode.split("-", 1)[1]
            names = [k for k in KERNEL_NAMES + tuple(REWRITES) if k != left_out]
            if len(names) == len(KERNEL_NAMES) + len(REWRITES):
                raise SystemExit(f"unknown kernel or rewrite {left_out!r}")
            inject(model, kernels=names)
        graphed = e2e_graph.install(model)
        with torch.no_grad():
            per = replayed_ms_per_forward(model, kw)
            acts = device_activities(lambda: model(**kw))
        assert graphed.captures == 1, graphed.captures
        print(f"\n## {mode}: device ms per forward (20 replays, median of 3) {statistics.median(per):.3f}")
        gaps(acts, ours, args.top)
        e2e_graph.uninstall(model)
        if mode != "eager":
            restore(model)
        sys.stdout.flush()


def attention_layouts() -> None:
    """cuDNN SDPA at attn1's shape ([2, 1320, 32, 64] as [B, S, H, D], permuted the way diffusers' native backend
    does): v contiguous against v a column slice of a fused [B, S, 3C] projection; us per call, CUDA events."""
    import torch.nn.functional as F

    g = torch.Generator(device=dev).manual_seed(0)
    qkv = torch.randn(2, 1320, 3 * 2048, device=dev, generator=g, dtype=torch.bfloat16)
    q = qkv[..., :2048].contiguous()
    k = qkv[..., 2048:4096].contiguous()
    v_slice = qkv[..., 4096:]
    v_cont = v_slice.contiguous()
    heads = lambda t: t.unflatten(2, (32, 64)).permute(0, 2, 1, 3)  # noqa: E731
    cases = {"v contiguous": (heads(q), heads(k), heads(v_cont)),
             "v slice of [B,S,3C]": (heads(q), heads(k), heads(v_slice)),
             "q,k,v slices of [B,S,3C]": (heads(qkv[..., :2048]), heads(qkv[..., 2048:4096]), heads(v_slice))}
    print("\n| attn1 SDPA [2,32,1320,64] bf16 | us per call (median of 5 x 50) |\n|---|---|")
    for name, (a, b, c) in cases.items():
        for _ in range(5):
            F.scaled_dot_product_attention(a, b, c)
        per = []
        for _ in range(5):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(50):
                F.scaled_dot_product_attention(a, b, c)
            e.record()
            e.synchronize()
            per.append(s.elapsed_time(e) * 1e3 / 50)
        print(f"| {name} | {statistics.median(per):.2f} |")


if __name__ == "__main__":
    main()
