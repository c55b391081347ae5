"""rope_rotate_half: whole-row loads (kernels.rope.ROTATE_HALF_WHOLE_ROWS) against the two half-row loads, at the
five shapes of the kernels sweep (bf16, the registry's inputs), beside torch.compile of the eager chain in both
modes, all in one process.

Timed as in ../h200-2026-11-30d/launch_knobs_2.py: launch-free (CUDA graph of 50 calls, median of 10 replays) and
per call between events with the L2 flushed by reading.  The half-row rows use the shipped config; the whole-row
rows sweep tiles of 1k-4k elements and 2-8 warps.  Every whole-row output must equal the half-row output bit for bit.
Run on the device: python3 docs/perf/h200-2026-11-30f/rope_whole_rows.py
"""
import sys

import torch

from kernels import registry, rope
from kernels.launch import next_pow2
from kernels.rope import RopeConfig, _rope_rotate_half_into, rope_config

sys.path.insert(0, "docs/perf/h200-2026-11-30d")
from launch_knobs_2 import timed  # noqa: E402  (the same two timings)
from workers.timing import copy_bandwidth_gbs  # noqa: E402

dev = torch.device("cuda")
bf = torch.bfloat16
SHAPES = ((2, 4096, 16, 128), (1, 8192, 32, 64), (2, 6336, 32, 64), (1, 4096, 16, 64), (1, 1024, 16, 64))


def whole_configs(heads, block):
    out = []
    for tile in (1024, 2048, 4096):
        bh = 1
        while bh <= next_pow2(heads) and bh * block <= tile:
            for w in (2, 4, 8):
                out.append(RopeConfig(tile // (bh * block), bh, w))
            bh *= 2
    return out


def main():
    ceiling = copy_bandwidth_gbs(dev)
    print(f"copy ceiling {ceiling:.0f} GB/s; {torch.cuda.get_device_name()}")
    print("| shape | MB | variant | config | graph µs | % (graph) | per call µs | % (per call) |")
    print("|---|---|---|---|---|---|---|---|")
    entry = registry.get("rope_rotate_half")
    with torch.no_grad():
        for shape in SHAPES:
            i = entry.make_inputs(list(shape), bf, dev, torch.Generator().manual_seed(0))
            nbytes = entry.bytes_moved(list(shape), bf)

            def row(variant, cfg, gt, pc):
                print(f"| {'x'.join(map(str, shape))} | {nbytes / 1e6:.1f} | {variant} | {cfg} | {gt:.2f} | "
                      f"{nbytes / gt / 1e3 / ceiling * 100:.0f} % | {pc:.2f} | "
                      f"{nbytes / pc / 1e3 / ceiling * 100:.0f} % |", flush=True)

            for impl in ("compile", "compile_max"):
                fn = entry.impls[impl].make()
                fn(**i)
                row(impl, "", *timed(lambda: fn(**i)))
            out = torch.empty_like(i["x"])
            rope.ROTATE_HALF_WHOLE_ROWS = False
            half_cfg = rope_config(shape[2], next_pow2(shape[-1] // 2), dev, interleaved=False)
            _rope_rotate_half_into(out, i["x"], i["cos"], i["sin"])
            want = out.clone()
            row("half rows (shipped)", tuple(half_cfg), *timed(
                lambda: _rope_rotate_half_into(out, i["x"], i["cos"], i["sin"])))
            rope.ROTATE_HALF_WHOLE_ROWS = True
            default = rope_config(shape[2], next_pow2(shape[-1]), dev, interleaved=True)
            for cfg in whole_configs(shape[2], next_pow2(shape[-1])):
                out.zero_()
                _rope_rotate_half_into(out, i["x"], i["cos"], i["sin"], _config=cfg)
                same = torch.equal(out, want)
                gt, pc = timed(lambda: _rope_rotate_half_into(out, i["x"], i["cos"], i["sin"], _config=cfg))
                tag = "whole rows" + (" (default)" if cfg == default else "") + ("" if same else " OUTPUT DIFFERS")
                row(tag, tuple(cfg), gt, pc)
            rope.ROTATE_HALF_WHOLE_ROWS = False


if __name__ == "__main__":
    main()
