"""kernels.rmsnorm: RMSNorm with torch / diffusers / llama rounding, on the CPU through Triton's interpreter."""

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.entries.rmsnorm import ENTRIES
from kernels.launch import eager_direct
from kernels.registry import DTYPES
from kernels.rmsnorm import LAUNCH, NUMERICS, rms_norm, rms_norm_into
from kernels.rounding import ROUND_BF16, ROUND_FP16, round_trip
from kernels.rows import NormLaunch, row_launch_config
from tests.support.kernel_tests import assert_impls_match_reference, gpu_test, rand

HALF = (torch.bfloat16, torch.float16)


def reference(x, weight, eps):
    x64 = x.double()
    y = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight.double()


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def assert_matches_module(out, expected):
    """Same dtype and shape; bit-exact for half outputs except, rarely, one ulp where the fp32 row sum's order
    (the one thing a kernel cannot mirror) tips a rounding; within a few ulps for fp32 outputs.

    Also used between two launches of the kernel: on a GPU the sum's order follows the compiled layout, which
    changes with strides and launch knobs (under the interpreter the two are equal).
    """
    assert out.dtype == expected.dtype and out.shape == expected.shape
    diff = (out.double() - expected.double()).abs()
    bound = 4 * torch.finfo(expected.dtype).eps * (expected.double().abs() + 1)
    assert bool((diff <= bound).all()), f"max diff {diff.max().item()}"
    if expected.dtype in HALF:
        n_diff = int((diff > 0).sum())
        assert n_diff <= 1 + 1e-3 * out.numel(), f"{n_diff} of {out.numel()} elements differ"


# ------------------------------------------------------------------------------------------------ rounding
@triton.jit
def _round_trip_kernel(x_ptr, out_ptr, n, CODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    tl.store(out_ptr + offs, round_trip(tl.load(x_ptr + offs, mask=ok, other=0.0), CODE), mask=ok)


def _rounding_cases(dtype: torch.dtype) -> torch.Tensor:
    """Random values over the whole exponent range, exact ties, the subnormal range, overflow and specials."""
    g = torch.Generator().manual_seed(7)
    spread = torch.randn(4000, generator=g) * torch.exp2(torch.randint(-30, 18, (4000,), generator=g).float())
    below = (torch.randn(500, generator=g) * 100).to(dtype)
    above = (below.view(torch.int16) + 1).view(dtype)  # the next value of the dtype away from zero
    ties = (below.float() + above.float()) / 2  # exactly halfway: ties go to the even neighbour
    fi = torch.finfo(dtype)
    tiny = torch.tensor(
        [
            fi.smallest_normal,
            fi.smallest_normal / 3,
            2.0**-24,
            2.0**-25,
            1.5 * 2.0**-25,
            2.0**-26,
            3 * 2.0**-25,
            1e-40,
            0.0,
            -0.0,
            2.0**-133,
        ]
    )
    big = torch.tensor(
        [fi.max, 65519.0, 65520.0, 70000.0, 3.3e38, 3.4028235e38, float("inf"), float("-inf"), float("nan")]
    )
    return torch.cat([spread, ties, -ties, tiny, -tiny, big, -big])


@pytest.mark.parametrize("dtype,code", [(torch.bfloat16, ROUND_BF16), (torch.float16, ROUND_FP16)])
def test_round_trip_rounds_like_torch(dtype, code, device):
    x = _rounding_cases(dtype).to(device)
    out = torch.empty_like(x)
    _round_trip_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), CODE=code, BLOCK=256)
    expected = x.to(dtype).float()
    nan = expected.isnan()
    assert torch.equal(out.isnan(), nan)
    assert torch.equal(out[~nan].view(torch.int32), expected[~nan].view(torch.int32))  # bitwise, signed zeros too


# ------------------------------------------------------------------------------------------------ float64 reference
@pytest.mark.parametrize("numerics", NUMERICS)
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-6), (torch.bfloat16, 8e-3), (torch.float16, 1e-3)])
@pytest.mark.parametrize("width", [1000, 3000])
def test_matches_float64_reference(numerics, dtype, tol, width, device):
    x = rand((2, 3, width), dtype).to(device)
    w = rand((width,), dtype, seed=1, scale=0.1, offset=1.0).to(device)
    out = rms_norm(x, w, 1e-6, numerics=numerics)
    assert out.shape == x.shape and out.dtype == dtype
    assert rel_err(out, reference(x, w, 1e-6)) < tol


