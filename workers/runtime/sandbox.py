"""Run jobs in a sandbox child process that survives nothing but is always replaced.

The child (workers.runtime.child) imports torch once and runs the jobs one at a time, streaming a result per job.  If it
dies under a job (segfault, ``os._exit``, a GPU memory fault) that job is recorded as ``crashed`` with the exit
code and the tail of its stderr, and a fresh child continues with the rest.  A job past its timeout has the
child's whole process group killed and is recorded as ``timed_out``.  Nothing here retries a job: kernel
failures are data.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from workers import kinds
from workers.errors import UserError
from workers.spec import STATUS_CRASHED, STATUS_TIMED_OUT, DeviceInfo, JobResult, JobSpec

START_TIMEOUT_S = float(os.environ.get("KERNELFLEET_CHILD_START_TIMEOUT", "600"))
STDERR_TAIL = 4000
# The child's memory limit: a share of the node's RAM (KERNELFLEET_CHILD_MEM_FRACTION, default 0.5) or a size in
# bytes (KERNELFLEET_CHILD_MEM_BYTES wins).  It is a watchdog on the child's resident set, read from /proc every
# MEM_POLL_S, not an rlimit: CUDA and ROCm reserve terabytes of virtual address space (RLIMIT_AS breaks them) and
# map device memory into the process (RLIMIT_DATA can count it), while RSS is host memory only.  A child over the
# limit has its process group killed and its job recorded as crashed, before the kernel's OOM killer picks a
# process of the node at random.
MEM_FRACTION_ENV, MEM_BYTES_ENV = "KERNELFLEET_CHILD_MEM_FRACTION", "KERNELFLEET_CHILD_MEM_BYTES"
DEFAULT_MEM_FRACTION = 0.5
MEM_POLL_S = 0.5


class MemoryLimitExceeded(Exception):
    pass


def _meminfo_total_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def memory_limit_bytes(env: dict[str, str] | None = None) -> int | None:
    """The child's RSS limit in bytes (None: no limit, e.g. no /proc); ValueError for a bad setting."""
    env = os.environ if env is None else env
    try:
        value = int(env.get(MEM_BYTES_ENV) or 0)
        fraction = float(env.get(MEM_FRACTION_ENV) or DEFAULT_MEM_FRACTION)
    except ValueError:
        raise UserError(f"{MEM_BYTES_ENV} must be a number of bytes, {MEM_FRACTION_ENV} a fraction") from None
    if env.get(MEM_BYTES_ENV):
        if value <= 0:
            raise UserError(f"{MEM_BYTES_ENV}={value}: must be > 0")
        return value
    if not 0 < fraction <= 1:
        raise UserError(f"{MEM_FRACTION_ENV}={fraction}: must be in (0, 1]")
    total = _meminfo_total_bytes()
    return int(total * fraction) if total else None


