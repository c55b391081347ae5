"""Host time of one forward of the full-size LTX-Video transformer, before and after a torch.profiler capture, and
what the fused q/k/v projections do to it (device-side diagnostic, one GPU, nothing else running).

Modes: eager; injected with every kernel and rewrite ("triton"); injected without ``fused_qkv``.  For each, at the
e2e setting (batch 2, 1320 video tokens, 128 text tokens, bf16, random weights): the host time to enqueue one
forward and the synced time of one forward (median of 9, after 3 warm-up calls), and the device time of one forward
(CUDA events around one forward enqueued behind a ~0.1 s sleep kernel, so the host is ahead; median of 5).  One
forward at a time: the first run of this probe (dc6b864) put 5 forwards behind the sleep, more launches than the
driver queues, so the host stalled and that column measured the host.
Then one torch.profiler capture (CPU + CUDA) of one forward, and every mode timed again: the second table says what
a capture leaves behind in the process (pytorch/pytorch#144455).
Run on the device: python3 docs/perf/h200-2026-11-30f/host_probe_3.py
"""
import sys

import torch

sys.path.insert(0, "docs/perf/h200-2026-11-30")
from host_probe_2 import _ltx_inputs, forward_timings, ltx_transformer  # noqa: E402  (the same inputs and timings)

dev = torch.device("cuda")
bf = torch.bfloat16
ALL_BUT_FUSED = ["qk_norm_rope", "adaln_rms", "add_rms_norm_modulate", "gated_residual", "rms_norm"]


def timings(model, kw):
    with torch.no_grad():
        return forward_timings(model, kw)


def main():
    from kernels.inject import inject, restore

    model = ltx_transformer()
    kw = _ltx_inputs()
    modes = {"eager": None, "triton (all)": "all", "triton without fused_qkv": ALL_BUT_FUSED}

    def table(title):
        print(f"== {title}")
        print("| mode | host enqueue ms | synced forward ms | device ms per forward |")
        print("|---|---|---|---|")
        for name, sel in modes.items():
            if sel is not None:
                inject(model, kernels=sel)
            e, t, d = timings(model, kw)
            restore(model)
            print(f"| {name} | {e:.2f} | {t:.2f} | {d:.2f} |", flush=True)

    table("before any profiler capture")
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        model(**kw)
        torch.cuda.synchronize()
    table("after one torch.profiler capture in this process")


if __name__ == "__main__":
    main()