@pytest.mark.parametrize("dtype", list(DTYPES.values()))
def test_without_weight(dtype, device):
    x = rand((3, 257), dtype).to(device)
    for numerics in NUMERICS:
        out = rms_norm(x, None, 1e-5, numerics=numerics)
        assert out.dtype == dtype
        assert rel_err(out, reference(x, None, 1e-5)) < (1e-6 if dtype == torch.float32 else 8e-3)


def test_eps_is_used(device):
    x = rand((2, 64), torch.float32).to(device) * 1e-3
    out = rms_norm(x, None, 1e-4)
    assert rel_err(out, reference(x, None, 1e-4)) < 1e-6
    assert rel_err(out, reference(x, None, 1e-6)) > 1e-2


# ------------------------------------------------------------------------------------------- the modules it mirrors
@pytest.mark.parametrize("dtype", HALF + (torch.float32,))
def test_torch_numerics_equal_torch_nn_rmsnorm(dtype, device):
    m = torch.nn.RMSNorm(2048, eps=1e-5).to(device=device, dtype=dtype)
    with torch.no_grad():
        m.weight.copy_(rand((2048,), dtype, seed=3, scale=0.2, offset=1.0))
    x = rand((2, 7, 2048), dtype).to(device)
    with torch.no_grad():
        assert_matches_module(rms_norm(x, m.weight, 1e-5, numerics="torch"), m(x))


@pytest.mark.parametrize("x_dtype", HALF)
@pytest.mark.parametrize("w_dtype", [None, torch.bfloat16, torch.float16, torch.float32])
def test_diffusers_numerics_equal_diffusers_rmsnorm(x_dtype, w_dtype, device):
    from diffusers.models.normalization import RMSNorm

    width = 1000
    m = RMSNorm(width, eps=1e-6, elementwise_affine=w_dtype is not None).to(device)
    if w_dtype is not None:
        m = m.to(w_dtype)
        with torch.no_grad():
            m.weight.copy_(rand((width,), w_dtype, seed=4, scale=0.2, offset=1.0))
    x = rand((3, 5, width), x_dtype).to(device)
    with torch.no_grad():
        expected = m(x)
        out = rms_norm(x, m.weight, 1e-6, numerics="diffusers")
    # with an fp32 weight the module's output stays fp32; with a half weight it is the weight's dtype
    assert expected.dtype == (x_dtype if w_dtype is None else w_dtype)
    assert_matches_module(out, expected)