def rss_bytes(pid: int) -> int | None:
    """A process's resident set (VmRSS), None if it is gone or /proc cannot say."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


@dataclass
class ChildInfo:
    device: DeviceInfo | None = None
    copy_gbs: float | None = None
    pid: int | None = None
    starts: int = 0
    extra: dict = field(default_factory=dict)


def _failed(spec: JobSpec, status: str, started: float, error: str, stderr_tail: str) -> JobResult:
    """The result of a job whose child was killed or died under it (the child's last stderr lines kept)."""
    return JobResult(
        spec.key,
        status,
        started_at=started,
        duration_s=time.time() - started,
        error=error,
        details={"stderr_tail": stderr_tail},
    )


def _signal_name(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, be killed when the process that started us dies (a cancelled Ray task,
    a killed driver), so no orphaned sandbox keeps a GPU busy.  Elsewhere stdin EOF ends the child after its job."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Child:
    def __init__(self, env: dict[str, str], mem_limit: int | None = None):
        self.mem_limit = mem_limit
        self.stderr = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workers.runtime.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            start_new_session=True,
            text=True,
            bufsize=1,
            preexec_fn=_die_with_parent,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # EOF: the child is gone

    def next_event(self, deadline: float) -> dict | None:
        """The next event, None at EOF; raises TimeoutError past the deadline, MemoryLimitExceeded when the child's
        resident set is over its limit."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                line = self.lines.get(timeout=min(remaining, MEM_POLL_S) if self.mem_limit else remaining)
            except queue.Empty:
                rss = rss_bytes(self.proc.pid) if self.mem_limit else None
                if rss is not None and rss > self.mem_limit:
                    raise MemoryLimitExceeded(
                        f"{rss / 2**30:.2f} GiB resident, over the sandbox's limit of "
                        f"{self.mem_limit / 2**30:.2f} GiB ({MEM_FRACTION_ENV} / "
                        f"{MEM_BYTES_ENV})"
                    ) from None
                continue
            if line is None:
                return None
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue  # not ours (a library writing to the result pipe before the redirect)

    def send(self, spec: JobSpec) -> bool:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(spec.to_json() + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def stderr_tail(self, since: int = 0) -> str:
        self.stderr.flush()
        self.stderr.seek(max(since, 0))
        data = self.stderr.read()
        self.stderr.seek(0, os.SEEK_END)
        return data[-STDERR_TAIL:].decode(errors="replace")

    def stderr_pos(self) -> int:
        self.stderr.seek(0, os.SEEK_END)
        return self.stderr.tell()

    def kill(self) -> int:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.wait()

    def wait(self) -> int:
        rc = self.proc.wait()
        self.reader.join(timeout=5)
        return rc

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        finally:
            self.stderr.close()


def runs_in_profiled_child(spec: JobSpec) -> bool:
    """Jobs whose figures hold no host time (their kind's ``device_only``, workers/kinds/) may run in a child that
    has run torch.profiler."""
    return kinds.kind_of(spec.kind).device_only


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    # One consistent device mask for the child (Ray sets HIP_VISIBLE_DEVICES on AMD; a stale ROCR mask contradicts it)
    if env.get("HIP_VISIBLE_DEVICES") is not None:
        env.pop("ROCR_VISIBLE_DEVICES", None)
    env.setdefault("OMP_NUM_THREADS", str(max(1, min(8, os.cpu_count() or 1))))
    env["PYTHONUNBUFFERED"] = "1"
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_jobs(
    specs: Iterable[JobSpec],
    env: dict[str, str] | None = None,
    info: ChildInfo | None = None,
    on_ready: Callable[[ChildInfo], None] | None = None,
) -> Iterator[JobResult]:
    """Yield one JobResult per spec, in order, whatever happens to the child processes."""
    env = child_env(env)
    mem_limit = memory_limit_bytes(env)
    info = info or ChildInfo()
    pending = list(specs)
    child: _Child | None = None
    try:
        while pending:
            if child is None:
                child = _Child(env, mem_limit)
                info.starts += 1
                try:
                    ev = child.next_event(time.monotonic() + START_TIMEOUT_S)
                except (TimeoutError, MemoryLimitExceeded):
                    ev = None
                    child.kill()
                if ev is None or ev.get("event") != "ready":
                    rc = child.kill()
                    tail = child.stderr_tail()
                    child.close()
                    child = None
                    # The sandbox cannot start: every remaining job gets the reason, none is silently lost.
                    for spec in pending:
                        yield JobResult(
                            spec.key,
                            STATUS_CRASHED,
                            error=f"sandbox failed to start ({_signal_name(rc)}): {tail[-1500:]}",
                        )
                    return
                info.device = DeviceInfo.from_dict(ev["device"]) if ev.get("device") else None
                info.copy_gbs = ev.get("copy_gbs")
                info.pid = ev.get("pid")
                if on_ready:
                    on_ready(info)
            spec = pending[0]
            pos = child.stderr_pos()
            timeout = float(spec.params.get("timeout_s", 600.0))
            started = time.time()
            result: JobResult | None = None
            if child.send(spec):
                deadline = time.monotonic() + timeout
                try:
                    while True:
                        ev = child.next_event(deadline)
                        if ev is None:
                            break
                        if ev.get("event") == "result":
                            result = JobResult.from_dict(ev["result"])
                            nxt = pending[1] if len(pending) > 1 else None
                            if ev.get("profiled") and nxt is not None and not runs_in_profiled_child(nxt):
                                child.close()  # a job that times host work gets a child the profiler never touched
                                child = None
                            break
                except (TimeoutError, MemoryLimitExceeded) as exc:
                    child.kill()
                    tail = child.stderr_tail(pos)
                    child.close()
                    child = None
                    status, why = (
                        (STATUS_TIMED_OUT, f"timed out after {timeout:g} s")
                        if isinstance(exc, TimeoutError)
                        else (STATUS_CRASHED, f"memory limit: {exc}")
                    )
                    result = _failed(spec, status, started, f"{why}; process group killed", tail)
            if result is None:  # EOF before a result: the child died under this job
                rc = child.kill() if child else -1
                tail = child.stderr_tail(pos) if child else ""
                if child:
                    child.close()
                child = None
                result = _failed(spec, STATUS_CRASHED, started, f"sandbox process died ({_signal_name(rc)})", tail)
            if result.device is None:
                result.device = info.device
            if info.copy_gbs is not None:
                result.details.setdefault("copy_gbs", info.copy_gbs)
            pending.pop(0)
            yield result
    finally:
        if child is not None:
            child.close()
