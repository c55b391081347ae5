"""The copy ceiling's own operation read the way the micro job reads a kernel, at the grid's sizes.

The ceiling (workers.timing.copy_bandwidth_gbs) is a 1 GB copy timed between events without a flush.  Here a bf16
copy moving the bytes of each size, L2 flushed before each call: per-call event time (workers.timing.bench) and
kernel time (workers.timing.kernel_time), each as % of the ceiling measured in this process.  Where a copy itself
reads over 100 % by kernel time, a kernel reading over 100 % is being credited for writes still in L2.
Run on the device: python3 docs/perf/h200-2026-11-30l/copy_calibration.py
"""
import statistics

import torch

from workers.timing import bench, copy_bandwidth_gbs, kernel_time

dev = torch.device("cuda")


def main():
    ceiling = copy_bandwidth_gbs(dev)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, copy ceiling {ceiling:.0f} GB/s")
    print("| MB moved | per call µs | % ceiling | kernel µs | % ceiling (kernel) |")
    print("|---|---|---|---|---|")
    for mb in (8.4, 21.6, 33.6, 43.3, 67.1, 103.8, 201.3, 415.2, 1000.0):
        n = int(mb * 1e6 / 4)  # bf16 elements each way
        src = torch.randn(n, device=dev).to(torch.bfloat16)
        dst = torch.empty_like(src)

        def copy():
            dst.copy_(src)

        t = statistics.median(bench(copy, dev, warmup_ms=5, rep_ms=50))
        k = statistics.median(kernel_time(copy, dev))
        nbytes = 4 * n
        print(f"| {mb:.1f} | {t:.2f} | {100 * nbytes / (t * 1e3) / ceiling:.0f} % | {k:.2f} "
              f"| {100 * nbytes / (k * 1e3) / ceiling:.0f} % |", flush=True)


if __name__ == "__main__":
    main()