@pytest.mark.parametrize("x_dtype", HALF)
@pytest.mark.parametrize("w_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_llama_numerics_equal_llama_rmsnorm(x_dtype, w_dtype, device):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    m = LlamaRMSNorm(3000, eps=1e-6).to(device=device, dtype=w_dtype)
    with torch.no_grad():
        m.weight.copy_(rand((3000,), w_dtype, seed=5, scale=0.2, offset=1.0))
    x = rand((4, 3000), x_dtype).to(device)
    with torch.no_grad():
        expected = m(x)
        out = rms_norm(x, m.weight, 1e-6, numerics="llama")
    assert expected.dtype == torch.promote_types(w_dtype, x_dtype)
    assert_matches_module(out, expected)


def test_numerics_modes_round_differently(device):
    """The three modes are not the same computation: on bf16 they disagree somewhere (the test has teeth)."""
    x = rand((8, 1024), torch.bfloat16).to(device)
    w = rand((1024,), torch.bfloat16, seed=6, scale=0.3, offset=1.0).to(device)
    t, d = rms_norm(x, w, numerics="torch"), rms_norm(x, w, numerics="diffusers")
    assert not torch.equal(t, d)
    assert torch.equal(d, rms_norm(x, w, numerics="llama"))  # bf16 weight and input: same two roundings


# ------------------------------------------------------------------------------------------------ layouts and sizes
def test_non_contiguous_inputs(device):
    base = rand((3, 6, 2 * 300), torch.bfloat16).to(device)
    w_base = rand((600,), torch.bfloat16, seed=2, scale=0.1, offset=1.0).to(device)
    x = base[:, :, ::2]  # last-dim stride 2
    w = w_base[::2]
    expected = rms_norm(x.contiguous(), w.contiguous(), numerics="diffusers")
    assert_matches_module(rms_norm(x, w, numerics="diffusers"), expected)

    xt = rand((5, 3, 128), torch.float16).to(device).transpose(0, 1)  # [3, 5, 128], rows not collapsible
    assert_matches_module(rms_norm(xt), rms_norm(xt.contiguous()))

    x4 = rand((2, 4, 3, 64), torch.float32).to(device).permute(1, 0, 2, 3)  # 4-D, leading dims not mergeable
    assert torch.allclose(rms_norm(x4), rms_norm(x4.contiguous()), rtol=0, atol=1e-6)


@pytest.mark.parametrize("shape", [(64,), (1, 3000), (4, 3, 2, 96), (1, 1, 1)])
def test_shapes(shape, device):
    x = rand(shape, torch.float32).to(device)
    w = rand(shape[-1:], torch.float32, seed=1, offset=1.0).to(device)
    out = rms_norm(x, w)
    assert out.shape == x.shape
    assert rel_err(out, reference(x, w, 1e-6)) < 1e-6


@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 64), (3, 0)])
def test_zero_size(shape, device):
    x = torch.empty(shape, device=device)
    w = torch.ones(shape[-1], device=device)
    out = rms_norm(x, w)
    assert out.shape == x.shape


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lead=st.lists(st.integers(1, 4), min_size=0, max_size=2),
    width=st.integers(1, 300),
    dtype=st.sampled_from(list(DTYPES.values())),
    numerics=st.sampled_from(NUMERICS),
    with_weight=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_shapes(lead, width, dtype, numerics, with_weight, seed, device):
    x = rand((*lead, width), dtype, seed).to(device)
    w = rand((width,), dtype, seed + 1, scale=0.2, offset=1.0).to(device) if with_weight else None
    out = rms_norm(x, w, 1e-6, numerics=numerics)
    ref = reference(x, w, 1e-6)
    assert out.shape == x.shape and not torch.isnan(out).any()
    tol = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
    assert (out.double() - ref).abs().max().item() <= tol * (ref.abs().max().item() + 1)


# ------------------------------------------------------------------------------------------------ the out= launcher
def test_into_writes_poisoned_out_and_config_override(device):
    x = rand((9, 200), torch.bfloat16).to(device)
    w = rand((200,), torch.bfloat16, seed=1, offset=1.0).to(device)
    expected = rms_norm(x, w, numerics="llama")
    for config in (None, NormLaunch(1, 1), (4, 2), {"rows_per_program": 16, "num_warps": 4}):
        out = torch.full_like(x, float("nan"))
        assert rms_norm_into(out, x, w, numerics="llama", _config=config) is out
        assert_matches_module(out, expected)


def test_launch_config_packs_narrow_rows():
    assert row_launch_config(4096).rows_per_program == 1
    assert row_launch_config(2048).rows_per_program == 1
    assert row_launch_config(128).rows_per_program == 16
    assert row_launch_config(16).rows_per_program == 32
    with pytest.raises(ValueError, match="rows_per_program"):
        NormLaunch(3, 4)


def test_the_launch_table_by_architecture_name():
    """An architecture's entry without its device (compiling for another GPU): wave64 CDNA takes half the warps of
    the wave32 rule at the same width; an unknown name gets the generic entry, as the CPU does."""
    from kernels.arch import arch_launch, for_arch, row_num_warps

    assert for_arch("gfx950").warp_size == 64 and for_arch("gfx1201").warp_size == 32
    assert [for_arch("gfx950").warps_for(b) for b in (512, 2048, 8192)] == [2, 4, 8]
    assert all(for_arch("gfx950").warps_for(b) * 2 == for_arch("generic").warps_for(b) for b in (512, 2048, 8192))
    assert for_arch("sm_90").warps_for(512) == 2 and LAUNCH.for_arch("sm_90").measured
    assert LAUNCH.for_arch("gfx950") is LAUNCH.default  # no row measured there
    assert for_arch("nosuch") is arch_launch(torch.device("cpu")) and for_arch("nosuch").arch == "generic"
    assert row_num_warps(2048) == for_arch("generic").warps_for(2048)


