"""Launch plans (kernels.launch_plans.LaunchPlans): a repeated eager call replays the launches its first call recorded.

Run on the test device (tests/support/devices.py) with Triton's compile and launch replaced by fakes that log the C
launch call (tests/support/fake_launch.py): a replayed launch must pass exactly what the full path (checks, set-up,
launch) passes for the same tensors; bad input must still raise; calls a plan cannot repeat take the full path.  Every
kernel's own replay is checked from its registry entry (tests/kernels/test_contract.py, which on a GPU also checks
the real launches bit for bit against Triton's own launch path); here, the plans' machinery and a few more
geometries.
"""

from __future__ import annotations

import pytest
import torch

import kernels
from kernels import fast_launch, launch_plans, registry
from tests.support import contract, fake_launch
from tests.support.devices import TEST_DEVICE

BF = torch.bfloat16


def _inputs(seed):
    g = torch.Generator().manual_seed(seed)

    def r(*shape, dtype=BF):
        return torch.randn(*shape, generator=g).to(dtype).to(TEST_DEVICE)

    return dict(
        x=r(2, 12, 64),
        res=r(2, 12, 64),
        sc=r(2, 1, 64),
        sh=r(2, 12, 64),
        w=r(64),
        w2=r(64),
        cos=r(12, 64, dtype=torch.float32),
        sin=r(12, 64, dtype=torch.float32),
        cos16=r(12, 16),
        sin16=r(12, 16),
    )


# Geometries beyond each kernel's contract inputs (tests/kernels/test_contract.py replays every kernel's): no weight,
# 4-D RoPE, half tables, a broadcast mask.
VARIANTS = {
    "rms_norm diffusers": lambda t: kernels.rms_norm(t["x"], None, 1e-6, numerics="diffusers"),
    "rope_interleaved [B,S,H,D]": lambda t: kernels.rope_interleaved(
        t["x"].view(2, 12, 4, 16), t["cos"][:, :16], t["sin"][:, :16]
    ),
    "rope_rotate_half bf16 tables": lambda t: kernels.rope_rotate_half(
        t["x"].view(2, 12, 4, 16), t["cos16"], t["sin16"]
    ),
    "cross_attention, mask broadcast": lambda t: kernels.cross_attention(
        t["x"].view(2, 12, 4, 16), t["res"].view(2, 12, 4, 16), t["sh"].view(2, 12, 4, 16), t["cos16"][:, :12]
    ),
}


def _roles(entry, tensors: dict):
    """A logged launch with every device address replaced by the name of the tensor at that address (the kernel's
    arguments flattened where the launch takes them as one sequence, as Triton 3.7's does)."""
    at = {t.data_ptr(): name for name, t in tensors.items()}
    flat = entry[:-1] + entry[-1] if isinstance(entry[-1], tuple) else entry
    return tuple(at.get(a, a) if isinstance(a, int) and not isinstance(a, bool) else a for a in flat)


def _outs(out):
    out = out if isinstance(out, tuple) else (out,)
    return {f"out{i}": t for i, t in enumerate(out)}


@pytest.fixture(params=["triton 3.6 launcher", "triton 3.7 launcher"])
def log(monkeypatch, request):
    for plans in launch_plans.PLANS.values():  # every test starts with no plans, and leaves none behind
        monkeypatch.setattr(plans, "plans", {})
    return fake_launch.install(monkeypatch.setattr, packed="3.7" in request.param)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_replay_launches_what_the_full_path_launches(log, monkeypatch, name):
    a, b = _inputs(0), _inputs(1)
    call = VARIANTS[name]
    call(a)  # first call of this geometry: checks, compile (faked), plan recorded
    assert any(plan for plans in launch_plans.PLANS.values() for plan in plans.plans.values())
    log.clear()
    out = call(b)  # other tensors, same geometry: the plan's replay
    assert len(log) == 1
    replayed = _roles(log[0], {**b, **_outs(out)})

    log.clear()
    monkeypatch.setattr(
        launch_plans.LaunchPlans, "find", lambda self, *items: (None, None)
    )  # the full path, every time
    out = call(b)
    assert len(log) == 1
    assert replayed == _roles(log[0], {**b, **_outs(out)})
    assert all(isinstance(v, str) or not isinstance(v, int) or v < 1 << 32 for v in replayed), (
        "every address in the launch is one of the call's tensors"
    )


