"""Where the host's time goes in one LTX-Video denoising call, per e2e mode: Python's profiler (cProfile) over a
pipeline call at the e2e job's setting, the device drained at every step so the host never waits on a full launch
queue (as the job's ``host_ms_per_step`` is taken).  Prints the functions that take the most time of their own
and the most time including callees, per mode.  It backs the host-time section of docs/perf/ltx-e2e-h200.md.

    python -m benchmarks.e2e_host_profile [--modes triton,triton+compile] [--frames 25] [--steps 6] [--top 25]

cProfile's own cost inflates every Python call by a similar factor, so read shares, not absolute times.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import torch

from workers.jobs.e2e import job as e2e
from workers.jobs.e2e.spec import MODES, PARAM_DEFAULTS
from workers.spec import JobSpec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.e2e_host_profile", description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default="triton,triton+compile", help=f"comma-separated, of: {', '.join(MODES)}")
    ap.add_argument("--frames", type=int, default=25)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--width", type=int, default=704)
    ap.add_argument("--steps", type=int, default=6, help="denoising steps of the profiled call")
    ap.add_argument("--top", type=int, default=25, help="functions listed per table")
    ap.add_argument("--tiny", action="store_true", help="the e2e job's tiny model (a quick check, e.g. on a CPU)")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"unknown mode(s) {bad}; allowed: {', '.join(MODES)}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    spec = JobSpec(
        kind="e2e",
        model="ltx-video",
        shape=[args.frames, args.height, args.width],
        dtype="bf16",
        impls=modes,
        key="host-profile",
        params={"steps": args.steps, "tiny": args.tiny},
    )
    p = {**PARAM_DEFAULTS, **spec.params, "tolerance": 1.0}
    s = e2e.setup(spec, device, p)
    for mode in modes:
        transformer = s.pipe.transformer
        e2e.enter_mode(mode, transformer)
        try:
            e2e.run_call(s, spec, p, device)  # warm-up: compilation, Triton JIT, CUDA graph capture
            e2e.run_call(s, spec, p, device)
            t0 = time.perf_counter()
            plain = e2e.run_call(s, spec, p, device, host_probe=True)
            wall = time.perf_counter() - t0
            prof = cProfile.Profile()
            prof.enable()
            profiled = e2e.run_call(s, spec, p, device, host_probe=True)
            prof.disable()
        finally:
            e2e.leave_mode(mode, transformer)
        host = sum(plain.host_ms) / len(plain.host_ms)
        host_prof = sum(profiled.host_ms) / len(profiled.host_ms)
        print(f"\n=== {mode}: host {host:.2f} ms/step, mean ({host_prof:.2f} under cProfile), call {wall:.2f} s ===")
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            stats = pstats.Stats(prof, stream=out)
            stats.sort_stats(order).print_stats(args.top)
            text = out.getvalue()
            print(text[text.find("   ncalls") :])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