def test_launch_config_takes_the_kernels_measured_warps():
    """Where a kernel's launch table has measured warps for a row width on the architecture compiled for (sm_90:
    2048), its launches use them; other widths, and kernels whose table has no such row, keep the rule."""
    from kernels.adaln import ADALN_LAYER_NORM_LAUNCH
    from kernels.arch import compile_target, for_arch

    measured = dict(LAUNCH.for_arch("sm_90").warps)  # docs/perf/tune-h200.md: 1 warp at 2048
    assert measured[2048] != for_arch("sm_90").warps_for(2048)
    with compile_target("sm_90"):
        assert row_launch_config(2048, None, LAUNCH).num_warps == measured[2048]
        assert row_launch_config(4096, None, LAUNCH).num_warps == 8 == for_arch("sm_90").warps_for(4096)
        assert row_launch_config(2048).num_warps == for_arch("sm_90").warps_for(2048) == 8  # the rule alone
        # the LayerNorm variant has its own measured rows
        assert row_launch_config(2048, None, ADALN_LAYER_NORM_LAUNCH).num_warps == 2
        assert row_launch_config(4096, None, ADALN_LAYER_NORM_LAUNCH).num_warps == 4
    with compile_target("gfx950"):  # no measured row there: the rule
        assert row_launch_config(2048, None, LAUNCH).num_warps == for_arch("gfx950").warps_for(2048)
    assert row_launch_config(2048, None, LAUNCH).num_warps == for_arch("generic").warps_for(2048)  # the CPU


def test_into_rejects_bad_out(device):
    x = rand((4, 32), torch.bfloat16).to(device)
    with pytest.raises(ValueError, match="out has shape"):
        rms_norm_into(torch.empty(4, 31, dtype=torch.bfloat16, device=device), x)
    with pytest.raises(TypeError, match="out has dtype"):
        rms_norm_into(torch.empty(4, 32, device=device), x)
    with pytest.raises(TypeError, match="_config"):
        rms_norm_into(torch.empty_like(x), x, _config="fast")


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda x, w: rms_norm(x.tolist(), w), TypeError, "x must be a torch.Tensor"),
        (lambda x, w: rms_norm(x.to(torch.int32), None), TypeError, "x has dtype torch.int32"),
        (lambda x, w: rms_norm(x, w[:-1]), ValueError, r"weight has shape \[15\]; expected \[16\]"),
        (lambda x, w: rms_norm(x, w[None]), ValueError, "weight has shape"),
        (lambda x, w: rms_norm(x, w.to(torch.int64)), TypeError, "weight has dtype"),
        (lambda x, w: rms_norm(x, w, numerics="gemma"), ValueError, "numerics='gemma'.*'torch', 'diffusers', 'llama'"),
        (lambda x, w: rms_norm(x, w, eps=-1.0), ValueError, "eps"),
        (lambda x, w: rms_norm(x, w, eps="1e-6"), TypeError, "eps"),
        (lambda x, w: rms_norm(x[0, 0], w), ValueError, "x must have at least one dimension"),
    ],
)
def test_bad_input_raises(call, exc, match, device):
    x = rand((2, 16), torch.float32).to(device)
    w = torch.ones(16, device=device)
    with pytest.raises(exc, match=match):
        call(x, w)


def test_too_many_rows_rejected(device):
    x = torch.empty(1, 1, device=device).expand(2**31, 1)  # no memory behind it: the check comes first
    with pytest.raises(ValueError, match="x has 2147483648 rows"):
        rms_norm(x)


def test_op_and_direct_launch_agree(device):
    """Plain eager calls launch directly; anything needing the op (autograd here) goes through it: same result."""
    x = rand((3, 5, 300), torch.bfloat16).to(device)
    w = rand((300,), torch.bfloat16, 1, 0.2, 1.0).to(device)
    assert eager_direct(x, w) and not eager_direct(x.float().requires_grad_(), w)
    via_op = torch.ops.kernelfleet.rms_norm(x, w, 1e-6, "diffusers")
    assert torch.equal(rms_norm(x, w, 1e-6, numerics="diffusers"), via_op)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        assert not eager_direct(torch.empty(2, 3))


def test_cpu_tensor_without_interpreter_is_rejected(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="x is a CPU tensor"):
        rms_norm(torch.randn(2, 8))


def test_backward_raises(device):
    x = rand((2, 32), torch.float32).to(device).requires_grad_()
    out = rms_norm(x)
    with pytest.raises(RuntimeError, match="forward-only"):
        out.sum().backward()


