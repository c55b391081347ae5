"""Per-call time of every registered kernel through the fast launch path and through Triton's own launch path.

For each kernel of the registry, at its smallest grid shape and at its LTX-Video shape (the grid's shape with 6336
tokens, else 1320: its default grid), bf16, its ``triton`` implementation is called with the fast launch on and
off (kernels/fast_launch.py: ``FAST_LAUNCH``, the switch ``KERNELFLEET_FAST_LAUNCH=0`` sets at import) and timed as:

- ``event``: device events around one call, the GPU idle before each (a sync), so the reading holds the host's time
  to issue the call (where the two paths differ) and the kernel; median of ``--repeats``;
- ``host``: host µs per call over back-to-back calls (no sync inside);
- ``graph``: the call replayed from a CUDA graph (workers.runtime.timing.graph_time): the kernel alone, which both paths
  must give alike.

Each row records the path the call took and why (kernels.fast_launch.launch_path: an unchecked Triton build takes
Triton's path even when the fast one is asked for), torch and Triton (with its distribution) versions, the device and
the commit.  The table goes to stdout, one JSON line per (kernel, shape, path) to ``--out``.  It backs the launch-path
figures of docs/perf/kernels-h200.md.  Runs with the device's Triton or with another put first on PYTHONPATH (a whole
unpacked wheel, so that its ``.dist-info`` names the distribution).  On the CPU (Triton's interpreter) only host times
are taken: a check that the script runs, not a figure.

    python -m benchmarks.launch_paths --out results/h200/launch_paths.jsonl [--kernels rmsnorm ...]
        [--case rmsnorm:2x8x64 ...] [--paths fast triton] [--repeats 200]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from benchmarks.cli_args import case

LTX_TOKENS = (6336, 1320)  # LTX-Video's sequence lengths in the grids, preferred first


def grid_shapes(name: str) -> list[list[int]]:
    from orchestrator.config.compose import kernel_grid

    grid = kernel_grid(name)
    return [list(s) for s in grid["shapes"]] if grid else []


def registry_cases(names: list[str]) -> list[tuple[str, str, list[int]]]:
    """``(kernel, which, shape)``: each kernel's smallest grid shape and its LTX-Video shape (where it has one)."""
    out = []
    for name in names:
        shapes = grid_shapes(name)
        if not shapes:
            continue
        smallest = min(shapes, key=lambda s: (_numel(s), s))
        out.append((name, "smallest", smallest))
        ltx = next((s for tokens in LTX_TOKENS for s in shapes if len(s) > 1 and s[1] == tokens), None)
        if ltx is not None and ltx != smallest:
            out.append((name, "ltx-video", ltx))
    return out


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def event_times(fn, device: torch.device, repeats: int) -> list[float]:
    """µs of one call between two device events, the GPU idle before each; on the CPU the host clock."""
    out = []
    for _ in range(repeats):
        _sync(device)
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end) * 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e6)
    return out


def host_times(fn, device: torch.device, repeats: int, calls: int = 20) -> list[float]:
    """Host µs per call over ``calls`` back-to-back calls, ``repeats`` times."""
    out = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / calls)
    _sync(device)
    return out


def measure(name: str, shape: list[int], device: torch.device, fast: bool, repeats: int) -> dict:
    from kernels import fast_launch, launch_plans, registry
    from workers.runtime.timing import graph_time

    entry = registry.get(name)
    inputs = entry.make_inputs(tuple(shape), torch.bfloat16, device, torch.Generator().manual_seed(0))
    fn = entry.impls["triton"].make()
    before = fast_launch.FAST_LAUNCH
    fast_launch.FAST_LAUNCH = fast
    launch_plans.forget_launches()  # each path starts from its own first call
    try:
        path = fast_launch.launch_path()
        with torch.no_grad():
            call = lambda: fn(**inputs)  # noqa: E731
            for _ in range(5):  # compile, keep the kernel, record the launch plan
                call()
            _sync(device)
            events = event_times(call, device, repeats)
            host = host_times(call, device, max(repeats // 10, 3))
            graph = graph_time(call, device) if device.type == "cuda" else None
            direct_cached = any(launcher.cache for launcher in fast_launch.direct_launchers())
    finally:  # the process's own switch again, and no plan of this measurement left behind
        fast_launch.FAST_LAUNCH = before
        launch_plans.forget_launches()
    row = {
        "kernel": name,
        "shape": shape,
        "dtype": "bf16",
        "requested": "fast" if fast else "triton",
        "path": path.name,
        "reason": path.reason,
        "event_us": statistics.median(events),
        "event_us_samples": [round(v, 3) for v in events],
        "host_us": statistics.median(host),
        "graph_us": statistics.median(graph) if graph else None,
        # whether the calls' launches were kept by the direct launcher (the fast path's cache): True on the fast path
        "direct_cached": direct_cached,
    }
    return row


def stack_facts(device: torch.device) -> dict:
    from kernels.triton_dist import triton_distribution
    from workers.runtime.keys import git_commit

    dist = triton_distribution()
    return {
        "torch": torch.__version__,
        "triton": dist.version,
        "triton_distribution": dist.name,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "commit": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.launch_paths", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="JSON lines file to write (one line per row)")
    ap.add_argument("--kernels", nargs="+", help="registry names (default: every kernel with a grid)")
    ap.add_argument("--case", type=case, action="append", help="KERNEL:SHAPE instead of the registry's shapes")
    ap.add_argument("--paths", nargs="+", choices=["fast", "triton"], default=["fast", "triton"])
    ap.add_argument("--repeats", type=int, default=200, help="timed calls per reading (default 200)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")

    from kernels import registry

    known = registry.kernel_names()
    unknown = [n for n in (args.kernels or []) + [c[0] for c in args.case or []] if n not in known]
    if unknown:
        ap.error(f"unknown kernel {unknown[0]!r}; known: {', '.join(known)}")
    if args.case:
        cases = [(n, "given", s) for n, s in args.case]
    else:
        cases = registry_cases(args.kernels or known)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    facts = stack_facts(device)
    print(
        f"torch {facts['torch']}, {facts['triton_distribution']} {facts['triton']}, {facts['device']}, "
        f"commit {facts['commit'][:10]}"
    )
    print("| kernel | shape | which | asked | path | event µs | host µs | graph µs |")
    print("|---|---|---|---|---|---|---|---|")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for name, which, shape in cases:
            for p in args.paths:
                row = {**measure(name, shape, device, p == "fast", args.repeats), "which": which, **facts}
                out.write(json.dumps(row) + "\n")
                out.flush()
                graph = f"{row['graph_us']:.2f}" if row["graph_us"] is not None else "-"
                print(
                    f"| {name} | {'x'.join(map(str, shape))} | {which} | {p} | {row['path']} | "
                    f"{row['event_us']:.2f} | {row['host_us']:.2f} | {graph} |"
                )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
