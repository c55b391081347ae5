"""workers.runtime.timing: samples per repeat, the flush modes, graph replay on a GPU."""

import pytest
import torch

from tests.support.kernel_tests import gpu_test
from workers.runtime import timing


def test_bench_returns_one_positive_sample_per_repeat_on_the_cpu():
    x = torch.randn(1000)
    samples = timing.bench(lambda: x * 2, torch.device("cpu"), warmup_ms=1, rep_ms=5, min_reps=4)
    assert len(samples) >= 4 and all(s > 0 for s in samples)
    assert timing.median([3.0, 1.0, 2.0]) == 2.0 and timing.iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == 2.0


def test_an_unknown_flush_mode_is_refused():
    with pytest.raises(ValueError, match="flush_mode must be one of write, read, got 'cold'"):
        timing.bench(lambda: None, torch.device("cpu"), flush_mode="cold")


@gpu_test
@pytest.mark.parametrize("mode", ["write", "read"])
def test_both_flush_modes_time_a_copy_on_the_gpu(mode):
    dev = torch.device("cuda")
    src = torch.randn(64 << 20, device=dev)  # 256 MB: past the L2 whatever the flush
    dst = torch.empty_like(src)
    samples = timing.bench(lambda: dst.copy_(src), dev, warmup_ms=5, rep_ms=20, flush_mode=mode)
    assert len(samples) >= 5 and all(s > 0 for s in samples)
    assert int(timing._flush_buf[dev].count_nonzero()) == 0  # flushing never changes the buffer's zeros
    graph = timing.graph_time(lambda: dst.copy_(src), dev, calls=5, replays=3)
    assert len(graph) == 3 and all(g > 0 for g in graph)


def test_kernel_time_needs_a_gpu():
    with pytest.raises(ValueError, match="kernel time needs a GPU"):
        timing.kernel_time(lambda: None, torch.device("cpu"))


@gpu_test
def test_the_read_flush_is_one_kernel_that_writes_no_copy_of_the_buffer():
    """buf.sum(dtype=int64) first wrote an int64 copy of the 256 MB buffer (512 MB of writes, ~4x the time)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    dev = torch.device("cuda")
    timing.flush_l2(dev, "read")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        timing.flush_l2(dev, "read")
        torch.cuda.synchronize()
    timing.mark_profiler_used()
    names = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
    kernels = [n for n in names if not n.startswith("Memset")]  # the reduction zeroes a few bytes of its own
    assert len(kernels) == 1 and "reduce_kernel" in kernels[0], names


@gpu_test
def test_kernel_time_counts_every_kernel_of_a_call_and_not_the_event_pair():
    dev = torch.device("cuda")
    src = torch.randn(16 << 20, device=dev)  # 64 MB
    dst = torch.empty_like(src)

    def copy():
        dst.copy_(src)

    def copy_then_scale():
        dst.copy_(src)
        dst.mul_(2.0)

    events = timing.median(timing.bench(copy, dev, warmup_ms=5, rep_ms=20))
    one = timing.kernel_time(copy, dev, calls=10)
    two = timing.kernel_time(copy_then_scale, dev, calls=10)
    assert len(one) == 10 and all(k > 0 for k in one)
    # the copy's own time is below the events around it and near its bytes over the copy ceiling (2 x 64 MB)
    assert timing.median(one) < events
    floor_us = 2 * src.nbytes / 10e12 * 1e6  # no GPU of the fleet copies at 10 TB/s (H200 4.2, MI355X ~6)
    assert timing.median(one) > floor_us
    # a second kernel reading and writing the same 64 MB adds about as much again (a little less: part of dst is
    # still in L2); a reading that kept only one kernel per call would give 1.0
    assert 1.3 < timing.median(two) / timing.median(one) < 2.6
    assert timing.profiler_used()
