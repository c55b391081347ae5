"""The program rocprofv3 runs for a profile job on ROCm: one implementation of one kernel, warmed up, then timed
iterations between two fence kernels.

    python -m workers.jobs.profile_target SPEC [--impl NAME] [--device cuda:0] [--manifest PATH]

``SPEC`` is a JobSpec as JSON text or a path to a JSON file.  rocprofv3 traces every dispatch of the process
(input setup and warm-up included), so the measured iterations are bracketed by a tiny kernel with a name nothing
else has (:data:`FENCE_KERNEL`, a Triton kernel; ``spin_kernel`` from ``torch.cuda._sleep`` without Triton).
``workers.jobs.profile`` keeps only the dispatches between the last two fences.  The manifest (JSON) records what ran:
impl, warm-up and iteration counts, which fence, and the error if the implementation raised.

Not run on AMD hardware yet: the fence kernel's name as rocprofv3 prints it is an expectation (a Triton kernel's
symbol is its function name), checked by substring.  On a machine without a GPU it runs the iterations unfenced.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

import torch

FENCE_KERNEL = "kernelfleet_profile_fence"
SPIN_KERNEL = "spin_kernel"
DEFAULT_WARMUP = 5
DEFAULT_ITERS = 10


try:  # Triton is optional here: without it the fence is torch's spin kernel
    import triton
    import triton.language as tl

    @triton.jit
    def kernelfleet_profile_fence(ptr):
        tl.store(ptr, tl.load(ptr) + 1)

except Exception:  # noqa: BLE001
    kernelfleet_profile_fence = None


def _triton_fence() -> Callable[[], None] | None:
    """A launcher for the Triton fence kernel on the current GPU, or None when Triton cannot build it (or runs in
    interpreter mode, where it would launch no GPU kernel)."""
    if kernelfleet_profile_fence is None or os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return None
    buf = torch.zeros(1, dtype=torch.int32, device="cuda")

    def launch() -> None:
        kernelfleet_profile_fence[(1,)](buf)

    try:
        launch()  # compiles now, so the timed window never contains a compilation
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001
        return None
    return launch


def make_fence(device: torch.device) -> tuple[str | None, Callable[[], None]]:
    """(the substring that names the fence kernel in a trace, a function that launches it); (None, no-op) on CPU."""
    if device.type != "cuda":
        return None, lambda: None
    launch = _triton_fence()
    if launch is not None:
        return FENCE_KERNEL, launch
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        return SPIN_KERNEL, lambda: sleep(1)
    return None, lambda: None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load_spec(arg: str) -> dict[str, Any]:
    text = arg if arg.lstrip().startswith("{") else Path(arg).read_text()
    return json.loads(text)


def run_target(spec_dict: dict[str, Any], impl_name: str | None, device: torch.device) -> dict[str, Any]:
    """Run one implementation as the profiled program does; returns the manifest (never raises for the impl's own
    errors: they are recorded)."""
    from kernels import registry
    from workers.spec import JobSpec

    spec = JobSpec.from_dict(spec_dict)
    impl_name = impl_name or (spec.impls[0] if spec.impls else None)
    warmup = int(spec.params.get("warmup", DEFAULT_WARMUP))
    iters = int(spec.params.get("iters", DEFAULT_ITERS))
    manifest: dict[str, Any] = {
        "impl": impl_name,
        "warmup": warmup,
        "iters": iters,
        "device": str(device),
        "fence": None,
        "status": "error",
        "error": None,
    }
    try:
        if spec.kernel is None or impl_name is None:
            raise ValueError("profile target needs spec.kernel and an implementation")
        if device.type == "cuda":
            torch.cuda.set_device(device)
        entry = registry.get(spec.kernel)
        if impl_name not in entry.impls:
            raise ValueError(f"unknown implementation {impl_name!r} of {spec.kernel}; known: {entry.impl_names()}")
        entry.check_shape(spec.shape)
        gen = torch.Generator().manual_seed(int(spec.params.get("seed") or 0))  # a sweep's seed null: seed 0
        inputs = entry.make_inputs(spec.shape, registry.dtype_of(spec.dtype), device, gen)
        fn = entry.impls[impl_name].make()
        fence_name, fence = make_fence(device)
        manifest["fence"] = fence_name
        for _ in range(warmup):
            fn(**inputs)
        _sync(device)
        fence()
        try:
            for _ in range(iters):
                fn(**inputs)
        finally:
            fence()  # always close the window, so a failure cannot shift the next one
            _sync(device)
        manifest["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 - recorded for the parent
        manifest["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.jobs.profile_target", description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", help="JobSpec as JSON text or a path to a JSON file")
    parser.add_argument("--impl", default=None, help="implementation to run (default: the spec's first)")
    parser.add_argument("--device", default=None, help="torch device (default: cuda:0 when there is a GPU, else cpu)")
    parser.add_argument("--manifest", default=None, help="where to write the manifest JSON (default: stdout)")
    args = parser.parse_args(argv)
    device = torch.device(args.device or ("cuda:0" if torch.cuda.is_available() else "cpu"))
    manifest = run_target(load_spec(args.spec), args.impl, device)
    text = json.dumps(manifest, sort_keys=True)
    if args.manifest:
        Path(args.manifest).write_text(text)
    else:
        print(text)
    return 0 if manifest["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
