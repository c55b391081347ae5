"""rms_norm and adaln_rms launch knobs at 2048-wide rows, read with the L2 flushed (kernel time from the profiler).

The sm_90 entry (4 warps, one row per program at 2048) came from launch-free readings with a warm L2, where a
33.6 MB tensor is read from L2.  The eleventh session's kernel run found Inductor's kernel 2-7 % faster than ours at
1x4096x2048 and 4x1024x2048 by kernel time (cold L2).  Per shape and (rows per program, warps): kernel time
(median of 20 calls, workers.timing.kernel_time) and per-call event time, with torch.compile of the registry's
eager chain (default mode) beside them.
Run on the device: python3 docs/perf/h200-2026-11-30l/norm_cold_knobs.py
"""
import statistics

import torch

from kernels import registry
from kernels.rmsnorm import _rms_norm_into
from kernels.adaln import _adaln_rms_into
from workers.timing import bench, kernel_time

dev = torch.device("cuda")
SHAPES = ([1, 1024, 2048], [2, 1320, 2048], [1, 4096, 2048], [4, 1024, 2048], [1, 8192, 2048], [2, 6336, 2048])
CONFIGS = [(1, 2), (1, 4), (1, 8), (1, 16), (2, 4), (2, 8), (4, 8), (4, 16)]


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for kname in ("rmsnorm", "adaln"):
        entry = registry.get(kname)
        print(f"\n## {kname}: kernel µs (per-call µs)")
        print("| shape | MB | compile | " + " | ".join(f"rows {r}, warps {w}" for r, w in CONFIGS) + " |")
        print("|---" * (len(CONFIGS) + 3) + "|")
        for shape in SHAPES:
            inp = entry.make_inputs(tuple(shape), torch.bfloat16, dev, torch.Generator().manual_seed(0))
            mb = entry.bytes_moved(tuple(shape), torch.bfloat16) / 1e6
            comp = entry.impls["compile"].make()
            fns = {"compile": lambda: comp(**inp)}
            for r, w in CONFIGS:
                out = torch.empty_like(inp["x"])
                if kname == "rmsnorm":
                    fns[(r, w)] = lambda r=r, w=w, out=out: _rms_norm_into(out, inp["x"], inp["weight"], inp["eps"],
                                                                           numerics="diffusers", _config=(r, w))
                else:
                    fns[(r, w)] = lambda r=r, w=w, out=out: _adaln_rms_into(out, inp["x"], inp["scale"], inp["shift"],
                                                                            None, inp["eps"], _config=(r, w))
            cells = []
            for name, fn in fns.items():
                k = statistics.median(kernel_time(fn, dev))
                e = statistics.median(bench(fn, dev, warmup_ms=5, rep_ms=30))
                cells.append(f"{k:.2f} ({e:.2f})")
            print(f"| {'x'.join(map(str, shape))} | {mb:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
