"""kernels.geglu: GELU (tanh approximation) and GEGLU, on the CPU through Triton's interpreter."""

import functools
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.entries.geglu import ENTRIES
from kernels.geglu import ElementwiseConfig, elementwise_config, geglu, geglu_into, gelu_tanh, gelu_tanh_into
from kernels.registry import DTYPES
from tests.support import kernel_tests
from tests.support.devices import ON_GPU
from tests.support.kernel_tests import FLOATS, assert_impls_match_reference, gpu_test

rand = functools.partial(kernel_tests.rand, scale=2.0)  # GELU's curve needs the wider range


def gelu64(x):
    x = x.double()
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def geglu_eager(x):
    half = x.shape[-1] // 2
    return F.gelu(x[..., :half], approximate="tanh") * x[..., half:]


def assert_close_to_eager(out, expected, x):
    """Within one ulp of torch per element, up to torch's own error in the negative tail: torch computes
    0.5*x*(1 + tanh(a)), where 1 + tanh(a) cancels (absolute error ~|x|*fp32 eps), while the kernel's
    x / (1 + exp(-2a)) stays accurate there; and in bf16/fp16 equal for the vast majority of elements."""
    assert out.dtype == expected.dtype and out.shape == expected.shape
    assert not torch.isnan(out).any()
    e = expected.double()
    diff = (out.double() - e).abs()
    bound = torch.finfo(expected.dtype).eps * e.abs() + torch.finfo(torch.float32).eps * x.double().abs()
    assert bool((diff <= bound).all()), f"max diff {diff.max().item()}"
    if expected.dtype != torch.float32 and out.numel() >= 1000:
        assert (diff > 0).float().mean().item() < 0.05


# ------------------------------------------------------------------------------------------------ gelu_tanh
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 5, 33), (1, 4096), (7,), (2, 3, 1)])
def test_gelu_matches_torch_and_float64(dtype, shape, device):
    x = rand(shape, dtype, seed=len(shape)).to(device)
    out = gelu_tanh(x)
    assert_close_to_eager(out.cpu(), F.gelu(x.cpu(), approximate="tanh"), x.cpu())
    ref = gelu64(x.cpu())
    # one rounding of an accurate fp32 value: within half an ulp plus the fp32 error
    assert bool(((out.cpu().double() - ref).abs() <= torch.finfo(dtype).eps * ref.abs() + 1e-6).all())


def test_gelu_extremes_stay_finite(device):
    x = torch.tensor([-1e30, -200.0, -20.0, -5.0, -1e-30, 0.0, 1e-30, 5.0, 20.0, 200.0, 1e30], device=device)
    out = gelu_tanh(x).cpu()
    assert torch.isfinite(out).all()
    ref = gelu64(x.cpu())
    # 4 ulps in the interpreter (numpy's exp); a GPU computes exp as exp2(x * log2 e) in hardware, whose error grows
    # with the argument: 9.4 ulps at x = -5 on the H200 (exp(16.9), a result of 2.3e-7), so 16 there
    ulps = 16 if ON_GPU else 4
    assert bool(((out.double() - ref).abs() <= ulps * torch.finfo(torch.float32).eps * ref.abs()).all())
    assert torch.equal(out[:3], torch.zeros(3)) and bool((out[:3].sign() <= 0).all())  # -inf tail -> -0
    assert torch.isnan(gelu_tanh(torch.tensor([float("nan")], device=device))).all()


def test_gelu_non_contiguous_zero_size_and_scalar(device):
    base = rand((4, 6, 10), torch.bfloat16, seed=1).to(device)
    for view in (base.transpose(0, 2), base[:, ::2, 1:9], base[1]):
        assert torch.equal(gelu_tanh(view).cpu(), gelu_tanh(view.contiguous()).cpu())
        assert_close_to_eager(gelu_tanh(view).cpu(), F.gelu(view.cpu(), approximate="tanh"), view.cpu())
    assert gelu_tanh(torch.empty(0, 5, device=device)).shape == (0, 5)
    scalar = torch.tensor(1.5, device=device)
    assert gelu_tanh(scalar).shape == () and abs(gelu_tanh(scalar).item() - gelu64(scalar.cpu()).item()) < 1e-6


