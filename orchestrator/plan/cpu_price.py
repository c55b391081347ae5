"""What a sweep would cost on a CPU, priced before it starts, so a GPU-sized grid is not left grinding for hours.

Without a GPU, Triton kernels run through Triton's interpreter, thousands of times slower than on a GPU.  The
price is an estimate from a calibration: a child process times one interpreted Triton RMSNorm call at two small
sizes (``python -m orchestrator.plan.cpu_price``), fits seconds = a + b × elements, and scales that to every Triton
call the planned jobs would make (the first call, one check per correctness input case, and per timing round an
estimate call and the minimum repeats, see workers.runtime.timing.bench); every other implementation at the speed of an
eager PyTorch RMSNorm timed in the same child, each at least its timing budget (warm-up and repeat milliseconds).  An
end-to-end job is priced by its model's work (workers.jobs.e2e.size: about 2 x parameters x tokens FLOPs a step, every
call of every mode a CPU runs) at the speed of a bf16 matrix product timed in the same child.  torch.compile's compile
time is not included, so the estimate is low rather than high.

A calibration is kept for a day per machine and software stack (:func:`kept_fit`, a JSON file under
``$XDG_CACHE_HOME/kernelfleet``, else ``~/.cache/kernelfleet``), so that the sweeps run one after another on a laptop
or a CI machine pay its seconds once; ``KERNELFLEET_CPU_CALIBRATION=fresh`` calibrates every time.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.plan import user_cache
from workers import kinds
from workers.spec import JobSpec

# A grid whose estimate is below this runs on a CPU without allow_cpu=true (the smoke sweep takes a few seconds)
SMALL_S = 120.0
TRITON_IMPLS = ("triton",)
CALIBRATION_SHAPES = ((1, 4, 2048), (1, 32, 2048))
EAGER_SHAPE = (1, 1024, 2048)  # large enough that an eager call's fixed cost is small beside its elements
MATMUL_SHAPE = (256, 1024, 1024)  # m, k, n of the bf16 product that prices an e2e job's FLOPs
FIT_KEYS = ("per_call_s", "per_element_s", "eager_per_element_s", "matmul_flops_per_s")
CALIBRATION_TIMEOUT_S = 60.0
KEEP_S = 24 * 3600.0  # how long a kept calibration stands for its machine and stack
# workers.runtime.timing.bench on a CPU: at least 3 repeats per round, after a first call and a one-call estimate
MIN_REPS_CPU = 3


@dataclass
class Price:
    jobs: int
    triton_calls: int
    estimate_s: float
    largest: str  # the largest job's kernel, shape and dtype
    largest_bytes: int  # what its tensors hold (inputs and outputs)
    per_element_s: float  # of an interpreted Triton call
    eager_per_element_s: float
    e2e_jobs: int = 0

    @property
    def small(self) -> bool:
        return self.estimate_s < SMALL_S


def _calls_per_impl(spec: JobSpec) -> int:
    if not kinds.kind_of(spec.kind).timed:
        from workers.jobs.input_cases import CASES

        return 1 + len(CASES)  # a check (correctness): make + first call, then one checked call per input case
    rounds = max(int(spec.params.get("rounds", 5)), 1)
    return 2 + rounds * (2 + MIN_REPS_CPU)


def price(specs: list[JobSpec], fit: dict[str, float]) -> Price:
    """The cost of ``specs`` on a CPU, with the calibration ``fit`` (see :func:`calibrate`)."""
    from kernels import registry

    a, b, e = fit["per_call_s"], fit["per_element_s"], fit["eager_per_element_s"]
    total, calls, largest, largest_bytes, e2e_jobs = 0.0, 0, "", -1, 0
    for s in specs:
        kind = kinds.kind_of(s.kind)
        if not kind.cpu_priced:
            continue
        if not kind.per_kernel:
            seconds, what, nbytes = _e2e_price(s, fit["matmul_flops_per_s"])
            total += seconds
            e2e_jobs += 1
            if nbytes > largest_bytes:
                largest, largest_bytes = what, nbytes
            continue
        if not s.kernel:
            continue
        entry = registry.get(s.kernel)
        nbytes = entry.bytes_moved(tuple(s.shape), registry.dtype_of(s.dtype))
        if nbytes > largest_bytes:
            largest, largest_bytes = f"{s.kernel} {'x'.join(map(str, s.shape))} {s.dtype}", nbytes
        elements = math.prod(s.shape)
        n = _calls_per_impl(s)
        budget_s = (float(s.params.get("warmup_ms", 25.0)) + float(s.params.get("rep_ms", 200.0))) / 1e3
        for impl in s.impls:
            # on a CPU the sandbox always runs Triton in the interpreter (workers.runtime.child); a tune job's
            # candidates are Triton launches too (triton[knob=value,...])
            if impl in TRITON_IMPLS or impl.startswith("triton["):
                calls += n
                total += max(n * (a + b * elements), budget_s)
            else:  # PyTorch on the CPU (eager, F.*, compiled code): priced at eager's speed
                total += max(n * e * elements, budget_s if kind.timed else 0.0)
    return Price(len(specs), calls, total, largest, max(largest_bytes, 0), b, e, e2e_jobs)


def _e2e_price(spec: JobSpec, flops_per_s: float) -> tuple[float, str, int]:
    """Seconds of one e2e job on a CPU, what it is, and the bytes of its weights."""
    from workers.jobs.e2e.size import CPU_MODES, work

    w = work(spec)
    # the modes a CPU runs (workers.jobs.e2e.job.skip_reason): eager, triton, and the stock plain compile modes when
    # asked
    cpu_modes = CPU_MODES + (("compile", "compile-max") if spec.params.get("cpu_compile") else ())
    modes = [m for m in spec.impls if m in cpu_modes]
    size = 4 if spec.dtype == "fp32" else 2
    what = f"{spec.model} {'x'.join(map(str, spec.shape))} {spec.dtype} ({w.parameters / 1e9:.2f} B parameters)"
    return w.flops_per_mode * len(modes) / flops_per_s, what, w.parameters * size


def start_calibration() -> subprocess.Popen:
    """Start the calibration child (it imports torch and Triton for seconds: start it early, collect it later)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator.plan.cpu_price"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def calibrate(proc: subprocess.Popen | None = None, timeout_s: float = CALIBRATION_TIMEOUT_S) -> dict[str, float]:
    """Seconds per interpreted Triton call (``per_call_s``) and per element (``per_element_s``), and per element of
    an eager PyTorch call (``eager_per_element_s``), measured in a child process with TRITON_INTERPRET=1."""
    proc = proc or start_calibration()
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"the calibration took over {timeout_s:g} s") from None
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the calibration failed: {(err or out).strip()[-500:]}")
    return {k: float(v) for k, v in json.loads(lines[-1]).items() if k != "points"}


