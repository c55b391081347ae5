"""Timing of one callable: device events on a GPU, the host clock on the CPU.

On a GPU each repeat is bracketed by its own pair of events, the L2 cache is flushed before every repeat (outside
the timed region, through a buffer larger than L2: ``flush="write"`` zeroes it, as triton.testing.do_bench does;
``flush="read"`` reads it, which leaves clean lines, so the timed call does not pay for writing the flush's dirty
lines back), warm-up is excluded, and every repeat is returned in microseconds, so the caller keeps all samples and
reports median and IQR.  After the flush the GPU spins for ~150 µs before the start event, so a call whose host side
takes longer to enqueue than the flush takes to run does not count that host time; what lies between the events is
the call's kernels plus the event pair's own cost (~3.4 µs on an H200 around an empty kernel).

``graph_time`` replays a CUDA/HIP graph of many calls back to back: a launch-free reading with a warm L2 (a tensor
that fits in L2 is read from it).  ``kernel_time`` is the reading a kernel profiler gives (ncu's duration,
rocprofv3's kernel trace): the summed device time of the call's kernels, each call after a flush, from
torch.profiler's device activity records, with no event or launch cost in it.  Where a call's output fits in L2 its
writes may still sit there when the kernel ends, so at tens of MB this reading can exceed the copy ceiling
(docs/perf/kernels-h200.md).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from workers.spec import FLUSH_MODES

_FLUSH_BYTES = 256 * 1024 * 1024  # > 4x the L2 of an H200 (60 MB) or an MI355X (4 MB L2 + 256 MB MALL: partial)
_flush_buf: dict[torch.device, torch.Tensor] = {}


def flush_l2(device: torch.device, mode: str) -> None:
    """Evict the last-level cache of ``device`` by touching a buffer larger than it: ``mode`` ``read`` reads every
    line, ``write`` writes every line."""
    buf = _flush_buf.get(device)
    if buf is None:
        buf = torch.zeros(_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
        _flush_buf[device] = buf
    if mode == "write":
        buf.zero_()
    else:
        buf.amax()  # reads every line, writes one number (sum(dtype=int64) would first write an int64 copy of it)


# ~150 µs of spinning at an H200's 1980 MHz (longer where the clock runs slower): more than a call takes to enqueue,
# torch.compile's guards and a profiled process's slower launches included (docs/perf/kernels-h200.md)
_SPIN_CYCLES = 300_000


def _hold_gpu() -> None:
    """Keep the current GPU busy while the host enqueues the timed call (torch.cuda._sleep spins on its clock)."""
    torch.cuda._sleep(_SPIN_CYCLES)


def _check_flush_mode(mode: str) -> None:
    if mode not in FLUSH_MODES:
        raise ValueError(f"flush_mode must be one of {', '.join(FLUSH_MODES)}, got {mode!r}")


# Whether this process has run torch.profiler.  Once a capture with CUDA activity has run, CUPTI stays attached to the
# process (Kineto does not finalise it: pytorch/pytorch#144455) and every later launch costs more host time, so the
# sandbox gives a job that times host work a fresh child instead (workers.runtime.sandbox.runs_in_profiled_child).
_PROFILER_USED = False


def mark_profiler_used() -> None:
    global _PROFILER_USED
    _PROFILER_USED = True


def profiler_used() -> bool:
    return _PROFILER_USED


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_calls_ms(fn: Callable[[], object], device: torch.device, n: int) -> float:
    sync(device)
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        return max(start.elapsed_time(end) / n, 1e-4)
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return max((time.perf_counter() - t0) * 1e3 / n, 1e-4)


def _estimate_ms(fn: Callable[[], object], device: torch.device, budget_ms: float) -> float:
    """Time of one call: one timed call, then more only while they are cheap against the budget."""
    est = _time_calls_ms(fn, device, 1)
    if est * 10 < budget_ms:
        est = _time_calls_ms(fn, device, 5)
    return est


def bench(
    fn: Callable[[], object],
    device: torch.device,
    *,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    min_reps: int = 5,
    max_reps: int = 2000,
    flush: bool = True,
    flush_mode: str = "read",
) -> list[float]:
    """Per-repeat times of ``fn()`` in microseconds (warm-up excluded); ``flush_mode``: see the module doc."""
    _check_flush_mode(flush_mode)
    fn()  # first call: compilation and lazy init stay out of the estimate
    est = _estimate_ms(fn, device, rep_ms)
    for _ in range(int(min(warmup_ms / est, 1000))):
        fn()
    reps = int(min(max(rep_ms / est, min_reps), max_reps))
    if device.type != "cuda":
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1e6)
        return samples
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush:
            flush_l2(device, flush_mode)
        _hold_gpu()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize(device)
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]


def graph_time(fn: Callable[[], object], device: torch.device, *, calls: int = 50, replays: int = 10) -> list[float]:
    """Per-call microseconds of ``fn`` replayed from a captured CUDA/HIP graph (no launch overhead, warm L2)."""
    if device.type != "cuda":
        raise ValueError("graph replay needs a GPU")
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize(device)
    out = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e3 / calls)
    del graph
    return out


def kernel_time(
    fn: Callable[[], object], device: torch.device, *, calls: int = 20, flush_mode: str = "read"
) -> list[float]:
    """Per call: microseconds of device activity (kernels, memsets, copies) the call launched, L2 flushed before it.

    torch.profiler records the device activities (CUPTI on CUDA, roctracer on ROCm).  A call's activities are those
    between the spin that precedes it and a one-cycle spin enqueued right after it on the same stream (found by the
    name of PyTorch's ``spin_kernel``; on ROCm not yet run on AMD hardware: where the name differs, this raises and
    the micro job records why).  The profiler stays attached to the process (see ``mark_profiler_used``): the
    caller's host timings end here.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    if device.type != "cuda":
        raise ValueError("kernel time needs a GPU")
    _check_flush_mode(flush_mode)
    fn()
    mark_profiler_used()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush_l2(device, flush_mode)
            _hold_gpu()
            fn()
            torch.cuda._sleep(1)  # closes the call's span on the timeline
        torch.cuda.synchronize(device)
    acts = sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA), key=lambda e: e.time_range.start)
    out: list[float] = []
    inside, total = False, 0.0
    for e in acts:
        if "spin_kernel" in e.name:
            if inside:
                out.append(total)
            inside, total = not inside, 0.0
        elif inside:
            total += e.time_range.elapsed_us()
    if len(out) != calls:
        raise RuntimeError(f"the profiler recorded {len(out)} of {calls} calls (device activities lost)")
    return out


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def iqr(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[2] - q[0]


def copy_bandwidth_gbs(device: torch.device, nbytes: int = 1 << 30) -> float:
    """The device's measured copy ceiling in GB/s (bytes read + bytes written over the median copy time)."""
    if device.type == "cpu":
        nbytes = min(nbytes, 64 << 20)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    samples = bench(lambda: dst.copy_(src), device, warmup_ms=20, rep_ms=200, min_reps=5, flush=False)
    return 2 * nbytes / (median(samples) * 1e-6) / 1e9