def test_gelu_into_and_config_override(device):
    x = rand((5, 300), torch.float16, seed=2).to(device)
    expected = gelu_tanh(x)
    for cfg in (None, ElementwiseConfig(1, 64, 1), ElementwiseConfig(4, 128, 2), ElementwiseConfig(1, 4096, 8)):
        out = torch.full_like(x, float("nan"))
        assert gelu_tanh_into(out, x, _config=cfg) is out
        assert torch.equal(out, expected)
    # a strided out (a column slice of a wider buffer) is written in place, nothing outside it
    wide = torch.full((5, 400), float("nan"), dtype=torch.float16, device=device)
    gelu_tanh_into(wide[:, 50:350], x)
    assert torch.equal(wide[:, 50:350], expected) and torch.isnan(wide[:, :50]).all()


# ------------------------------------------------------------------------------------------------ geglu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 3, 64), (1, 1, 2), (4, 70), (3, 2, 5, 18)])
def test_geglu_matches_torch_and_float64(dtype, shape, device):
    x = rand(shape, dtype, seed=shape[-1]).to(device)
    out = geglu(x)
    half = shape[-1] // 2
    assert out.shape == (*shape[:-1], half) and out.dtype == dtype
    expected = geglu_eager(x.cpu())
    # gelu rounds to x's dtype before the product (as the eager expression does): at most one ulp of the
    # rounded gelu, times the value, plus the product's rounding
    diff = (out.cpu().double() - expected.double()).abs()
    eps = torch.finfo(dtype).eps
    assert bool(
        (
            diff
            <= eps * (x[..., half:].cpu().double().abs() * gelu64(x[..., :half].cpu()).abs() + expected.double().abs())
            + 1e-6
        ).all()
    )
    ref = gelu64(x[..., :half].cpu()) * x[..., half:].cpu().double()
    rel = ((out.cpu().double() - ref).norm() / ref.norm()).item()
    assert rel <= {torch.float32: 1e-6, torch.bfloat16: 8e-3, torch.float16: 1e-3}[dtype]


def test_geglu_gate_is_the_first_half(device):
    x = torch.cat([torch.full((1, 4), 3.0), torch.full((1, 4), 2.0)], -1).to(device)
    assert torch.allclose(geglu(x).cpu(), F.gelu(torch.tensor(3.0), approximate="tanh") * 2.0)


def test_geglu_rounds_gelu_before_the_product(device):
    x = rand((64, 256), torch.bfloat16, seed=3).to(device)
    out = geglu(x).cpu()
    xc = x.cpu()
    once = (gelu64(xc[:, :128]) * xc[:, 128:].double()).to(torch.bfloat16)  # a single rounding
    # the two-rounding kernel equals eager far more often than a single rounding does
    assert (out != geglu_eager(xc)).float().mean() < 0.05
    assert (once != geglu_eager(xc)).float().mean() > 2 * (out != geglu_eager(xc)).float().mean()


