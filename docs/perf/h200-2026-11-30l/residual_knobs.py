"""gated_residual and add_rms_norm_modulate launch knobs at 2048-wide rows, read with the L2 flushed.

Both take the norm family's launch (one 2048-wide row per program, 4 warps on sm_90).  In the eleventh session's
kernel run `gated_residual` was 0.93-1.00x the better torch.compile by kernel time at its three shapes and
`add_rms_norm_modulate` 1.01-1.07x.  Per shape and (rows per program, warps): kernel time (median of 20 calls,
workers.timing.kernel_time) and per-call event time, beside torch.compile default and max-autotune-no-cudagraphs
of the registry's eager chain.
Run on the device: python3 docs/perf/h200-2026-11-30l/residual_knobs.py
"""
import statistics

import torch

from kernels import registry
from kernels.gated_residual import _gated_residual_into
from kernels.residual_norm import _add_rms_norm_modulate_into
from workers.timing import bench, kernel_time

dev = torch.device("cuda")
SHAPES = ([1, 256, 2048], [2, 1320, 2048], [2, 6336, 2048])
CONFIGS = [(1, 2), (1, 4), (1, 8), (1, 16), (2, 8), (2, 16)]


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for kname in ("gated_residual", "add_rms_norm_modulate"):
        entry = registry.get(kname)
        print(f"\n## {kname}: kernel µs (per-call µs)")
        print("| shape | MB | compile | compile_max | " + " | ".join(f"rows {r}, warps {w}" for r, w in CONFIGS) + " |")
        print("|---" * (len(CONFIGS) + 4) + "|")
        for shape in SHAPES:
            inp = entry.make_inputs(tuple(shape), torch.bfloat16, dev, torch.Generator().manual_seed(0))
            mb = entry.bytes_moved(tuple(shape), torch.bfloat16) / 1e6
            fns = {}
            for impl in ("compile", "compile_max"):
                f = entry.impls[impl].make()
                fns[impl] = lambda f=f: f(**inp)
            for r, w in CONFIGS:
                if kname == "gated_residual":
                    out = torch.empty_like(inp["residual"])
                    fns[(r, w)] = lambda r=r, w=w, out=out: _gated_residual_into(
                        out, inp["residual"], inp["x"], inp["gate"], _config=(r, w))
                else:
                    out = (torch.empty_like(inp["x"]), torch.empty_like(inp["x"]))
                    fns[(r, w)] = lambda r=r, w=w, out=out: _add_rms_norm_modulate_into(
                        out, inp["x"], inp["residual"], inp["scale"], inp["shift"], inp["eps"], _config=(r, w))
            cells = []
            for fn in fns.values():
                fn()
                k = statistics.median(kernel_time(fn, dev))
                e = statistics.median(bench(fn, dev, warmup_ms=5, rep_ms=30))
                cells.append(f"{k:.2f} ({e:.2f})")
            print(f"| {'x'.join(map(str, shape))} | {mb:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