# ------------------------------------------------------------------------------------------------ registry entry
def _entry():
    (entry,) = ENTRIES
    return entry


@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_entry_impls_agree_with_reference(dtype_name, device):
    entry = _entry()
    inputs = entry.make_inputs([2, 3, 1000], DTYPES[dtype_name], device, torch.Generator().manual_seed(0))
    ref = entry.reference(inputs)
    assert ref.dtype == torch.float64
    assert_impls_match_reference(entry, inputs, ref, dtype_name, device, impls=("triton", "eager", "F.rms_norm"))
    max_rel = entry.tolerances[dtype_name][0]
    # a wrong answer fails the tolerance: the check has teeth
    assert rel_err(entry.impls["eager"].make()(**{**inputs, "eps": 1.0}), ref) > max_rel


def test_entry_compile_on_a_tiny_shape(device):
    entry = _entry()
    inputs = entry.make_inputs([2, 64], torch.float32, device, torch.Generator().manual_seed(1))
    assert entry.impls["compile"].unavailable(device) is None
    out = entry.impls["compile"].make()(**inputs)
    assert rel_err(out, entry.reference(inputs)) <= entry.tolerances["fp32"][0]


def test_entry_unavailable_reasons():
    entry = _entry()
    cpu = torch.device("cpu")
    assert "GPU" in entry.impls["compile_max"].unavailable(cpu)
    assert entry.impls["liger"].unavailable(cpu)  # not installed here, or not on a GPU


def test_entry_model():
    entry = _entry()
    assert entry.bytes_moved([2, 1320, 2048], torch.bfloat16) == (2 * 2 * 1320 * 2048 + 2048) * 2
    assert entry.flops([4, 8]) == 4 * 32
    with pytest.raises(ValueError, match=r"\[\.\.\., D\]"):
        entry.check_shape([2, 0, 64])
    inputs = entry.make_inputs([2, 8], torch.bfloat16, torch.device("cpu"), torch.Generator().manual_seed(0))
    again = entry.make_inputs([2, 8], torch.bfloat16, torch.device("cpu"), torch.Generator().manual_seed(1))
    assert (inputs["x"] != 0).all() and not torch.equal(inputs["x"], again["x"])
    out = entry.alloc_out(inputs)
    assert out.shape == inputs["x"].shape and out.dtype == torch.bfloat16


# ------------------------------------------------------------------------------------------------ GPU only
@gpu_test
def test_torch_compile_fullgraph_traces_the_op():
    x = torch.randn(4, 300, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, device="cuda", dtype=torch.bfloat16)

    def f(x, w):
        return rms_norm(x * 2, w, 1e-6, numerics="diffusers") + 1

    compiled = torch.compile(f, fullgraph=True)
    assert_matches_module(compiled(x, w), f(x, w))


@gpu_test
def test_opcheck():
    x = torch.randn(3, 100, 1000, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1000, device="cuda", dtype=torch.bfloat16)
    for numerics in NUMERICS:
        torch.library.opcheck(
            torch.ops.kernelfleet.rms_norm.default,
            (x, w, 1e-6, numerics),
            test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"),
        )
        torch.library.opcheck(
            torch.ops.kernelfleet.rms_norm.default,
            (x, None, 1e-6, numerics),
            test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"),
        )


@gpu_test
def test_gpu_matches_modules():
    from diffusers.models.normalization import RMSNorm

    x = torch.randn(2, 1320, 2048, device="cuda", dtype=torch.bfloat16)
    m = RMSNorm(2048, eps=1e-6, elementwise_affine=False)
    assert_matches_module(rms_norm(x, None, 1e-6, numerics="diffusers"), m(x))
    t = torch.nn.RMSNorm(2048, eps=1e-5, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        t.weight.normal_(1.0, 0.2)
        assert_matches_module(rms_norm(x, t.weight, 1e-5, numerics="torch"), t(x))
    assert_matches_module(rms_norm(x, t.weight, 1e-5, numerics="torch"), F.rms_norm(x, (2048,), t.weight, 1e-5))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")
def test_weight_on_another_device_is_rejected():
    x = torch.randn(2, 16, device="cuda")
    with pytest.raises(ValueError, match="weight is on cpu but x is on cuda"):
        rms_norm(x, torch.ones(16))
