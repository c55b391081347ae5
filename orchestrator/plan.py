"""Expand a validated sweep configuration into JobSpecs (pure: no I/O beyond reading the code version).

A job's key is a content hash of the job (kind, kernel, shape, dtype, implementations, target, parameters), of the
code that runs it and of the software versions (workers/keys.py: :func:`job_key`, :class:`CodeVersion`), so the
same config on the same code plans the same keys, and the store can tell which jobs already have a result.
"""

from __future__ import annotations

import hashlib

from orchestrator import tune_plan
from orchestrator.validate import effective_grid, selected_kernels
from workers.keys import CodeVersion, code_version, job_key
from workers.spec import JobSpec

__all__ = ["CodeVersion", "code_version", "job_key", "plan", "plan_key", "timing_params"]

KERNEL_KINDS = ("correctness", "micro", "profile", "isa", "tune")


def timing_params(sweep: dict) -> dict:
    params = {
        k: sweep[k] for k in ("warmup_ms", "rep_ms", "rounds", "graph", "kernel_time", "flush", "seed", "timeout_s")
    }
    if sweep.get("fresh_autotune"):  # only when set: the keys of every other plan stay as they were
        params["fresh_autotune"] = True
    return params


def plan(cfg: dict, code: CodeVersion | None = None, gpu_types: list[str] | None = None) -> list[JobSpec]:
    """The sweep's JobSpecs, in a stable order.

    ``gpu_types``: for a target with ``per_gpu_type`` (``target=all``), the GPU types present in the cluster; each
    job is planned once per type.
    """
    code = code or code_version()
    sw = cfg["sweep"]
    target = cfg["target"]
    targets = [target["name"]]
    if target.get("per_gpu_type"):
        targets = sorted(gpu_types or [])
    params = timing_params(sw)
    specs: list[JobSpec] = []
    tuned = set()
    if "tune" in sw["kinds"]:
        tuned = set(tune_plan.check_tunable(selected_kernels(cfg), sw.get("kernels") is not None))
    for kname in selected_kernels(cfg):
        grid = effective_grid(cfg, kname)
        for kind in sw["kinds"]:
            if kind not in KERNEL_KINDS:
                continue
            if kind == "isa":
                specs.extend(plan_isa(sw, grid, targets[0]))
                continue
            if kind == "tune":
                if kname in tuned:
                    specs.extend(_plan_tune(cfg, grid, targets[0], params, code))
                continue
            for shape in grid["shapes"]:
                for dtype in grid["dtypes"]:
                    for tgt in targets:
                        specs.append(
                            JobSpec(
                                kind=kind,
                                kernel=grid["name"],
                                shape=list(shape),
                                dtype=dtype,
                                impls=list(grid["impls"]),
                                target=tgt,
                                params=dict(params),
                                sweep=sw["name"],
                            )
                        )
    if "e2e" in sw["kinds"]:
        from orchestrator.plan_e2e import plan_e2e

        for tgt in targets:
            specs.extend(plan_e2e(sw, tgt))
    for s in specs:
        s.key = job_key(s, code)
    return specs


def _plan_tune(cfg: dict, grid: dict, target: str, params: dict, code: CodeVersion) -> list[JobSpec]:
    """Tune jobs of one kernel (orchestrator/tune_plan.py), their candidates filtered by the target's compile."""
    arch = tune_plan.target_arch(cfg["target"])
    shapes, dtypes = [list(s) for s in grid["shapes"]], list(grid["dtypes"])
    verdicts = tune_plan.compile_verdicts(grid["name"], shapes, dtypes, arch, code)
    return tune_plan.plan_tune(grid["name"], shapes, dtypes, target, arch, params, cfg["sweep"]["name"], verdicts)


def plan_isa(sw: dict, grid: dict, target: str) -> list[JobSpec]:
    """Compile-only jobs (workers/isa.py): the kernel's Triton implementation at each shape and dtype, once per
    compile target of ``sweep.archs``.  Where they run does not change what they find, so they are planned once (for
    the sweep's first target) and carry no timing parameters."""
    return [
        JobSpec(
            kind="isa",
            kernel=grid["name"],
            shape=list(shape),
            dtype=dtype,
            impls=["triton"],
            target=target,
            params={"arch": arch, "seed": 0, "timeout_s": sw["timeout_s"]},
            sweep=sw["name"],
        )
        for shape in grid["shapes"]
        for dtype in grid["dtypes"]
        for arch in sw["archs"]
    ]


def plan_key(specs: list[JobSpec]) -> str:
    h = hashlib.sha256()
    for k in sorted(s.key for s in specs):
        h.update(k.encode())
    return h.hexdigest()[:20]
