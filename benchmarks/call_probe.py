"""Where a per-call reading's time goes: the micro job's event timing against the kernel's own device time.

The micro job times each call between two events with the L2 flushed by a read just before
(workers.runtime.timing.bench). This probe splits a per-call reading into its parts, per kernel x shape x implementation
(the registry's inputs):

- ``event``: workers.runtime.timing.bench as the micro job calls it (median µs);
- ``event+spin``: the same, with the GPU held busy (torch.cuda._sleep) after the flush for longer than the host
  takes to enqueue the call, so the start event is followed at once by the call's kernels: host enqueue time that
  outlasts the flush no longer shows up inside the events;
- ``host``: host µs to enqueue one call (no sync; the GPU kept busy so the queue never blocks);
- ``kernel``: the sum of the call's kernel durations from torch.profiler (CUPTI), L2 flushed before each call;
- ``graph``: workers.runtime.timing.graph_time (warm L2, launch-free);
- ``cold graph`` (``--cold``): ``cold_graph_time`` below (flushed L2, launch-free): a graph of (flush, call) pairs
  less a graph of the flushes alone, so the call is also charged for writing back the dirty lines it leaves in L2.

Also the floor of the event pair itself (an empty Triton kernel and a one-element torch op) and a bf16 copy of
rmsnorm's sizes, the copy ceiling's own operation.  It backs the timing section of docs/perf/kernels-h200.md.

    python -m benchmarks.call_probe [--case rmsnorm:2x1320x2048 ...] [--impls triton,compile] [--cold]
"""

import argparse
import statistics
import sys
import time
from typing import Callable

import torch
import triton

from benchmarks.cli_args import case
from kernels import registry
from workers.runtime.timing import bench, flush_l2, graph_time

dev = torch.device("cuda")
SPIN_CYCLES = 400_000  # ~200 µs at 1.98 GHz: longer than any enqueue below

CASES = [
    ("rmsnorm", [2, 1320, 2048]),
    ("rmsnorm", [1, 4096, 2048]),
    ("rmsnorm", [1, 8192, 2048]),
    ("rmsnorm", [2, 6336, 2048]),
    ("adaln", [1, 4096, 2048]),
    ("adaln", [2, 1320, 2048]),
    ("add_rms_norm_modulate", [1, 256, 2048]),
    ("add_rms_norm_modulate", [2, 1320, 2048]),
    ("gated_residual", [1, 256, 2048]),
    ("gated_residual", [2, 1320, 2048]),
    ("geglu", [2, 1024, 4096]),
    ("rope", [2, 1320, 2048]),
    ("rope_rotate_half", [1, 8192, 32, 64]),
    ("adaln_layer_norm", [1, 4096, 3072]),
]
IMPLS = ("triton", "compile")


def cold_graph_time(
    fn: Callable[[], object], device: torch.device, *, calls: int = 10, replays: int = 15, flush_mode: str = "read"
) -> list[float]:
    """Per-call microseconds of ``fn`` launch-free with the L2 flushed before every call.

    Two graphs are timed with workers.runtime.timing.graph_time: ``calls`` times (flush, ``fn``), and ``calls`` flushes
    alone, ``replays`` replays each; each sample is the pair's per-call time less the flush's.
    """

    def flushed() -> None:
        flush_l2(device, flush_mode)
        fn()

    pairs = graph_time(flushed, device, calls=calls, replays=replays)
    flushes = graph_time(lambda: flush_l2(device, flush_mode), device, calls=calls, replays=replays)
    return [p - f for p, f in zip(pairs, flushes)]


@triton.jit
def _empty(x_ptr):
    pass


def spin_bench(fn, reps=200):
    for _ in range(5):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush_l2(dev, "read")
        torch.cuda._sleep(SPIN_CYCLES)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def host_us(fn, reps=200):
    out = []
    for i in range(reps):
        if i % 20 == 0:
            torch.cuda.synchronize()
            torch.cuda._sleep(SPIN_CYCLES * 20)
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(out)


_NAMES_SHOWN = 0