def test_bad_input_raises_after_a_plan_exists(log):
    t = _inputs(0)
    kernels.adaln_rms(t["x"], t["sc"], t["sh"])
    kernels.adaln_rms(t["x"], t["sc"], t["sh"])
    with pytest.raises(TypeError, match="scale has dtype torch.float32"):
        kernels.adaln_rms(t["x"], t["sc"].float(), t["sh"])
    with pytest.raises(ValueError, match="shift has shape"):
        kernels.adaln_rms(t["x"], t["sc"], t["sh"][:, :5])
    with pytest.raises(ValueError, match="eps must be a finite float"):
        kernels.adaln_rms(t["x"], t["sc"], t["sh"], None, -1.0)
    with pytest.raises(TypeError, match="eps must be a float"):
        kernels.adaln_rms(t["x"], t["sc"], t["sh"], None, [1e-6])  # unhashable: no plan lookup, the check says why
    with pytest.raises(TypeError, match="eps must be a float"):
        kernels.rms_norm(t["x"], None, True)


def test_the_key_holds_the_geometry_and_the_alignment(log, device):
    t = _inputs(0)
    flat = torch.randn(2 * 12 * 64 + 1).to(BF).to(device)
    kernels.rms_norm(t["x"], t["w"])
    kernels.rms_norm(t["x"][:, :6], t["w"])  # other shape and strides
    kernels.rms_norm(t["x"].float(), t["w"].float())  # other dtype
    kernels.rms_norm(flat[1:].view(2, 12, 64), t["w"])  # 2-byte offset: not 16-byte aligned
    kernels.rms_norm(t["x"], t["w"], 1e-5)  # other eps
    assert len(launch_plans.PLANS["rms_norm"].plans) == 5


def test_calls_a_plan_cannot_repeat_take_the_full_path(log):
    """q's and k's weights at one address: the recorded launch cannot tell them apart, so nothing is kept for that
    key and every such call takes the full path (and launches with the right addresses)."""
    t = _inputs(0)
    for _ in range(3):
        log.clear()
        q_out, k_out = kernels.qk_norm_rope(t["x"], t["res"], t["w"], t["w"], t["cos"], t["sin"])
        names = _roles(log[0], {**t, "q_out": q_out, "k_out": k_out}) if log else ()
    assert list(launch_plans.PLANS["qk_norm_rope"].plans.values()) == [launch_plans._UNPLANNABLE]
    want = ("x", "res", "w", "w", "cos", "sin", "q_out", "k_out")  # the kernel's tensor arguments, in order
    assert any(names[i : i + len(want)] == want for i in range(len(names))), names  # the full path launched


def test_plans_are_bounded(log, monkeypatch, device):
    monkeypatch.setattr(launch_plans, "MAX_PLANS", 4)
    x = torch.randn(64, 32).to(BF).to(device)
    for rows in range(1, 11):
        kernels.rms_norm(x[:rows])
    assert 1 <= len(launch_plans.PLANS["rms_norm"].plans) <= 4


def test_plans_only_with_the_fast_launch():
    """Every kernel called twice with the real launch path: without the fast launch (the interpreter, as in CI; an
    unchecked Triton build; KERNELFLEET_FAST_LAUNCH=0) every call takes Triton's path and nothing is recorded; with
    it (compiled Triton on a build it was checked on: the GPU) the first calls keep their compiled kernels and
    record plans that the second calls replay."""
    launch_plans.forget_launches()  # what earlier tests of this process recorded with a faked fast path
    entries = registry.builtin().values()
    with torch.no_grad():
        for entry in entries:
            call = entry.impls["triton"].make()
            inputs = contract.inputs_of(entry)
            call(**inputs)
            call(**inputs)
    path = fast_launch.launch_path()
    kept = [launcher for launcher in fast_launch.direct_launchers() if launcher.cache]
    if path.fast:
        unplanned = [
            entry.name
            for entry in entries
            if not any(
                isinstance(p, launch_plans._Plan) for p in launch_plans.PLANS[entry.function.__name__].plans.values()
            )
        ]
        assert not unplanned, f"no plan recorded ({path.reason})"
        assert kept
    else:
        assert not any(plans.plans for plans in launch_plans.PLANS.values()), path.reason
        assert not kept


def test_forget_launches_drops_kept_kernels_and_plans(log):
    t = _inputs(0)
    kernels.rms_norm(t["x"], t["w"])
    assert launch_plans.PLANS["rms_norm"].plans and any(d.cache for d in fast_launch.direct_launchers())
    launch_plans.forget_launches()
    assert not any(plans.plans for plans in launch_plans.PLANS.values())
    assert not any(d.cache for d in fast_launch.direct_launchers())
    log.clear()
    kernels.rms_norm(t["x"], t["w"])  # the full path again: Triton's first launch (not in the fake's log), recorded
    assert not log and launch_plans.PLANS["rms_norm"].plans
