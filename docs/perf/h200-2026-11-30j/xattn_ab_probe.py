"""The injected LTX-Video transformer with and without ``cross_attention`` (attn2 through kernels.cross_attention
against diffusers' native SDPA, cuDNN's kernel on the H200), interleaved in one process.

Two copies of the full-size model (random weights, bf16, the e2e inputs): ``inject(m)`` and ``inject(m, kernels=all
but cross_attention)``; first eager, then each ``compile_repeated_blocks(fullgraph=True,
options=compile_options())``.  Per pair, 6 rounds of 7 forwards of each (the order alternating): host enqueue and
synced ms per forward (median of 42), device ms per forward (behind a sleep kernel, median of 5), and the two
outputs' difference.  With ``eager`` as the first argument the compiled pair is skipped (attn2 keeps SDPA under
compile since 156c5ed, so the two compiled models run the same code).
Run on the device: python3 docs/perf/h200-2026-11-30j/xattn_ab_probe.py [eager]
"""
import copy
import statistics
import sys

import torch

sys.path.insert(0, "docs/perf/h200-2026-11-30")
from host_probe_2 import _ltx_inputs, forward_device_ms, interleaved_host_ms, ltx_transformer  # noqa: E402

dev = torch.device("cuda")


def compare(models, kw, label):
    enq, tot = interleaved_host_ms(models, kw, 6)
    print(f"== {label}")
    print("| model | host enqueue ms | synced ms | device ms |")
    print("|---|---|---|---|")
    for name, m in models.items():
        print(f"| {name} | {statistics.median(enq[name]):.2f} | {statistics.median(tot[name]):.2f} | "
              f"{forward_device_ms(m, kw):.2f} |", flush=True)
    a, b = (models[n](**kw)[0].float() for n in models)
    print(f"max abs difference of the two outputs: {(a - b).abs().max().item():.3g} "
          f"(output max abs {b.abs().max().item():.3g})")


def main():
    from kernels.inject import compile_options, inject, resolve_kernels

    base = ltx_transformer()
    without = copy.deepcopy(base)
    inject(base)
    inject(without, kernels=[k for k in resolve_kernels("all") if k != "cross_attention"])
    models = {"with cross_attention": base, "without": without}
    kw = _ltx_inputs()
    with torch.no_grad():
        for m in models.values():
            for _ in range(3):
                m(**kw)
        torch.cuda.synchronize()
        compare(models, kw, "triton (eager, injected)")
        if sys.argv[1:] == ["eager"]:
            return
        for m in models.values():
            m.compile_repeated_blocks(fullgraph=True, options=compile_options())
            for _ in range(3):
                m(**kw)
        torch.cuda.synchronize()
        compare(models, kw, "triton+compile")


if __name__ == "__main__":
    main()