def kernel_us(fn, reps=30):
    """Median over calls of the summed device time of one call's kernels (flush and spin excluded), and their count."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush_l2(dev, "read")
            torch.cuda._sleep(SPIN_CYCLES // 4)
            fn()
        torch.cuda.synchronize()
    evs = sorted(
        (
            e
            for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA
            and "reduce_kernel" not in e.name
            and "spin_kernel" not in e.name
            and "Memset" not in e.name
            and "Memcpy" not in e.name
        ),
        key=lambda e: e.time_range.start,
    )
    if not evs or len(evs) % reps:
        return float("nan"), f"{len(evs)}/{reps}"
    k = len(evs) // reps
    global _NAMES_SHOWN
    if _NAMES_SHOWN < 3:
        _NAMES_SHOWN += 1
        print("(kernels of one call: " + "; ".join(e.name[:80] for e in evs[:k]) + ")")
    return statistics.median(sum(e.time_range.elapsed_us() for e in evs[j : j + k]) for j in range(0, len(evs), k)), k


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.call_probe", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--case",
        type=case,
        action="append",
        dest="cases",
        metavar="KERNEL:SHAPE",
        help="a registry kernel and shape, e.g. rmsnorm:2x1320x2048 (repeatable; default: 14 cases at "
        "LTX-Video's shapes)",
    )
    ap.add_argument("--impls", default=",".join(IMPLS), help="implementations, comma-separated (triton,compile)")
    ap.add_argument("--dtype", default="bf16", help="dtype of the inputs (bf16)")
    ap.add_argument("--cold", action="store_true", help="also time each call launch-free with the L2 flushed")
    args = ap.parse_args(argv)
    cold, impls = args.cold, args.impls.split(",")
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    x = torch.zeros(1, device=dev)
    floor = {
        "empty triton kernel": lambda: _empty[(1,)](x),
        "one-element torch add_": lambda: x.add_(1),
    }
    print("| call | event µs | event+spin µs | host µs |")
    print("|---|---|---|---|")
    for name, fn in floor.items():
        cg = statistics.median(cold_graph_time(fn, dev)) if cold else float("nan")
        print(
            f"| {name} | {statistics.median(bench(fn, dev)):.2f} | {spin_bench(fn):.2f} | {host_us(fn):.1f} "
            f"| cold graph {cg:.2f} |"
        )
    sys.stdout.flush()

    print()
    print(
        "| kernel | shape | MB | impl | event µs | event+spin µs | host µs | kernel µs (profiler) | kernels/call "
        "| graph µs | cold graph µs |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    # the ceiling's own operation at these sizes: a bf16 copy moving the bytes of rmsnorm's [1, n, 2048]
    for n in (2640, 4096, 8192, 12672):
        src = torch.randn(n, 2048, device=dev).to(torch.bfloat16)
        dst = torch.empty_like(src)
        fn = lambda src=src, dst=dst: dst.copy_(src)
        ev, sp, ho = statistics.median(bench(fn, dev)), spin_bench(fn), host_us(fn)
        gr = statistics.median(graph_time(fn, dev))
        cg = statistics.median(cold_graph_time(fn, dev)) if cold else float("nan")
        rows.append(("copy_", [n, 2048], 2 * src.numel() * 2 / 1e6, "torch", ev, sp, ho, gr, cg, fn))
    for kname, shape in args.cases or CASES:
        entry = registry.get(kname)
        dtype = registry.dtype_of(args.dtype)
        inputs = entry.make_inputs(tuple(shape), dtype, dev, torch.Generator().manual_seed(0))
        mb = entry.bytes_moved(tuple(shape), dtype) / 1e6
        for impl in impls:
            f = entry.impls[impl].make()
            fn = lambda f=f, inputs=inputs: f(**inputs)
            fn()
            torch.cuda.synchronize()
            ev = statistics.median(bench(fn, dev))
            sp = spin_bench(fn)
            ho = host_us(fn)
            gr = statistics.median(graph_time(fn, dev))
            cg = statistics.median(cold_graph_time(fn, dev)) if cold else float("nan")
            rows.append((kname, shape, mb, impl, ev, sp, ho, gr, cg, fn))
            print(
                f"(timed {kname} {shape} {impl}: event {ev:.2f}, spin {sp:.2f}, host {ho:.1f}, graph {gr:.2f}, "
                f"cold graph {cg:.2f})"
            )
            sys.stdout.flush()
    # profiler last: once CUPTI is attached every later launch costs more host time
    for kname, shape, mb, impl, ev, sp, ho, gr, cg, fn in rows:
        ku, kc = kernel_us(fn)
        print(
            f"| {kname} | {'x'.join(map(str, shape))} | {mb:.1f} | {impl} | {ev:.2f} | {sp:.2f} | {ho:.1f} "
            f"| {ku:.2f} | {kc} | {gr:.2f} | {cg:.2f} |"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
