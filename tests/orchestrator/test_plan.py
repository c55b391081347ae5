"""Planning is pure and deterministic: same config and code -> same keys; any change -> different keys."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from orchestrator.config import compose as config
from orchestrator.config.validate import validate
from orchestrator.plan import jobs as plan
from workers.runtime import keys
from workers.spec import JobSpec

ROOT = Path(__file__).resolve().parents[2]


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
    other_commit = [s.key for s in plan.plan(_cfg(), plan.CodeVersion("abc124", "k0"))]
    other_code = [s.key for s in plan.plan(_cfg(), plan.CodeVersion("abc123", "k1"))]
    other_torch = [s.key for s in plan.plan(_cfg(), plan.CodeVersion("abc123", "k0", {"torch": "2.9.0"}))]
    other_params = [s.key for s in plan.plan(_cfg("sweep.rep_ms=50"), CODE)]
    other_flush = plan.plan(_cfg("sweep.flush=write"), CODE)
    assert a == other_commit  # the commit is provenance: a docs-only commit re-keys nothing
    assert not set(a) & set(other_code)
    assert not set(a) & set(other_torch)
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
    assert len(v.code_hash) == 16 and v.code_hash == keys.code_hash(ROOT)
    assert v.commit
    assert set(v.software) == {"python", "torch", "triton"}
    specs = plan.plan(_cfg("sweep.shapes=[[1,8,64]]"))
    again = plan.CodeVersion.from_dict(v.to_dict(specs))
    assert [plan.job_key(s, again) for s in specs] == [s.key for s in specs]


@pytest.fixture
def checkout(tmp_path):
    """A copy of the sources the key covers, and of some that it does not."""
    for folder in ("kernels", "workers", "docs", "orchestrator"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "perf"))
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    return tmp_path


def test_a_key_follows_the_code_its_job_can_run(checkout):
    """Docs, the orchestrator and code no job of the plan imports leave its keys; a change to the kernel's module, or
    to a module its job kind runs, re-keys exactly the jobs that run it."""

    def keys_of(root, *overrides):
        code = keys.checkout_version(root)
        return {(s.kind, s.kernel, tuple(s.shape)): s.key for s in plan.plan(_cfg(*overrides), code)}

    def append(path, line):
        with open(checkout / path, "a") as f:
            f.write(f"\n# {line}\n")

    rope = ("+kernel@kernels.rope=rope",)
    before, before_rope = keys_of(checkout), keys_of(checkout, *rope)
    (checkout / "README.md").write_text("# another README\n")
    (checkout / "docs" / "new-page.md").write_text("a new page\n")
    append("orchestrator/reports/summary.py", "the orchestrator does not run jobs")
    append("kernels/rope.py", "another kernel's module")
    append("workers/jobs/profile.py", "another job kind's module")
    assert keys_of(checkout) == before
    assert keys_of(checkout, *rope) != before_rope  # ... which re-keys that kernel's jobs
    append("kernels/rmsnorm.py", "a kernel source changed")
    after_kernel = keys_of(checkout)
    assert not set(after_kernel.values()) & set(before.values())
    append("workers/jobs/micro.py", "the micro job changed")
    after_micro = keys_of(checkout)
    changed = {k for k in after_micro if after_micro[k] != after_kernel[k]}
    assert changed == {
        k for k in after_micro if k[0] == "micro"
    }  # the correctness jobs do not run workers/jobs/micro.py
    append(
        "workers/runtime/timing.py", "the timing changed"
    )  # the sandbox measures the copy ceiling with it for every job
    assert not set(keys_of(checkout).values()) & set(after_micro.values())


def test_old_keys_are_recomputed_from_their_plans_header():
    """A scheme-2 header (every job keyed by the hash of all of kernels/ and workers/) still verifies its keys."""
    spec = JobSpec(kind="micro", kernel="rmsnorm", shape=[2, 8, 64], dtype="bf16", impls=["triton"], params={})
    old = {"commit": "c0", "code_hash": "0123456789abcdef", "software": {"torch": "2.9"}, "key_scheme": 2}
    payload = {"job": spec.content(), "code": {"code_hash": "0123456789abcdef", "software": {"torch": "2.9"}}}
    want = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]
    assert plan.job_key(spec, plan.CodeVersion.from_dict(old)) == want
    new = plan.CodeVersion.from_dict({**old, "key_scheme": 3, "job_code": {"micro:rmsnorm": "fedcba9876543210"}})
    assert plan.job_key(spec, new) != want
    with pytest.raises(ValueError, match="no code hash for 'correctness:rmsnorm' jobs"):
        plan.job_key(JobSpec(**{**spec.to_dict(), "kind": "correctness"}), new)


def test_a_plan_is_checked_against_its_keys_and_this_checkout():
    specs = plan.plan(_cfg("sweep.shapes=[[1,8,64]]", "sweep.dtypes=[bf16]"))
    header = plan.code_version().to_dict(specs)
    assert set(header["job_code"]) == {"correctness:rmsnorm", "micro:rmsnorm"}
    assert keys.check_plan(header, specs) == []
    older = {**header, "software": {**header["software"], "torch": "0.1"}}
    older_specs = plan.plan(_cfg("sweep.shapes=[[1,8,64]]", "sweep.dtypes=[bf16]"), plan.CodeVersion.from_dict(older))
    assert not {s.key for s in older_specs} & {s.key for s in specs}
    assert keys.check_plan(older, older_specs) == [f"torch {header['software']['torch']} here, 0.1 in the plan"]
    with pytest.raises(ValueError, match="is not the hash of its content"):
        keys.check_plan(header, [specs[0], JobSpec(**{**specs[1].to_dict(), "dtype": "fp16"})])
    other = plan.plan(_cfg("sweep.shapes=[[1,8,64]]"), plan.CodeVersion("c", "0123456789abcdef"))
    with pytest.raises(ValueError, match="other kernels/ or workers/ sources of the code it runs"):
        keys.check_plan(plan.CodeVersion("c", "0123456789abcdef").to_dict(), other)
    with pytest.raises(ValueError, match="key scheme 1"):
        keys.check_plan({"commit": "c", "kernels_hash": "k0"}, specs)
    with pytest.raises(ValueError, match="key scheme 2"):
        keys.check_plan({**header, "key_scheme": 2}, specs)


def test_keys_of_older_plans_are_recomputed_as_they_were_made():
    # a job key of a plan header {"commit": ..., "kernels_hash": ...} made before the key followed the sources
    spec = JobSpec(
        kind="micro",
        kernel="rmsnorm",
        shape=[2, 1320, 2048],
        dtype="bf16",
        impls=["triton", "eager"],
        target="h200",
        params={"rounds": 5},
        key="",
    )
    code = plan.CodeVersion.from_dict({"commit": "73262fc0", "kernels_hash": "6d832a2de5737598"})
    assert code.scheme == 1
    payload = {"job": spec.content(), "code": {"commit": "73262fc0", "kernels_hash": "6d832a2de5737598"}}
    assert plan.job_key(spec, code) == hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]
    assert plan.job_key(spec, plan.CodeVersion("other", "6d832a2de5737598", scheme=1)) != plan.job_key(spec, code)
