"""The sandbox keeps going through crashing, exiting and hanging jobs, and records each as what it was."""
from __future__ import annotations

import time

from workers import runner
from workers.spec import JobSpec


def _spec(kernel: str, key: str, timeout_s: float = 120.0) -> JobSpec:
    return JobSpec(kind="correctness", kernel=kernel, shape=[16], dtype="fp32", impls=["boom"], key=key,
                   params={"timeout_s": timeout_s, "seed": 1})


def test_faults_are_recorded_and_the_rest_completes():
    specs = [_spec("noop", "a"), _spec("fault_segv", "b"), _spec("noop", "c"), _spec("fault_hang", "d", 4.0),
             _spec("fault_exit", "e"), _spec("fault_raise", "f"), _spec("noop", "g")]
    t0 = time.monotonic()
    results = list(runner.run(specs, node_id="test"))
    elapsed = time.monotonic() - t0
    got = {r.key: r for r in results}
    assert [r.key for r in results] == [s.key for s in specs]
    assert got["a"].status == "ok" and got["c"].status == "ok" and got["g"].status == "ok"
    assert got["b"].status == "crashed" and "SIGSEGV" in got["b"].error
    assert got["d"].status == "timed_out" and "4 s" in got["d"].error
    assert got["e"].status == "crashed" and "exit code 3" in got["e"].error
    # An implementation that raises is data about that implementation, not a dead sandbox.
    assert got["f"].status == "incorrect" and "planted failure" in got["f"].error
    assert all(r.node_id == "test" and r.device is not None for r in results)
    assert got["a"].device.vendor == "cpu"
    assert elapsed < 100


def test_unknown_kernel_is_an_error_result_not_a_crash():
    spec = JobSpec(kind="micro", kernel="no_such_kernel", shape=[4], dtype="fp32", impls=["eager"], key="k",
                   params={"timeout_s": 60})
    (res,) = list(runner.run([spec]))
    assert res.status == "error"
    assert "unknown kernel 'no_such_kernel'" in res.error
