"""Expand a validated sweep configuration into JobSpecs (pure: no I/O beyond reading the code version).

A job's key is a content hash of the job (kind, kernel, shape, dtype, implementations, target, parameters), of the
code that runs it and of the software versions (workers/runtime/keys.py: :func:`job_key`, :class:`CodeVersion`), so the
same config on the same code plans the same keys, and the store can tell which jobs already have a result.
"""

from __future__ import annotations

import hashlib

from orchestrator.config.validate import effective_grid, selected_kernels
from workers import kinds
from workers.kinds.isa import NAME as ISA
from workers.runtime.keys import CodeVersion, code_version, job_key
from workers.spec import JobSpec

__all__ = ["CodeVersion", "code_version", "job_key", "kind_params", "plan", "plan_key"]


def kind_params(sweep: dict, kind: str) -> dict:
    """The sweep keys a job of ``kind`` carries in its params (its declaration's ``params``, workers/kinds/)."""
    params = {k: sweep[k] for k in kinds.kind_of(kind).params}
    if sweep.get("fresh_autotune"):  # only when set: the keys of every other plan stay as they were
        params["fresh_autotune"] = True
    return params


def plan(cfg: dict, code: CodeVersion | None = None, gpu_types: list[str] | None = None) -> list[JobSpec]:
    """The sweep's JobSpecs, in a stable order.

    Each kind in ``sweep.kinds`` is planned as its declaration says (workers/kinds/): a per-kernel kind without a
    planner of its own gets one job per kernel x shape x dtype x target, the others call their planner.
    ``gpu_types``: for a target with ``per_gpu_type`` (``target=all``), the GPU types present in the cluster; each
    job is planned once per type.
    """
    code = code or code_version()
    sw = cfg["sweep"]
    target = cfg["target"]
    targets = [target["name"]]
    if target.get("per_gpu_type"):
        targets = sorted(gpu_types or [])
    wanted = [kinds.kind_of(k) for k in sw["kinds"]]
    specs: list[JobSpec] = []
    for kname in selected_kernels(cfg):
        grid = effective_grid(cfg, kname)
        for kind in wanted:
            if not kind.per_kernel:
                continue
            params = kind_params(sw, kind.name)
            if kind.planner:
                specs.extend(kinds.resolve(kind.planner)(cfg, grid, targets, params, code))
                continue
            for shape in grid["shapes"]:
                for dtype in grid["dtypes"]:
                    for tgt in targets:
                        specs.append(
                            JobSpec(
                                kind=kind.name,
                                kernel=grid["name"],
                                shape=list(shape),
                                dtype=dtype,
                                impls=list(grid["impls"]),
                                target=tgt,
                                params=dict(params),
                                sweep=sw["name"],
                            )
                        )
    for kind in wanted:
        if not kind.per_kernel:
            specs.extend(kinds.resolve(kind.planner)(cfg, targets))
    for s in specs:
        s.key = job_key(s, code)
    return specs


def plan_isa(cfg: dict, grid: dict, targets: list[str], params: dict, code: CodeVersion) -> list[JobSpec]:
    """Compile-only jobs (workers/jobs/isa.py): the kernel's Triton implementation at each shape and dtype, once per
    compile target of ``sweep.archs``.  Where they run does not change what they find, so they are planned once (for
    the sweep's first target) and carry no timing parameters."""
    sw = cfg["sweep"]
    return [
        JobSpec(
            kind=ISA,
            kernel=grid["name"],
            shape=list(shape),
            dtype=dtype,
            impls=["triton"],
            target=targets[0],
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