def test_geglu_non_contiguous_into_and_zero_size(device):
    base = rand((3, 8, 40), torch.bfloat16, seed=4).to(device)
    x = base[:, 1:7, 4:36]  # strided rows
    expected = geglu(x.contiguous())
    assert torch.equal(geglu(x), expected)
    assert torch.equal(geglu(base.transpose(0, 1)[:, :, :32]), geglu(base.transpose(0, 1)[:, :, :32].contiguous()))
    for cfg in (None, ElementwiseConfig(2, 8, 1), ElementwiseConfig(8, 16, 4)):
        out = torch.full((3, 6, 16), float("nan"), dtype=torch.bfloat16, device=device)
        assert geglu_into(out, x, _config=cfg) is out
        assert torch.equal(out, expected)
    assert geglu(torch.empty(0, 3, 8, device=device)).shape == (0, 3, 4)
    assert geglu(torch.empty(2, 0, device=device)).shape == (2, 0)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lead=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    half=st.integers(1, 70),
    dtype=st.sampled_from(FLOATS),
    seed=st.integers(0, 1000),
)
def test_random_shapes(lead, half, dtype, seed, device):
    x = rand((*lead, 2 * half), dtype, seed=seed).to(device)
    ref = gelu64(x[..., :half].cpu()) * x[..., half:].cpu().double()
    out = geglu(x).cpu()
    assert out.shape == ref.shape
    bound = 2 * torch.finfo(dtype).eps * (ref.abs() + x[..., half:].cpu().double().abs()) + 1e-6
    assert bool(((out.double() - ref).abs() <= bound).all())
    g = gelu_tanh(x).cpu()
    assert bool(((g.double() - gelu64(x.cpu())).abs() <= torch.finfo(dtype).eps * gelu64(x.cpu()).abs() + 1e-6).all())


# ------------------------------------------------------------------------------------------------ bad input
BAD_CALLS = [
    (lambda t: gelu_tanh(t.ones(3, dtype=torch.int32)), TypeError, "x has dtype"),
    (lambda t: gelu_tanh([1.0, 2.0]), TypeError, "x must be a torch.Tensor"),
    (lambda t: geglu(t.ones(2, 3, dtype=torch.float64)), TypeError, "x has dtype"),
    (lambda t: geglu(t.ones(2, 7)), ValueError, "even last dim"),
    (lambda t: geglu(t.tensor(1.0)), ValueError, r"x must be \[\.\.\., 2H\]"),
    (lambda t: geglu(t.ones(2, 8), approximate="none"), ValueError, "approximate must be one of"),
    (lambda t: geglu_into(t.empty(2, 8), t.ones(2, 8)), ValueError, r"out has shape \[2, 8\]; expected \[2, 4\]"),
    (lambda t: geglu_into(t.empty(2, 4, dtype=torch.float16), t.ones(2, 8)), TypeError, "expected torch.float32"),
    (lambda t: geglu_into(t.empty(3, 2, 4).transpose(0, 1), t.ones(2, 3, 8)), ValueError, "viewable as"),
    (lambda t: gelu_tanh_into(t.empty(3), t.ones(2)), ValueError, r"expected \[2\]"),
    (lambda t: gelu_tanh_into("out", t.ones(2)), TypeError, "out must be a torch.Tensor"),
]


@pytest.mark.parametrize("call,exc,match", BAD_CALLS)
def test_bad_input_raises(call, exc, match, device):
    """On the test device: a bad-input error names the mistake on a GPU tensor as on a CPU one."""
    factories = ("ones", "empty", "tensor")
    on_device = SimpleNamespace(**{f: functools.partial(getattr(torch, f), device=device) for f in factories})
    with pytest.raises(exc, match=match):
        call(on_device)


def test_cpu_tensor_without_interpreter_is_rejected(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="x is a CPU tensor"):
        gelu_tanh(torch.ones(4))
    with pytest.raises(ValueError, match="x is a CPU tensor"):
        geglu(torch.ones(4))


@pytest.mark.parametrize("fn", [gelu_tanh, geglu])
def test_backward_raises(fn, device):
    x = rand((2, 8), seed=5).to(device).requires_grad_()
    out = fn(x)
    with pytest.raises(RuntimeError, match="forward-only"):
        out.sum().backward()


def test_launch_config():
    flat = elementwise_config(None)
    assert flat.block_m == 1 and flat.block_n >= 1024
    narrow = elementwise_config(3)
    assert narrow.block_n == 4 and narrow.block_m * narrow.block_n == flat.block_n
    for cfg in (flat, narrow, elementwise_config(8192)):
        assert all(v >= 1 and v & (v - 1) == 0 for v in cfg)


# ------------------------------------------------------------------------------------------------ registry entries
def _entry(name):
    return next(e for e in ENTRIES if e.name == name)


