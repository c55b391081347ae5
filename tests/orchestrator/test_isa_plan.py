"""Planning and scheduling of compile-only isa jobs: one job per kernel x shape x dtype x compile target, planned once
whatever the target, with no timing parameters in their keys, and scheduled on a CPU slot (no GPU)."""

from __future__ import annotations

import pytest

from orchestrator.config import compose as config
from orchestrator.config.compose import ConfigError
from orchestrator.config.validate import validate
from orchestrator.plan import jobs as plan
from orchestrator.run import schedule
from workers.spec import JobSpec

CODE = plan.CodeVersion("abc123", "k0")


def _cfg(*overrides):
    c = config.to_plain(config.compose(list(overrides)))
    validate(c)
    return c


def test_the_isa_sweep_plans_every_kernel_on_its_grid_for_each_target():
    c = _cfg("+sweep=isa")
    specs = plan.plan(c, CODE)
    grid = sum(len(c["kernels"][k]["shapes"]) * len(c["kernels"][k]["dtypes"]) for k in c["kernels"])
    assert len(c["kernels"]) == 11 and len(specs) == grid * 3
    assert {s.kind for s in specs} == {"isa"}
    assert {s.params["arch"] for s in specs} == {"gfx950", "gfx1201", "gfx942"}
    assert all(s.impls == ["triton"] and s.target == "any" and s.sweep == "isa" for s in specs)
    assert len({s.key for s in specs}) == len(specs)


def test_kinds_isa_on_the_kernels_sweep_with_archs():
    c = _cfg("+sweep=kernels", "sweep.kinds=[isa]", "sweep.archs=[gfx950,gfx1201]", "sweep.kernels=[rmsnorm]")
    specs = plan.plan(c, CODE)
    assert len(specs) == len(c["kernels"]["rmsnorm"]["shapes"]) * 2
    assert {s.params["arch"] for s in specs} == {"gfx950", "gfx1201"}


def test_isa_keys_ignore_timing_parameters_but_not_the_target_arch():
    a = {s.key for s in plan.plan(_cfg("+sweep=isa", "sweep.kernels=[rmsnorm]"), CODE)}
    timing = {
        s.key
        for s in plan.plan(_cfg("+sweep=isa", "sweep.kernels=[rmsnorm]", "sweep.rep_ms=5", "sweep.flush=write"), CODE)
    }
    assert a == timing
    other = {s.key for s in plan.plan(_cfg("+sweep=isa", "sweep.kernels=[rmsnorm]", "sweep.archs=[sm_90]"), CODE)}
    assert not a & other


def test_isa_jobs_are_planned_once_for_a_per_gpu_type_target():
    c = _cfg("+sweep=isa", "sweep.kernels=[rmsnorm]", "target=all")
    specs = plan.plan(c, CODE, gpu_types=["h200", "mi355x"])
    assert len(specs) == len(c["kernels"]["rmsnorm"]["shapes"]) * 3
    assert {s.target for s in specs} == {"h200"}


def test_an_unknown_compile_target_is_a_config_error():
    with pytest.raises(ConfigError, match=r"sweep.archs: unknown compile target 'gfx90x'; allowed: gfx950"):
        _cfg("+sweep=isa", "sweep.archs=[gfx90x]")


def test_isa_jobs_take_a_cpu_slot_even_on_a_gpu_cluster():
    isa = JobSpec(kind="isa", kernel="rmsnorm", shape=[1, 8, 64], params={"arch": "gfx950"})
    micro = JobSpec(kind="micro", kernel="rmsnorm", shape=[1, 8, 64])
    assert not schedule.needs_gpu(isa) and schedule.needs_gpu(micro)
    opts = schedule.task_options({}, False, schedule.needs_gpu(isa), True, 3)
    assert opts["num_cpus"] == 1 and "num_gpus" not in opts
    gpu_node = schedule.NodeView("n1", True, {}, {"GPU": 1, "CPU": 8})
    cpu_node = schedule.NodeView("n2", True, {}, {"CPU": 4})
    assert schedule.can_run(cpu_node, {}, False, gpu=False) and not schedule.can_run(cpu_node, {}, False, gpu=True)
    assert schedule.can_run(gpu_node, {}, False, gpu=False)
