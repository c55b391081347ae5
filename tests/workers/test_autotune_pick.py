"""workers.jobs.autotune_pick through the micro job: what torch.compile built, what its autotuner picked, and
``fresh_autotune``.  On a CPU Inductor generates C++ and tunes nothing, so the pick is the generated code's hash; the
GPU test checks max-autotune's chosen Triton configs, that a rerun in a new sandbox process picks the same, and that
``fresh_autotune`` compiles without the node's cache."""

from __future__ import annotations

import os

import torch

from tests.support.kernel_tests import gpu_test
from workers.jobs import micro
from workers.runtime.sandbox import run_jobs
from workers.spec import JobSpec

PARAMS = {"warmup_ms": 1, "rep_ms": 5, "rounds": 1, "graph": False, "kernel_time": False}


def _spec(shape, impls, key, **params) -> JobSpec:
    return JobSpec(
        kind="micro",
        kernel="rmsnorm",
        shape=list(shape),
        dtype="fp32",
        impls=list(impls),
        key=key,
        params={**PARAMS, **params},
    )


def test_a_compiled_implementation_records_its_kernels_on_the_cpu():
    result = micro.run(_spec([3, 40], ["eager", "compile"], "cpu-pick"), torch.device("cpu"))
    assert result.status == "ok", result.error
    picks = result.details["autotune"]
    assert set(picks) == {"compile"}, "eager compiles nothing"
    rec = picks["compile"]
    assert rec["kernels"] and all(k.startswith("cpp_fused") for k in rec["kernels"])
    assert rec["configs"] == {} and rec["pick"] == f"code:{rec['code_hash']}" and len(rec["code_hash"]) == 16
    assert rec["fx_cache"] in ("hit", "miss") and rec["fresh"] is False


def test_a_micro_job_after_the_correctness_job_records_what_that_job_compiled():
    """In a sandbox child the correctness job of a kernel and shape runs first and compiles; the micro job then
    reuses that code (nothing new is loaded) and must still say what was picked."""
    from workers.jobs import correctness

    shape = [7, 56]
    check = correctness.run(
        JobSpec(
            kind="correctness",
            kernel="rmsnorm",
            shape=shape,
            dtype="fp32",
            impls=["compile"],
            key="cpu-pick-check",
            params={"seed": 0},
        ),
        torch.device("cpu"),
    )
    assert check.status == "ok", check.error
    result = micro.run(_spec(shape, ["compile"], "cpu-pick-after"), torch.device("cpu"))
    rec = result.details["autotune"]["compile"]
    assert rec["kernels"] and rec["pick"].startswith("code:") and rec["fx_cache"] == "in process", rec


def test_fresh_autotune_compiles_without_the_node_cache():
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    result = micro.run(_spec([5, 24], ["compile"], "cpu-fresh", fresh_autotune=True), torch.device("cpu"))
    rec = result.details["autotune"]["compile"]
    assert rec["fresh"] is True and rec["fx_cache"] == "miss", rec
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == before, "the node's cache setting is restored"


@gpu_test
def test_max_autotune_records_its_pick_and_a_rerun_picks_the_same():
    """Each job in a sandbox process of its own, as on a node: the second loads the first's cache."""
    shape = [1, 4096, 2048]
    specs = [
        JobSpec(
            kind="micro",
            kernel="rmsnorm",
            shape=shape,
            dtype="bf16",
            impls=["eager", "compile_max"],
            key=f"gpu-pick-{i}",
            params={**PARAMS, **extra},
        )
        for i, extra in enumerate([{}, {}, {"fresh_autotune": True}])
    ]
    results = [next(iter(run_jobs([s]))) for s in specs]
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    recs = [r.details["autotune"]["compile_max"] for r in results]
    for rec in recs:
        assert rec["kernels"] and all(k.startswith("triton_") for k in rec["kernels"]), rec
        assert rec["configs"] and not rec["pick"].startswith("code:"), rec
        assert all("|" not in c for c in rec["configs"].values()), "tuned down to one config per kernel"
    assert recs[1]["pick"] == recs[0]["pick"] and recs[1]["fx_cache"] == "hit", recs
    assert recs[2]["fresh"] is True and recs[2]["fx_cache"] == "miss", recs[2]
