"""rms_norm and adaln_rms launch knobs (rows per program x warps) read with the L2 flushed.

Per shape and (rows per program, warps): kernel time (median of 20 calls, workers.runtime.timing.kernel_time) and
per-call event time (workers.runtime.timing.bench), with torch.compile of the registry's eager chain (default mode)
beside them.  The row kernels' launch table (kernels/launch.py) is chosen from these readings; they back the launch-knob
section of docs/perf/kernels-h200.md.

    python -m benchmarks.norm_launch_knobs [--kernels rmsnorm adaln] [--shapes 2x1320x2048 ...] [--configs 1x4 ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

from benchmarks.cli_args import launch, shape
from kernels import registry
from kernels.adaln import adaln_rms_into
from kernels.rmsnorm import rms_norm_into
from workers.runtime.timing import bench, kernel_time

SHAPES = ([1, 1024, 2048], [2, 1320, 2048], [1, 4096, 2048], [4, 1024, 2048], [1, 8192, 2048], [2, 6336, 2048])
CONFIGS = [(1, 2), (1, 4), (1, 8), (1, 16), (2, 4), (2, 8), (4, 8), (4, 16)]


def _calls(kname: str, inp: dict, configs: list[tuple[int, int]]) -> dict:
    """The kernel's launch with each config, by (rows, warps)."""
    fns = {}
    for r, w in configs:
        out = torch.empty_like(inp["x"])
        if kname == "rmsnorm":
            fns[(r, w)] = lambda r=r, w=w, out=out: rms_norm_into(
                out, inp["x"], inp["weight"], inp["eps"], numerics="diffusers", _config=(r, w)
            )
        else:
            fns[(r, w)] = lambda r=r, w=w, out=out: adaln_rms_into(
                out, inp["x"], inp["scale"], inp["shift"], None, inp["eps"], _config=(r, w)
            )
    return fns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.norm_launch_knobs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", choices=["rmsnorm", "adaln"], default=["rmsnorm", "adaln"])
    ap.add_argument("--shapes", type=shape, nargs="+", default=list(SHAPES), help="e.g. 2x1320x2048 (B x S x C)")
    ap.add_argument("--configs", type=launch, nargs="+", default=CONFIGS, help="ROWSxWARPS, e.g. 1x4 2x8")
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for kname in args.kernels:
        entry = registry.get(kname)
        print(f"\n## {kname}: kernel µs (per-call µs)")
        print("| shape | MB | compile | " + " | ".join(f"rows {r}, warps {w}" for r, w in args.configs) + " |")
        print("|---" * (len(args.configs) + 3) + "|")
        for dims in args.shapes:
            inp = entry.make_inputs(tuple(dims), torch.bfloat16, dev, torch.Generator().manual_seed(0))
            mb = entry.bytes_moved(tuple(dims), torch.bfloat16) / 1e6
            comp = entry.impls["compile"].make()
            fns = {"compile": lambda: comp(**inp), **_calls(kname, inp, args.configs)}
            cells = []
            for fn in fns.values():
                k = statistics.median(kernel_time(fn, dev))
                e = statistics.median(bench(fn, dev, warmup_ms=5, rep_ms=30))
                cells.append(f"{k:.2f} ({e:.2f})")
            print(f"| {'x'.join(map(str, dims))} | {mb:.1f} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
