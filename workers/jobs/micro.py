"""The micro-benchmark job: every implementation of one (kernel, shape, dtype), timed side by side.

All implementations run in this one process on one device.  Each is first checked against the float64
reference (an implementation that fails never gets a speed-up), then they are timed interleaved: ``rounds``
rounds, each timing every implementation for ``rep_ms / rounds``, so drift of clocks or temperature spreads over
all of them alike.  Per implementation: ``time_us`` (median, with every repeat kept), ``iqr_us``, ``gbs`` (the
entry's byte model over the median), ``compile_s`` (first call), ``graph_time_us`` on a GPU (graph replay), and
``speedup`` = baseline median / implementation median.  On a GPU, last (the profiler stays attached to the
process), ``kernel_time_us``: the call's kernels' own device time with the L2 flushed (timing.kernel_time, what a
kernel profiler reports), and ``kernel_gbs`` by it; the job parameter ``kernel_time: false`` leaves them out.
For an implementation torch.compile builds, ``details["autotune"][impl]`` says which kernels Inductor generated
and which configs its autotuner picked (workers.jobs.autotune_pick); ``fresh_autotune: true`` compiles without the
node's Inductor cache.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

import torch

from kernels.registry import Impl, KernelEntry
from workers.jobs import autotune_pick, correctness
from workers.runtime import timing
from workers.spec import STATUS_INCORRECT, STATUS_OK, JobResult, JobSpec, Measurement


def run(spec: JobSpec, device: torch.device) -> JobResult:
    entry, dtype, inputs, seed = correctness.prepare(spec, device)
    usable, unavailable = correctness.resolve_impls(entry, spec.impls, device)
    details: dict[str, Any] = {"seed": seed, "unavailable": unavailable, "errors": {}, "baseline": entry.baseline}
    if not usable:
        return correctness.skipped(spec, unavailable, details)
    measurements, failed = measure(spec, device, entry, dtype, inputs, usable, details, entry.baseline)
    status = STATUS_INCORRECT if failed else STATUS_OK
    return JobResult(spec.key, status, measurements, error="; ".join(failed) or None, details=details)


def measure(
    spec: JobSpec,
    device: torch.device,
    entry: KernelEntry,
    dtype: torch.dtype,
    inputs: dict,
    usable: dict[str, Impl],
    details: dict[str, Any],
    baseline: str,
) -> tuple[list[Measurement], list[str]]:
    """Check every implementation of ``usable`` against the reference, then time those that ran interleaved (the
    job's ``rounds``, ``rep_ms``, ``flush``...), each with its ``speedup`` over ``baseline`` where both are correct.
    An implementation that raises is an error of its own (``details["errors"]``), never the caller's: it leaves
    the rounds, the others go on.  Returns the measurements and a line per implementation that failed."""
    p = spec.params
    details.setdefault("errors", {})
    ref = entry.reference(inputs)
    fns, correct, measurements, failed, compiled = {}, {}, [], [], {}
    for name, impl in usable.items():
        try:
            t0 = time.perf_counter()
            with autotune_pick.compiling(
                fresh=bool(p.get("fresh_autotune")), key=autotune_pick.job_key(spec, name)
            ) as compiled[name]:
                fn = impl.make()
                fn(**inputs)  # first call: compilation, autotuning, lazy module loading
                timing.sync(device)
            measurements.append(Measurement(name, "compile_s", time.perf_counter() - t0, "s"))
            chk = correctness.check_impl(entry, impl, fn, inputs, ref, spec.dtype, device)
        except Exception as exc:
            details["errors"][name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            failed.append(f"{name}: {details['errors'][name]}")
            continue
        correct[name] = chk.ok
        measurements.append(Measurement(name, "correct", 1.0 if chk.ok else 0.0))
        if not chk.ok:
            failed.append(f"{name}: {chk.note}")
        fns[name] = fn
    del ref

    flush_mode = str(p.get("flush", "read"))
    rounds = max(int(p.get("rounds", 5)), 1)
    per_round_ms = float(p.get("rep_ms", 100.0)) / rounds
    samples: dict[str, list[float]] = {n: [] for n in fns}
    for r in range(rounds):
        for name, fn in list(fns.items()):
            try:
                samples[name] += timing.bench(
                    lambda: fn(**inputs),
                    device,
                    warmup_ms=float(p.get("warmup_ms", 25.0)) if r == 0 else 1.0,
                    rep_ms=per_round_ms,
                    min_reps=5 if device.type == "cuda" else 3,
                    flush_mode=flush_mode,
                )
            except Exception as exc:  # its error, not the others': it leaves the rounds
                details["errors"][name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                failed.append(f"{name}: {details['errors'][name]}")
                del fns[name], samples[name]
    nbytes = entry.bytes_moved(tuple(spec.shape), dtype)
    medians = {n: timing.median(s) for n, s in samples.items()}
    for name, s in samples.items():
        med = medians[name]
        measurements += [
            Measurement(name, "time_us", med, "us", s),
            Measurement(name, "iqr_us", timing.iqr(s), "us"),
            Measurement(name, "gbs", nbytes / (med * 1e-6) / 1e9, "GB/s"),
        ]
    if device.type == "cuda" and p.get("graph", True):
        for name, fn in fns.items():
            try:
                g = timing.graph_time(lambda: fn(**inputs), device)
                measurements.append(Measurement(name, "graph_time_us", timing.median(g), "us", g))
            except Exception as exc:  # some implementations cannot be captured; say why, keep the rest
                details.setdefault("graph_errors", {})[name] = str(exc).splitlines()[0][:300]
    if device.type == "cuda" and p.get("kernel_time", True):
        for name, fn in fns.items():
            try:
                k = timing.kernel_time(lambda: fn(**inputs), device, flush_mode=flush_mode)
                med = timing.median(k)
                measurements += [
                    Measurement(name, "kernel_time_us", med, "us", k),
                    Measurement(name, "kernel_gbs", nbytes / (med * 1e-6) / 1e9, "GB/s"),
                ]
            except Exception as exc:
                details.setdefault("kernel_time_errors", {})[name] = str(exc).splitlines()[0][:300]
    base = baseline
    if base in medians and correct.get(base):
        for name, med in medians.items():
            if correct.get(name):
                measurements.append(Measurement(name, "speedup", medians[base] / med, "x"))
    picks = {name: autotune_pick.record(state) for name, state in compiled.items() if name in fns}
    if any(picks.values()):  # read after timing: a kernel's launcher is tuned down to one on its first runs
        details["autotune"] = {name: pick for name, pick in picks.items() if pick}
    details["bytes"] = nbytes
    details["flops"] = entry.flops(tuple(spec.shape))
    return measurements, failed
