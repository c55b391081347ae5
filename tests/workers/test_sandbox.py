"""The sandbox keeps going through crashing, exiting and hanging jobs, and records each as what it was."""

from __future__ import annotations

import time

from tests.support.devices import ON_GPU
from workers.runtime import runner
from workers.spec import JobSpec


def _spec(kernel: str, key: str, timeout_s: float = 120.0) -> JobSpec:
    return JobSpec(
        kind="correctness",
        kernel=kernel,
        shape=[16],
        dtype="fp32",
        impls=["boom"],
        key=key,
        params={"timeout_s": timeout_s, "seed": 1},
    )


def test_faults_are_recorded_and_the_rest_completes():
    specs = [
        _spec("noop", "a"),
        _spec("fault_segv", "b"),
        _spec("noop", "c"),
        _spec("fault_hang", "d", 4.0),
        _spec("fault_exit", "e"),
        _spec("fault_raise", "f"),
        _spec("noop", "g"),
    ]
    results = list(runner.run(specs, node_id="test"))
    got = {r.key: r for r in results}
    assert [r.key for r in results] == [s.key for s in specs]
    assert got["a"].status == "ok" and got["c"].status == "ok" and got["g"].status == "ok"
    assert got["b"].status == "crashed" and "SIGSEGV" in got["b"].error
    assert got["d"].status == "timed_out" and "4 s" in got["d"].error
    assert got["e"].status == "crashed" and "exit code 3" in got["e"].error
    # An implementation that raises is data about that implementation, not a dead sandbox.
    assert got["f"].status == "incorrect" and "planted failure" in got["f"].error
    assert all(r.node_id == "test" and r.device is not None for r in results)
    # the sandbox reports the device it ran on: the GPU's vendor on a GPU host
    assert got["a"].device.vendor in (("nvidia", "amd") if ON_GPU else ("cpu",))


def test_unknown_kernel_is_an_error_result_not_a_crash():
    spec = JobSpec(
        kind="micro",
        kernel="no_such_kernel",
        shape=[4],
        dtype="fp32",
        impls=["eager"],
        key="k",
        params={"timeout_s": 60},
    )
    (res,) = list(runner.run([spec]))
    assert res.status == "error"
    assert "unknown kernel 'no_such_kernel'" in res.error


def test_the_sandbox_dies_with_the_process_that_started_it(tmp_path):
    """A cancelled Ray task or a killed driver must not leave a sandbox running a hung job on a GPU."""
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "parent.py"
    script.write_text(
        "import sys\n"
        "from workers.runtime import runner\n"
        "from workers.spec import JobSpec\n"
        "spec = JobSpec(kind='correctness', kernel='fault_hang', shape=[16], dtype='fp32', impls=['boom'], key='h',"
        " params={'timeout_s': 600})\n"
        "for r in runner.run([spec]):\n"
        "    pass\n"
    )
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": repo, "KERNELFLEET_MEASURE_CEILING": "0"},
    )
    child_pid = None
    deadline = time.monotonic() + 120
    while child_pid is None and time.monotonic() < deadline:
        time.sleep(0.5)
        out = subprocess.run(
            ["pgrep", "-P", str(parent.pid), "-f", "workers.runtime.child"], capture_output=True, text=True
        )
        child_pid = int(out.stdout.split()[0]) if out.stdout.split() else None
    assert child_pid, "the sandbox never started"
    time.sleep(3)  # let it get into the hanging job
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(child_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    os.kill(child_pid, signal.SIGKILL)
    raise AssertionError("the sandbox outlived its parent")


def test_a_child_that_profiled_runs_device_timed_jobs_and_is_retired_before_a_host_timed_one():
    """torch.profiler leaves later launches in its process slower: jobs whose figures hold no host time (correctness,
    micro) go on in that child; a job that times host work (e2e, profile) gets a fresh one."""
    from workers.runtime import sandbox

    prof = JobSpec(
        kind="profile",
        kernel="rmsnorm",
        shape=[4, 64],
        dtype="fp32",
        impls=["eager"],
        key="p",
        params={"iters": 2, "warmup": 1, "timeout_s": 120},
    )
    e2e = JobSpec(
        kind="e2e",
        model="no-such-model",
        shape=[9, 64, 64],
        dtype="bf16",
        impls=["eager"],
        key="e",
        params={"timeout_s": 120},
    )
    micro = JobSpec(
        kind="micro",
        kernel="noop",
        shape=[16],
        dtype="fp32",
        impls=["eager"],
        key="m",
        params={"warmup_ms": 1, "rep_ms": 2, "rounds": 1, "timeout_s": 120},
    )
    specs = [_spec("noop", "a"), prof, _spec("noop", "b"), micro, e2e, _spec("noop", "c")]
    info = sandbox.ChildInfo()
    pids = []
    results = list(sandbox.run_jobs(specs, info=info, on_ready=lambda i: pids.append(i.pid)))
    assert [r.key for r in results] == ["a", "p", "b", "m", "e", "c"]
    assert [r.status for r in results] == ["ok"] * 4 + ["error", "ok"], [r.error for r in results]
    assert "unknown model 'no-such-model'" in results[4].error
    # "a", the profile job, "b" and the micro job in the first child; the e2e job and "c" in a fresh one
    assert info.starts == 2 and len(set(pids)) == 2
    assert sandbox.runs_in_profiled_child(micro) and not sandbox.runs_in_profiled_child(e2e)
    assert not sandbox.runs_in_profiled_child(prof)


def test_a_job_over_the_memory_limit_is_recorded_as_crashed_and_the_rest_completes(monkeypatch):
    from benchmarks.fault_kernels import HOG_BYTES
    from workers.runtime import sandbox

    monkeypatch.setenv(sandbox.MEM_BYTES_ENV, str(HOG_BYTES // 2))
    results = {r.key: r for r in runner.run([_spec("fault_hog", "h"), _spec("noop", "n")], node_id="test")}
    assert results["h"].status == "crashed" and "memory limit" in results["h"].error
    assert "over the sandbox's limit of 1.00 GiB" in results["h"].error
    assert results["n"].status == "ok"


def test_the_memory_limit_is_a_share_of_the_node_ram_by_default():
    from workers.runtime import sandbox

    total = sandbox._meminfo_total_bytes()
    assert sandbox.memory_limit_bytes({}) == int(total * sandbox.DEFAULT_MEM_FRACTION)
    assert sandbox.memory_limit_bytes({sandbox.MEM_FRACTION_ENV: "0.25"}) == int(total * 0.25)
    assert sandbox.memory_limit_bytes({sandbox.MEM_BYTES_ENV: "1000", sandbox.MEM_FRACTION_ENV: "0.25"}) == 1000
