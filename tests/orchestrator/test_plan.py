"""Planning is pure and deterministic: same config and code -> same keys; any change -> different keys."""
from __future__ import annotations

import json

from orchestrator import config, plan
from orchestrator.validate import validate


def _cfg(*overrides):
    c = config.to_plain(config.compose(["+sweep=rmsnorm", *overrides]))
    validate(c)
    return c


CODE = plan.CodeVersion("abc123", "k0")


def test_grid_expands_kernel_x_shape_x_dtype_x_kind():
    c = _cfg("sweep.dtypes=[bf16,fp16]", "sweep.shapes=[[1,8,64],[2,3,100]]")
    specs = plan.plan(c, CODE)
    assert len(specs) == 2 * 2 * 2  # kinds x shapes x dtypes
    assert {s.kind for s in specs} == {"correctness", "micro"}
    assert all(s.kernel == "rmsnorm" and s.target == "any" for s in specs)
    assert len({s.key for s in specs}) == len(specs)
    for s in specs:  # plain JSON data
        assert json.loads(s.to_json()) == s.to_dict()


def test_keys_are_stable_and_depend_on_config_and_code():
    a = [s.key for s in plan.plan(_cfg(), CODE)]
    b = [s.key for s in plan.plan(_cfg(), CODE)]
    assert a == b
    assert plan.plan_key(plan.plan(_cfg(), CODE)) == plan.plan_key(plan.plan(_cfg(), CODE))
    other_code = [s.key for s in plan.plan(_cfg(), plan.CodeVersion("abc124", "k0"))]
    other_kernels = [s.key for s in plan.plan(_cfg(), plan.CodeVersion("abc123", "k1"))]
    other_params = [s.key for s in plan.plan(_cfg("sweep.rep_ms=50"), CODE)]
    other_flush = plan.plan(_cfg("sweep.flush=write"), CODE)
    assert not set(a) & set(other_code)
    assert not set(a) & set(other_kernels)
    assert not set(a) & set(other_params)
    assert not set(a) & {s.key for s in other_flush}
    assert {s.params["flush"] for s in other_flush} == {"write"}
    assert {s.params["flush"] for s in plan.plan(_cfg(), CODE)} == {"read"}  # the default (clean lines)


def test_sweep_name_does_not_change_a_job_key():
    # The same job planned by two sweeps is the same work: its result is reused.
    c1 = _cfg("sweep.shapes=[[1,8,64]]", "sweep.dtypes=[bf16]")
    c2 = _cfg("sweep.shapes=[[1,8,64]]", "sweep.dtypes=[bf16]", "sweep.name=other")
    assert [s.key for s in plan.plan(c1, CODE)] == [s.key for s in plan.plan(c2, CODE)]


def test_code_version_reads_this_checkout():
    v = plan.code_version()
    assert len(v.kernels_hash) == 16
    assert v.commit
