"""The correctness job's input cases (workers/jobs/input_cases.py): every kernel of the registry passes each one on the
test device (compiled on a GPU, interpreted on the CPU), and each case catches the defect it exists for — an
implementation planted with that defect fails that case, named in the job's error, and only that case."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from kernels import registry
from kernels.entries import rmsnorm as rmsnorm_entry
from kernels.launch import next_pow2
from kernels.registry import Impl
from workers.jobs import correctness, input_cases
from workers.spec import STATUS_INCORRECT, STATUS_OK, JobSpec

CASE_NAMES = [c.name for c in input_cases.CASES]


def _job(kernel: str, shape, dtype: str, impls) -> JobSpec:
    return JobSpec(
        kind="correctness", kernel=kernel, shape=list(shape), dtype=dtype, impls=list(impls), params={"seed": 3}
    )


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("kernel", sorted(registry.builtin()))
def test_every_kernel_passes_every_case(kernel, dtype, device):
    entry = registry.get(kernel)
    res = correctness.run(_job(kernel, entry.contract.small_shape, dtype, ["triton", "eager"]), device)
    assert res.status == STATUS_OK, res.error
    cases = res.details["cases"]
    assert list(cases) == CASE_NAMES
    applied = [name for name, figures in cases.items() if figures.get("applies", True)]
    # near_max is for 16-bit dtypes only; every other case applies to every kernel at its contract shape
    assert applied == [n for n in CASE_NAMES if n != "near_max" or dtype != "fp32"], cases
    for name in applied:
        assert set(cases[name]) == {"triton", "eager"} and all(f["ok"] for f in cases[name].values()), (name, cases)


# ------------------------------------------------------------------------------------------------ planted defects
def _rms(x, weight, eps, square=lambda v: v * v):
    xf = x.float()
    return (xf * torch.rsqrt(square(xf).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def _squares_in_fp16(x, weight, eps):
    return _rms(x, weight, eps, square=lambda v: (v.half() * v.half()).float())


def _swallows_nan(x, weight, eps):
    return torch.nan_to_num(_rms(x, weight, eps), nan=0.0, posinf=0.0)


def _no_eps(x, weight, eps):
    return _rms(x, weight, 0.0)


def _reads_rows_packed(x, weight, eps):
    """Ignores the row stride: reads the rows as if they were packed one after another."""
    packed = torch.as_strided(x, x.shape, torch.empty(x.shape).stride(), x.storage_offset())
    return _rms(packed, weight, eps)


def _drops_the_last_partial_block(x, weight, eps):
    """Writes only the first power-of-two block of each row: the rest is left unwritten (poisoned NaN)."""
    out = _rms(x, weight, eps)
    block = 1 << (x.shape[-1].bit_length() - 1)
    if block < x.shape[-1]:
        out[..., block:] = float("nan")
    return out


def _narrow_rows_wrong(x, weight, eps):
    """Right for power-of-two rows only: a row narrower than its block is normalised over the whole block."""
    width = x.shape[-1]
    block = next_pow2(width)
    if block == width:
        return _rms(x, weight, eps)
    xf = x.float()
    ms = (xf * xf).sum(-1, keepdim=True) / block
    return (xf * torch.rsqrt(ms + eps) * weight.float()).to(x.dtype)


PLANTED = [
    # squares above 65,504 overflow fp16: activations in the hundreds already do (300 ** 2)
    (_squares_in_fp16, "bf16", ("large", "near_max")),
    (_swallows_nan, "bf16", ("nan_inf",)),
    (_no_eps, "fp32", ("zero_tiny_rows",)),
    (_reads_rows_packed, "bf16", ("strided_rows",)),
    # a row that is not a power of two, either side of one, ends in a partial block
    (_drops_the_last_partial_block, "bf16", ("width_over_block", "width_under_block")),
    (_narrow_rows_wrong, "fp32", ("width_over_block", "width_under_block")),
]


@pytest.mark.parametrize("fn,dtype,cases", PLANTED, ids=[p[0].__name__.strip("_") for p in PLANTED])
def test_a_planted_defect_fails_its_case(fn, dtype, cases, device, monkeypatch):
    real = registry.get("rmsnorm")
    planted = dataclasses.replace(real, impls={**real.impls, "planted": Impl("planted", lambda: fn)})
    monkeypatch.setattr(correctness.registry, "get", lambda name: planted if name == "rmsnorm" else real)
    res = correctness.run(_job("rmsnorm", (2, 12, 64), dtype, ["eager", "planted"]), device)
    assert res.status == STATUS_INCORRECT
    failed = [name for name, figures in res.details["cases"].items() if not figures.get("planted", {"ok": True})["ok"]]
    assert failed == list(cases)
    assert res.error.startswith(f"planted: case {cases[0]}: ")
    correct = {(m.impl, m.metric): m.value for m in res.measurements}
    assert correct[("planted", "correct")] == 0.0 and correct[("eager", "correct")] == 1.0
    assert rmsnorm_entry.ENTRIES[0] is real


def test_overflow_of_the_output_dtype_is_expected_as_inf():
    """Where the float64 reference overflows the output's dtype, the output must be inf of that sign (as rounding
    the reference does it), and NaN where the reference is NaN; anything else there fails."""
    ref = torch.tensor([1.0, 1e6, -1e6, float("nan")], dtype=torch.float64)
    good = torch.tensor([1.0, float("inf"), float("-inf"), float("nan")], dtype=torch.float16)
    assert correctness.compare(good, ref, (1e-3, 1e-3)).ok
    for bad in ([1.0, 65504.0, float("-inf"), float("nan")], [1.0, float("inf"), float("-inf"), 0.0]):
        chk = correctness.compare(torch.tensor(bad, dtype=torch.float16), ref, (1e-3, 1e-3))
        assert not chk.ok and "NaN/inf elements of the reference not reproduced" in chk.note
