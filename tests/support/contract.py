"""What every kernel of the registry must do, checked from its entry alone (tests/kernels/test_contract.py runs each
check on every kernel of kernels/entries/; tests/kernels/test_add_a_kernel.py on a kernel written in the test).

Each check takes a :class:`kernels.registry.KernelEntry` and calls its ``triton`` implementation on inputs its
``make_inputs`` draws at its contract's small shape (:class:`kernels.registry.Contract`), on the CPU through Triton's
interpreter: bad inputs raise naming the argument; an ``_into`` call writes every element of the outputs it is given;
a repeated eager call replays its launch plan, launching what the full path launches (Triton's compile and launch
faked: :mod:`tests.support.fake_launch`); a traced call records the kernel's torch op; a call autograd records
raises on backward.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from kernels import launch_plans
from kernels.arch import interpreting
from kernels.registry import KernelEntry

# The CPU through Triton's interpreter; on a GPU host (compiled Triton) CPU tensors are refused, so the GPU
DEVICE = torch.device("cpu" if interpreting() else "cuda")


def inputs_of(entry: KernelEntry, dtype=torch.bfloat16, seed: int = 0) -> dict:
    """Fresh inputs of the entry at its contract's small shape, on DEVICE (drawn on the CPU generator)."""
    return entry.make_inputs(entry.contract.small_shape, dtype, DEVICE, torch.Generator().manual_seed(seed))


def triton_impl(entry: KernelEntry):
    return entry.impls["triton"].make()


def as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def float_tensor_inputs(inputs: dict) -> list[str]:
    return [k for k, v in inputs.items() if isinstance(v, torch.Tensor) and v.is_floating_point()]


def check_bad_inputs(entry: KernelEntry) -> None:
    """Each tensor input as an integer tensor, and as a list: a TypeError whose message starts with the input's name,
    from the allocating call and from the ``out=`` one."""
    fn = triton_impl(entry)
    inputs = inputs_of(entry)
    names = float_tensor_inputs(inputs)
    assert names, f"{entry.name}: make_inputs gives no float tensor"
    for name in names:
        for bad in (inputs[name].to(torch.int32), inputs[name].tolist()):
            for out in (None, entry.alloc_out(inputs)):
                with pytest.raises(TypeError) as caught:
                    fn(**{**inputs, name: bad}, out=out)
                assert str(caught.value).startswith(name), f"{entry.name}, bad {name}: {caught.value}"


def check_into_writes_every_element(entry: KernelEntry, dtype=torch.bfloat16) -> None:
    """The ``out=`` call returns the outputs it was given, NaN-poisoned before, each equal bit for bit to what the
    allocating call returns."""
    fn = triton_impl(entry)
    inputs = inputs_of(entry, dtype)
    want = as_tuple(fn(**inputs))
    out = entry.alloc_out(inputs)
    for t in as_tuple(out):
        t.fill_(float("nan"))
    got = as_tuple(fn(**inputs, out=out))
    assert all(g is o for g, o in zip(got, as_tuple(out))), f"{entry.name}: the out= call did not return its out"
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert torch.isfinite(w).all() and torch.equal(g, w), entry.name


def _roles(launch: tuple, tensors: dict) -> tuple:
    """A logged launch with every device address replaced by the name of the tensor at that address (the kernel's
    arguments flattened where the launch takes them as one sequence, as Triton 3.7's does)."""
    at = {t.data_ptr(): name for name, t in tensors.items()}
    flat = launch[:-1] + launch[-1] if isinstance(launch[-1], tuple) else launch
    return tuple(at.get(a, a) if isinstance(a, int) and not isinstance(a, bool) else a for a in flat)


def _tensors(inputs: dict, out) -> dict:
    tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    return {**tensors, **{f"out{i}": t for i, t in enumerate(as_tuple(out))}}


def check_launch_plan(entry: KernelEntry, log: list, monkeypatch) -> None:
    """With the fast launch faked (``log``: :func:`tests.support.fake_launch.install`): the first call records a
    plan for its geometry; a call on other tensors of that geometry replays it, one launch that passes exactly what
    the full path (checks, set-up, launch) passes for the same tensors, every address one of the call's tensors;
    bad input still raises once the plan exists."""
    fn = triton_impl(entry)
    plans = launch_plans.PLANS[entry.function.__name__]
    a, b = inputs_of(entry, seed=0), inputs_of(entry, seed=1)
    fn(**a)
    recorded = list(plans.plans.values())
    assert len(recorded) == 1 and isinstance(recorded[0], launch_plans._Plan), f"{entry.name}: no plan recorded"
    log.clear()
    out = fn(**b)
    assert len(log) == 1, f"{entry.name}: {len(log)} launches replayed"
    replayed = _roles(log[0], _tensors(b, out))
    assert all(isinstance(v, str) or not isinstance(v, int) or v < 1 << 32 for v in replayed), (
        f"{entry.name}: every address in the launch is one of the call's tensors"
    )
    name = float_tensor_inputs(b)[0]
    with pytest.raises(TypeError):
        fn(**{**b, name: b[name].to(torch.int32)})

    log.clear()
    with monkeypatch.context() as m:
        m.setattr(launch_plans.LaunchPlans, "find", lambda self, *items: (None, None))  # the full path
        out = fn(**b)
    assert len(log) == 1
    assert replayed == _roles(log[0], _tensors(b, out)), entry.name


def op_name(entry: KernelEntry) -> str:
    """The kernel's torch op, as a traced graph names it."""
    return f"kernelfleet.{entry.function.__name__}.default"


def check_tracing_sees_the_op(entry: KernelEntry) -> None:
    """make_fx of a call records the kernel's ``kernelfleet::`` op (what torch.compile and export see)."""
    fn = triton_impl(entry)
    inputs = inputs_of(entry, torch.float32)
    names = [k for k, v in inputs.items() if isinstance(v, torch.Tensor)]

    def call(*tensors):
        return fn(**{**inputs, **dict(zip(names, tensors))})

    graph = make_fx(call)(*(inputs[k] for k in names))
    ops = {str(n.target) for n in graph.graph.nodes if n.op == "call_function"}
    assert op_name(entry) in ops, f"{entry.name}: {sorted(ops)}"


def check_backward_raises(entry: KernelEntry) -> None:
    """A call that autograd records (an input requiring grad) goes through the op, whose backward raises."""
    fn = triton_impl(entry)
    inputs = inputs_of(entry, torch.float32)
    name = float_tensor_inputs(inputs)[0]
    out = as_tuple(fn(**{**inputs, name: inputs[name].requires_grad_()}))
    with pytest.raises(RuntimeError, match="forward-only"):
        sum(o.sum() for o in out).backward()


def check_all(entry: KernelEntry, monkeypatch) -> None:
    """Every check above on one entry (a new kernel's, outside the registry's own parametrised tests): bad input,
    ``_into``, the op under tracing, backward, launch plans (with every plan table emptied first)."""
    from kernels import launch_plans
    from tests.support import fake_launch

    check_bad_inputs(entry)
    check_into_writes_every_element(entry)
    check_tracing_sees_the_op(entry)
    check_backward_raises(entry)
    for plans in launch_plans.PLANS.values():
        monkeypatch.setattr(plans, "plans", {})
    check_launch_plan(entry, fake_launch.install(monkeypatch.setattr), monkeypatch)
