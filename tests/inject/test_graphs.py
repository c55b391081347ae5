"""CUDA-graph replay of a module's calls (kernels.inject.graphs) and the e2e job's ``+graph`` modes: a forward
replayed from CUDA graphs computes what the plain forward computes, once per call geometry; on the CPU the wrapper
passes calls through and the modes are skipped."""

import pytest
import torch

from kernels.inject import cuda_graphs, remove_cuda_graphs
from workers.jobs.e2e import job as e2e
from workers.spec import STATUS_OK, JobSpec


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x, scale=1.0, *, extra=None):
        y = torch.relu(self.lin(x)) * scale
        return (y if extra is None else y + extra,)


def test_cpu_calls_pass_through_and_install_is_undone():
    net = _Net()
    graphed = cuda_graphs(net)
    x = torch.randn(3, 16)
    assert torch.equal(net(x, 2.0)[0], _Net.forward(net, x, 2.0)[0])
    assert graphed.captures == 0 and graphed.replays == 0  # no CUDA tensor: nothing captured
    with pytest.raises(RuntimeError, match="already has its own forward"):
        cuda_graphs(net)
    remove_cuda_graphs(net)
    assert "forward" not in vars(net) and net.forward.__func__ is _Net.forward


@pytest.mark.parametrize("mode", ["eager+graph", "triton+graph", "compile-max+graph"])
def test_graph_modes_are_skipped_on_cpu(mode):
    assert "CUDA graphs" in e2e.skip_reason(mode, torch.device("cpu"), {})


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_replays_match_the_forward_per_geometry():
    torch.manual_seed(0)
    net = _Net().cuda().eval()
    graphed = cuda_graphs(net)
    try:
        with torch.no_grad():
            for shape, scale in [((4, 16), 1.0), ((4, 16), 1.0), ((8, 16), 1.0), ((4, 16), 0.5), ((4, 16), 1.0)]:
                x = torch.randn(*shape, device="cuda")
                extra = torch.randn(*shape, device="cuda")
                out = net(x, scale, extra=extra)[0].clone()
                assert torch.allclose(out, _Net.forward(net, x, scale, extra=extra)[0], atol=1e-6)
        # one graph per geometry: (4,16) at scale 1.0, (8,16), (4,16) at scale 0.5; every call a replay
        assert graphed.captures == 3 and graphed.replays == 5
    finally:
        remove_cuda_graphs(net)


@pytest.mark.gpu
@pytest.mark.xdist_group("gpu-compile")  # times nothing: beside the timing tests' chain
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_e2e_graph_modes_on_a_tiny_model():
    from kernels.arch import interpreting

    if interpreting():
        pytest.skip("TRITON_INTERPRET=1 is set: GPU tests need compiled Triton")
    modes = ["eager", "eager+graph", "triton", "triton+graph", "triton+compile+graph"]
    spec = JobSpec(
        kind="e2e",
        model="ltx-video",
        shape=[9, 64, 96],
        dtype="bf16",
        impls=modes,
        key="g",
        params={"steps": 3, "repeats": 2, "tiny": True},
    )
    res = e2e.run(spec, torch.device("cuda"))
    assert res.status == STATUS_OK, res.error
    m = {(x.impl, x.metric): x.value for x in res.measurements}
    for mode in modes:
        assert m[(mode, "correct")] == 1.0
    for mode in modes[1::2] + ["triton+compile+graph"]:
        g = res.details["graph"][mode]
        assert g["captures"] == 1 and g["replays"] >= 3 * 3  # warm-up + 2 timed calls, 3 steps each
    assert m[("eager+graph", "rel_err_vs_eager")] < 1e-3  # the same kernels, replayed
