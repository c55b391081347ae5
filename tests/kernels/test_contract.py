"""Every kernel of kernels/entries/ keeps the contract of a public kernel function (tests/support/contract.py),
checked from its registry entry: a kernel added to the registry is checked here with no line added.

On the CPU through Triton's interpreter: bad inputs, ``_into`` outputs, launch plans (Triton's compile and launch
faked), the op under tracing, backward.  On a GPU (``gpu`` tests): the fast launch and a replayed plan give, bit for
bit, what Triton's own launch path gives.
"""

from __future__ import annotations

import pytest
import torch

from kernels import fast_launch, launch_plans, registry
from tests.support import contract, fake_launch
from tests.support.kernel_tests import gpu_test

ENTRIES = [registry.builtin()[name] for name in sorted(registry.builtin())]
IDS = [e.name for e in ENTRIES]


@pytest.fixture(params=["triton 3.6 launcher", "triton 3.7 launcher"])
def log(monkeypatch, request):
    for plans in launch_plans.PLANS.values():  # every test starts with no plans, and leaves none behind
        monkeypatch.setattr(plans, "plans", {})
    return fake_launch.install(monkeypatch.setattr, packed="3.7" in request.param)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_bad_inputs_raise_naming_the_argument(entry):
    contract.check_bad_inputs(entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_into_writes_every_element_of_its_out(entry):
    contract.check_into_writes_every_element(entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_a_repeated_call_replays_what_the_full_path_launches(entry, log, monkeypatch):
    contract.check_launch_plan(entry, log, monkeypatch)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_tracing_records_the_kernels_op(entry):
    contract.check_tracing_sees_the_op(entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_backward_raises(entry):
    contract.check_backward_raises(entry)


TABLED = [e for e in ENTRIES if e.launch_table is not None]


@pytest.mark.parametrize("entry", TABLED, ids=[e.name for e in TABLED])
def test_the_launch_table_is_the_kernels_and_round_trips_as_records(entry):
    table = entry.launch_table
    assert table.kernel == entry.name
    assert table.with_records(table.records()).rows == table.rows
    for record in table.records():
        assert isinstance(record["measured"], bool)
        assert not record["measured"] or record["source"], f"{entry.name} {record['arch']}: measured, source?"


def _gpu_calls(entry: registry.KernelEntry, seed: int):
    inputs = entry.make_inputs(
        entry.contract.small_shape, torch.bfloat16, torch.device("cuda"), torch.Generator().manual_seed(seed)
    )
    fn = contract.triton_impl(entry)
    return lambda: contract.as_tuple(fn(**inputs))


@gpu_test
@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_fast_launch_matches_tritons_launch(entry, monkeypatch):
    """The fast launcher gives, bit for bit, what Triton's own launch path gives, on repeat calls (the cached path
    and the replayed plan) and on other tensors of the same geometry (a plan recorded on one set, replayed on
    another)."""
    first, second = _gpu_calls(entry, 0), _gpu_calls(entry, 1)
    with torch.no_grad():
        monkeypatch.setattr(fast_launch, "FAST_LAUNCH", False)
        want = {0: first(), 1: second()}
        monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
        launch_plans.forget_launches()
        for _ in range(3):
            for i, call in ((0, first), (1, second)):
                for got, expected in zip(call(), want[i]):
                    assert torch.equal(got, expected), entry.name
    assert fast_launch.launch_path().fast, fast_launch.launch_path().reason  # a checked Triton build
    plans = launch_plans.PLANS[entry.function.__name__].plans.values()
    assert any(isinstance(p, launch_plans._Plan) for p in plans), f"{entry.name}: no plan recorded"
