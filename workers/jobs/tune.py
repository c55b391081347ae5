"""The ``tune`` job: every candidate launch configuration of one (kernel, shape, dtype), checked, then timed together.

The job's implementations are candidates of the kernel's declared knobs (its entry's ``tune``, kernels/tune.py), named
``triton[num_warps=8,rows_per_program=1]``; the planner has already dropped those that spill or exceed the target's
LDS when compiled for it (orchestrator/plan/tune.py).  Each candidate launches the entry's Triton implementation with
its ``_config`` override; the micro harness (:func:`workers.jobs.micro.measure`) checks each against the float64
reference first, then times them interleaved (median, IQR, graph and kernel time on a GPU).  The launch the kernel's
table picks today on this device is always one of them (added when the plan lacks it), and each candidate's
``speedup`` is over it.  A candidate that raises is an error of that candidate only (``details["errors"]``, and
``details["tune"]["dropped"]``); the job goes on with the rest.

``details["tune"]``: ``current`` (the table's choice's name), ``candidates`` (name -> knobs), ``dropped`` (name ->
why: the plan's compile filter, and what failed here), ``bucket`` (the width bucket), ``knobs`` and ``arch`` (this
device's, whose table ``current`` is).
"""

from __future__ import annotations

from typing import Any

import torch

from kernels import tune as kernel_tune
from kernels.arch import launch_arch
from kernels.registry import Impl, KernelEntry
from workers.jobs import correctness, micro
from workers.spec import STATUS_INCORRECT, STATUS_OK, JobResult, JobSpec


def tune_of(entry: KernelEntry) -> kernel_tune.Tune:
    if entry.tune is None:
        raise ValueError(f"{entry.name} declares no tune knobs (KernelEntry.tune in kernels/entries/)")
    return entry.tune


def candidate_impl(entry: KernelEntry, name: str, shape: list[int]) -> Impl:
    """The implementation a candidate name stands for: the entry's Triton launch with the candidate's override."""
    tune = tune_of(entry)
    config = tune.config(kernel_tune.parse_impl(tune, name), shape)

    def run(out=None, **inputs):
        if out is None:
            out = entry.alloc_out(inputs)
        return tune.launch(**inputs, out=out, _config=config)

    triton_impl = entry.impls["triton"]
    return Impl(name, lambda: run, triton_impl.unavailable, accepts_out=True, description=f"{entry.name} {name}")


def run(spec: JobSpec, device: torch.device) -> JobResult:
    entry, dtype, inputs, seed = correctness.prepare(spec, device)
    tune = tune_of(entry)
    shape = list(spec.shape)
    arch = launch_arch(device)
    current = kernel_tune.impl_name(tune, tune.current(shape, arch))
    names = list(spec.impls)
    if current not in names:
        names.insert(0, current)
    planned = dict(spec.params.get("tune") or {})
    dropped: dict[str, str] = dict(planned.get("dropped") or {})
    candidates: dict[str, dict[str, int]] = {}
    usable: dict[str, Impl] = {}
    for name in names:
        try:
            impl = candidate_impl(entry, name, shape)
        except (ValueError, TypeError) as exc:
            dropped[name] = f"not a candidate of {entry.name}: {exc}"
            continue
        reason = impl.unavailable(device)
        if reason:
            dropped[name] = reason
            continue
        candidates[name] = kernel_tune.parse_impl(tune, name)
        usable[name] = impl
    details: dict[str, Any] = {
        "seed": seed,
        "unavailable": {},
        "errors": {},
        "baseline": current,
        "tune": {
            "current": current,
            "candidates": candidates,
            "dropped": dropped,
            "bucket": tune.bucket(shape),
            "knobs": list(tune.knobs),
            "arch": arch,
            "planned_arch": planned.get("arch"),
        },
    }
    if current not in usable:
        raise RuntimeError(
            f"{entry.name} {shape}: the current launch {current} cannot run here: {dropped.get(current)}"
        )
    measurements, failed = micro.measure(spec, device, entry, dtype, inputs, usable, details, current)
    for name, error in details["errors"].items():
        dropped.setdefault(name, error)
    # a candidate that raised is dropped (its error kept); one that ran and computed a wrong result fails the job
    incorrect = [line for line in failed if line.split(":", 1)[0] not in details["errors"]]
    status = STATUS_INCORRECT if incorrect else STATUS_OK
    return JobResult(spec.key, status, measurements, error="; ".join(incorrect) or None, details=details)
