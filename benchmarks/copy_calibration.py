"""The copy ceiling's own operation read the way the micro job reads a kernel, at a kernel grid's sizes.

The ceiling (workers.runtime.timing.copy_bandwidth_gbs) is a 1 GB copy timed between events without a flush.  Here a
bf16 copy moving the bytes of each size, L2 flushed before each call: per-call event time (workers.runtime.timing.bench)
and kernel time (workers.runtime.timing.kernel_time), each as % of the ceiling measured in this process.  Where a copy
itself reads over 100 % by kernel time, a kernel reading over 100 % is being credited for writes still in L2.  It backs
the "% of copy bandwidth" columns of docs/perf/kernels-h200.md.

    python -m benchmarks.copy_calibration [--mb 8.4 21.6 ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

from workers.runtime.timing import bench, copy_bandwidth_gbs, kernel_time

SIZES_MB = (8.4, 21.6, 33.6, 43.3, 67.1, 103.8, 201.3, 415.2, 1000.0)  # the kernel grid's bytes moved


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.copy_calibration", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--mb",
        type=float,
        nargs="+",
        default=list(SIZES_MB),
        help="megabytes moved per call (read + written), default: the kernel grid's sizes",
    )
    ap.add_argument("--rep-ms", type=float, default=50.0, help="timing budget per size for the per-call reading")
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    ceiling = copy_bandwidth_gbs(dev)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, copy ceiling {ceiling:.0f} GB/s")
    print("| MB moved | per call µs | % ceiling | kernel µs | % ceiling (kernel) |")
    print("|---|---|---|---|---|")
    for mb in args.mb:
        n = int(mb * 1e6 / 4)  # bf16 elements each way
        src = torch.randn(n, device=dev).to(torch.bfloat16)
        dst = torch.empty_like(src)

        def copy():
            dst.copy_(src)

        t = statistics.median(bench(copy, dev, warmup_ms=5, rep_ms=args.rep_ms))
        k = statistics.median(kernel_time(copy, dev))
        nbytes = 4 * n
        print(
            f"| {mb:.1f} | {t:.2f} | {100 * nbytes / (t * 1e3) / ceiling:.0f} % | {k:.2f} "
            f"| {100 * nbytes / (k * 1e3) / ceiling:.0f} % |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
