"""workers.timing: samples per repeat, the flush modes, graph replay on a GPU."""
import pytest
import torch

from tests.support.kernel_tests import gpu_test
from workers import timing


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
