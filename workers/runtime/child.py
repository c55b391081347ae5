"""The sandbox child: imports torch once, then runs the jobs it is sent, one at a time.

Protocol (JSON lines): the parent writes one JobSpec per line on stdin; the child answers on its result pipe
(the original stdout; anything the jobs print goes to stderr) with ``{"event": "ready", ...}`` once at start,
then for every job ``{"event": "start", "key": ...}`` and ``{"event": "result", "result": {...}, "profiled": bool}``.
A job that raises is a result with status ``error``; a job that kills the process is seen by the parent as a missing
result.  ``profiled``: this process has run torch.profiler, which leaves every later launch in it slower
(``workers.runtime.timing.profiler_used``); the parent starts a fresh child for a next job whose figures include host
time (workers.runtime.sandbox.runs_in_profiled_child).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback


def _emit(stream, obj: dict) -> None:
    stream.write(json.dumps(obj) + "\n")
    stream.flush()


# Set (to "1") by workers.runtime.runner for a sandbox that runs compile-only jobs (workers.kinds: a kind's
# ``compile_only``)
COMPILE_ONLY_ENV = "KERNELFLEET_COMPILE_ONLY"


def _run_one(spec, device):
    from workers import kinds

    return importlib.import_module(kinds.kind_of(spec.kind).module).run(spec, device)


def main() -> int:
    # Results go to the original stdout; everything else (kernel prints, warnings) to stderr.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import torch

    compile_only = os.environ.get(COMPILE_ONLY_ENV) == "1"
    if compile_only:
        # isa jobs compile the kernels for a target architecture and run none: no interpreter, no GPU needed
        os.environ.pop("TRITON_INTERPRET", None)
        device = torch.device("cpu")
    elif not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"  # before any kernel module is imported
        device = torch.device("cpu")
    else:
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)

    # A sweep compiles the same eager chain once per shape in this process: keep dynamo from falling back to eager
    # after its default 8 recompilations.
    import torch._dynamo

    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 1024)

    from workers import kinds
    from workers.device import detect as device_detect
    from workers.runtime import timing
    from workers.spec import STATUS_ERROR, JobResult, JobSpec

    info = device_detect.detect(0).to_dict()
    ceiling = None
    if os.environ.get("KERNELFLEET_MEASURE_CEILING", "1") != "0" and not compile_only:
        try:
            ceiling = timing.copy_bandwidth_gbs(device)
        except Exception as exc:  # a ceiling we cannot measure is reported as missing, never guessed
            print(f"copy-bandwidth measurement failed: {exc}", file=sys.stderr)
    _emit(results, {"event": "ready", "device": info, "copy_gbs": ceiling, "pid": os.getpid()})

    for line in sys.stdin:
        if not line.strip():
            continue
        spec = JobSpec.from_dict(json.loads(line))
        _emit(results, {"event": "start", "key": spec.key})
        t0 = time.time()
        try:
            if compile_only and not kinds.kind_of(spec.kind).compile_only:
                raise ValueError(f"a {spec.kind} job in a compile-only sandbox (kernels are not runnable here)")
            result = _run_one(spec, device)
        except Exception as exc:
            tb = traceback.format_exc(limit=8)
            msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            result = JobResult(spec.key, STATUS_ERROR, error=msg, details={"traceback": tb})
        result.started_at = t0
        result.duration_s = time.time() - t0
        _emit(results, {"event": "result", "result": result.to_dict(), "profiled": timing.profiler_used()})
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