def calibration_path() -> Path:
    """Where this machine's calibration is kept."""
    return user_cache.path("cpu-calibration.json")


def _stack() -> dict[str, object]:
    """What a calibration's speeds depend on: the machine (its name, CPU model and count) and the Python, torch and
    Triton that run the interpreter."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    versions = {}
    for dist in ("torch", "triton"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    machine = {"host": platform.node(), "cpu": cpu, "cpus": os.cpu_count()}
    return {**machine, "python": platform.python_version(), **versions}


def kept_fit(now: float | None = None) -> tuple[dict[str, float], str] | None:
    """This machine's kept calibration and when it was measured (UTC, to the minute), or None: none kept, kept for
    another machine or stack, older than :data:`KEEP_S`, unreadable, or ``KERNELFLEET_CPU_CALIBRATION=fresh``."""
    if os.environ.get("KERNELFLEET_CPU_CALIBRATION", "") == "fresh":
        return None
    kept = user_cache.read(calibration_path())
    try:
        age = (now if now is not None else time.time()) - float(kept["measured_at"])
        if kept.get("stack") != _stack() or not 0 <= age < KEEP_S:
            return None
        fit = {k: float(kept["fit"][k]) for k in FIT_KEYS}
    except (ValueError, KeyError, TypeError):  # none kept (None), or not a calibration
        return None
    when = dt.datetime.fromtimestamp(float(kept["measured_at"]), dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return fit, when


def keep_fit(fit: dict[str, float]) -> None:
    """Keep ``fit`` for this machine and stack (written whole, then renamed: a reader never sees half a file); a
    machine where it cannot be written calibrates again next time."""
    user_cache.write(calibration_path(), {"measured_at": time.time(), "stack": _stack(), "fit": fit})


def gb(nbytes: int) -> str:
    return f"{nbytes / 1e9:.2f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:.1f} MB"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _measure() -> dict:
    """In the child: time one interpreted RMSNorm call at each calibration size and fit a + b × elements."""
    import torch

    from kernels import registry

    entry = registry.get("rmsnorm")
    fn = entry.impls["triton"].make()
    gen = torch.Generator().manual_seed(0)
    points = []
    for shape in CALIBRATION_SHAPES:
        inputs = entry.make_inputs(shape, torch.float32, torch.device("cpu"), gen)
        fn(**inputs)  # first call: the interpreter's own set-up stays out
        t0 = time.perf_counter()
        fn(**inputs)
        points.append((math.prod(shape), time.perf_counter() - t0))
    (n0, t0_), (n1, t1) = points
    b = max((t1 - t0_) / (n1 - n0), 0.0)
    eager = entry.impls["eager"].make()
    inputs = entry.make_inputs(EAGER_SHAPE, torch.bfloat16, torch.device("cpu"), gen)
    eager(**inputs)
    t0 = time.perf_counter()
    for _ in range(3):
        eager(**inputs)
    e = (time.perf_counter() - t0) / 3 / math.prod(EAGER_SHAPE)
    m, k, n = MATMUL_SHAPE
    x, y = torch.randn(m, k, generator=gen).bfloat16(), torch.randn(k, n, generator=gen).bfloat16()
    x @ y
    t0 = time.perf_counter()
    for _ in range(3):
        x @ y
    flops = 2.0 * m * k * n * 3 / (time.perf_counter() - t0)
    return {
        "per_call_s": max(t0_ - b * n0, 0.0),
        "per_element_s": b,
        "eager_per_element_s": e,
        "matmul_flops_per_s": flops,
        "points": points,
    }


if __name__ == "__main__":
    print(json.dumps(_measure()))