@pytest.mark.parametrize("name", ["geglu", "gelu_tanh"])
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(name, dtype_name, device):
    entry = _entry(name)
    shape = [2, 5, 96]
    entry.check_shape(shape)
    inputs = entry.make_inputs(shape, DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    ref = entry.reference(inputs)
    assert ref.dtype == torch.float64 and ref.shape == tuple(shape)
    assert_impls_match_reference(entry, inputs, ref, dtype_name, device)
    max_rel = entry.tolerances[dtype_name][0]
    # a wrong answer (erf GELU instead of tanh, un-gated) fails the tolerance: the check has teeth
    x = inputs["x"]
    wrong = F.gelu(x[..., : shape[-1]]) if name == "geglu" else F.gelu(x) * 1.01
    assert ((wrong.double() - ref).norm() / ref.norm()).item() > max_rel


def test_entry_models_and_liger():
    geglu_entry, gelu_entry = _entry("geglu"), _entry("gelu_tanh")
    inputs = geglu_entry.make_inputs([1, 4, 8], torch.bfloat16, torch.device("cpu"), torch.Generator().manual_seed(1))
    assert inputs["x"].shape == (1, 4, 16)  # the shape names the output; the input is twice as wide
    assert geglu_entry.bytes_moved([4, 4096, 8192], torch.bfloat16) == 3 * 4 * 4096 * 8192 * 2
    assert gelu_entry.bytes_moved([2, 1320, 8192], torch.bfloat16) == 2 * 2 * 1320 * 8192 * 2
    for entry, bad in ((geglu_entry, []), (geglu_entry, [2, 0]), (gelu_entry, [3, -1])):
        with pytest.raises(ValueError, match=entry.name):
            entry.check_shape(bad)
    assert "liger" in geglu_entry.default_impls
    assert geglu_entry.impls["liger"].unavailable(torch.device("cpu"))  # not installed here, or not on a GPU


def test_entry_compile_on_a_tiny_shape(device):
    entry = _entry("geglu")
    inputs = entry.make_inputs([2, 8], torch.float32, device, torch.Generator().manual_seed(1))
    out = entry.impls["compile"].make()(**inputs)
    assert torch.allclose(out.double(), entry.reference(inputs), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_torch_compile_fullgraph_traces_the_ops():
    x = rand((2, 5, 96), torch.bfloat16).cuda()

    def f(x):
        return geglu(x) * 2, gelu_tanh(x) + 1

    compiled = torch.compile(f, fullgraph=True)
    got, expected = compiled(x), f(x)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    y = rand((3, 7, 96), torch.bfloat16, seed=1).cuda()  # another shape: a recompile, possibly dynamic
    got, expected = compiled(y), f(y)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


@gpu_test
def test_opcheck():
    x = rand((3, 5, 40), torch.bfloat16).cuda()
    torch.library.opcheck(torch.ops.kernelfleet.geglu.default, (x,))
    torch.library.opcheck(torch.ops.kernelfleet.gelu_tanh.default, (x,))
    torch.library.opcheck(torch.ops.kernelfleet.gelu_tanh.default, (x.transpose(0, 2),))


@gpu_test
@pytest.mark.parametrize("dtype", FLOATS)
def test_gpu_matches_torch(dtype):
    x = rand((4, 256, 1024), dtype).cuda()
    assert_close_to_eager(gelu_tanh(x), F.gelu(x, approximate="tanh"), x)
    out = geglu(x)
    expected = geglu_eager(x)
    diff = (out.double() - expected.double()).abs()
    eps = torch.finfo(dtype).eps
    assert bool((diff <= 2 * eps * (expected.double().abs() + x[..., 512:].double().abs()) + 1e-6).all())


@gpu_test
def test_liger_matches_eager_when_installed():
    pytest.importorskip("liger_kernel", reason="liger-kernel is not installed")
    entry = _entry("geglu")
    inputs = entry.make_inputs([2, 64, 512], torch.bfloat16, torch.device("cuda"), torch.Generator().manual_seed(0))
    assert torch.equal(entry.impls["liger"].make()(**inputs), geglu_eager(inputs["x"]))
