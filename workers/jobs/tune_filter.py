"""The tune sweep's compile filter: each candidate launch compiled for the target architecture, kept only if it can win.

A candidate (kernels/tune.py) is launched as the ``tune`` job would launch it, inside
:func:`kernels.arch.compile_target` with Triton's launches captured (the ``isa`` job's machinery, workers/jobs/isa.py),
and each launch is compiled for the target and read: a candidate whose code spills registers (AMD VGPR/SGPR spills or
scratch; NVIDIA spill stores/loads), allocates more LDS / shared memory than the target gives a program
(:func:`workers.jobs.isa_targets.cannot_run`), or does not compile, is dropped with the reason.  No GPU is
needed.

The kernels must be imported compiled, not interpreted: the planner runs :func:`check` in a child process
(``python -m workers.jobs.tune_filter OUT.json``: a JSON list of tasks on stdin, their verdicts in OUT.json) without
``TRITON_INTERPRET``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

SPILL_FIGURES = ("vgpr_spills", "sgpr_spills", "scratch_bytes", "spill_store_bytes", "spill_load_bytes")


def verdict(per_launch: list[dict[str, Any]], target) -> str | None:
    """Why a compiled candidate cannot win (a launch spills, or cannot run on the target:
    :func:`workers.jobs.isa_targets.cannot_run`), or None when it is kept.  ``per_launch``: each launch's figures."""
    from workers.jobs.isa_targets import cannot_run

    for figures in per_launch:
        spills = {k: figures[k] for k in SPILL_FIGURES if figures.get(k)}
        if spills:
            return "spills: " + ", ".join(f"{k}={v}" for k, v in spills.items())
        reason = cannot_run(figures, target)
        if reason:
            return reason
    return None


def check(task: dict[str, Any]) -> dict[str, Any]:
    """Compile one candidate (``kernel``, ``shape``, ``dtype``, ``arch``, ``impl``) for its target: ``{"keep":
    bool, "reason": str | None, "figures": {...}}``."""

    from kernels import arch as kernel_arch
    from kernels import registry
    from kernels import tune as kernel_tune
    from workers.jobs import isa, isa_targets

    if kernel_arch.INTERPRETED:
        raise RuntimeError("the compile filter needs the kernels compiled, not interpreted (unset TRITON_INTERPRET)")
    entry = registry.get(task["kernel"])
    if entry.tune is None:
        raise ValueError(f"{entry.name} declares no tune knobs (KernelEntry.tune)")
    target = isa_targets.get(task["arch"])
    shape = list(task["shape"])
    config = entry.tune.config(kernel_tune.parse_impl(entry.tune, task["impl"]), shape)

    def candidate(**inputs):
        entry.tune.launch(**inputs, out=entry.alloc_out(inputs), _config=config)

    try:
        launches = isa.wrapper_launches(entry.name, shape, task["dtype"], target.arch, call=candidate)
        per_launch = [isa.analyse(isa.compile_launch(launch, target), target) for launch in launches]
    except Exception as exc:  # a candidate that does not compile for the target cannot run there
        msg = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[0][:300]
        return {"keep": False, "reason": f"does not compile for {target.arch}: {msg}", "figures": {}}
    reason = verdict(per_launch, target)
    figures = isa.combine(per_launch)
    figures = {k: v for k, v in figures.items() if k in (*SPILL_FIGURES, "lds_bytes", "vgprs", "registers")}
    return {"keep": reason is None, "reason": reason, "figures": figures}


def main(argv: list[str]) -> int:
    """``python -m workers.jobs.tune_filter OUT.json``: the tasks (a JSON list) on stdin, the verdicts written to
    OUT.json (stdout is left to what compiling prints)."""
    tasks = json.load(sys.stdin)
    results = []
    for task in tasks:
        try:
            results.append(check(task))
        except Exception as exc:
            msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            results.append({"error": msg})
    with open(argv[0], "w") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    os.environ.pop("TRITON_INTERPRET", None)  # before any kernel module is imported
    sys.exit(main(sys.argv[1:]))
