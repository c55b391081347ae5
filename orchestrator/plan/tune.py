"""Plan ``tune`` jobs: every legal launch candidate of each kernel x shape x dtype, less those the target's compile
drops.

The candidates come from the kernel's entry (``KernelEntry.tune``, kernels/tune.py) for the architecture of the
sweep's target (``target=h200``: sm_90; ``mi355x``: gfx950; ``r9700``: gfx1201).  Before anything is scheduled each
candidate is compiled for that architecture (workers/jobs/tune_filter.py, the ``isa`` job's machinery, in child
processes without Triton's interpreter; no GPU needed): one that spills or exceeds the target's LDS is dropped, and why
is kept in the job's ``params["tune"]["dropped"]``.  Shapes of one width bucket compile alike, so each (kernel, dtype,
bucket, candidate) is compiled once, and its verdict cached on disk by the code it compiled
(``$KERNELFLEET_TUNE_CACHE``, default ``~/.cache/kernelfleet/tune-filter.json``): planning again costs no compile.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

from orchestrator.config.compose import ConfigError
from orchestrator.plan import user_cache
from workers.device.gpu_types import BY_SHORT
from workers.jobs import isa_targets
from workers.kinds.isa import NAME as ISA
from workers.kinds.tune import NAME as TUNE
from workers.runtime.keys import CodeVersion, code_version
from workers.spec import JobSpec

GPU_LABEL = "kernelfleet.io/gpu"
REPO_ROOT = Path(__file__).resolve().parents[2]


def target_arch(target: dict) -> str:
    """The compile target of a sweep target naming one GPU type (``target=h200`` -> ``sm_90``)."""
    gpu = (target.get("label_selector") or {}).get(GPU_LABEL)
    gpu_type = BY_SHORT.get(gpu or "")
    archs = [a for a in (gpu_type.archs if gpu_type else ()) if a in isa_targets.TARGETS]
    if not archs:
        from orchestrator.config.compose import conf_files

        targets = set(conf_files("target"))
        tunable = sorted(t.gpu_type for t in isa_targets.TARGETS.values() if t.gpu_type in targets)
        raise ConfigError(
            f"target={target.get('name')}: a tune sweep needs a target of one GPU type whose architecture it can "
            f"compile for; allowed: {', '.join(f'target={t}' for t in tunable)}"
        )
    return archs[0]


def tunable(name: str) -> bool:
    from kernels import registry

    return registry.get(name).tune is not None


def check_tunable(names: Iterable[str], explicit: bool) -> list[str]:
    """The kernels a tune sweep runs: those named (each must declare knobs), or every tunable one of the sweep."""
    names = list(names)
    if not explicit:
        return [n for n in names if tunable(n)]
    for n in names:
        if not tunable(n):
            raise ConfigError(
                f"sweep.kernels: {n!r} declares no tune knobs (KernelEntry.tune); tunable kernels: "
                f"{', '.join(names_tunable())}"
            )
    return names


def validate_kind(cfg: dict) -> None:
    """The checks of a sweep with tune jobs (workers/kinds/tune.py): a compile target for the sweep's target, and
    the kernels tunable."""
    from kernels import registry
    from orchestrator.config.validate import effective_grid, selected_kernels

    target_arch(cfg["target"])
    names = selected_kernels(cfg)
    for kname in names:
        try:
            registry.get(effective_grid(cfg, kname)["name"])
        except registry.UnknownKernelError as exc:
            raise ConfigError(f"kernels.{kname}.name: {exc}") from None
    explicit = cfg["sweep"].get("kernels") is not None
    if not check_tunable([effective_grid(cfg, n)["name"] for n in names], explicit):
        raise ConfigError(f"sweep.kernels: no tunable kernel; tunable: {', '.join(names_tunable())}")


def plan_kind(cfg: dict, grid: dict, targets: list[str], params: dict, code: CodeVersion) -> list[JobSpec]:
    """The tune jobs of one kernel (none for a kernel that is not tunable, in a sweep that did not name it), their
    candidates filtered by the target's compile; planned once, for the sweep's first target."""
    if not check_tunable([grid["name"]], cfg["sweep"].get("kernels") is not None):
        return []
    arch = target_arch(cfg["target"])
    shapes, dtypes = [list(s) for s in grid["shapes"]], list(grid["dtypes"])
    verdicts = compile_verdicts(grid["name"], shapes, dtypes, arch, code)
    return plan_tune(grid["name"], shapes, dtypes, targets[0], arch, params, cfg["sweep"]["name"], verdicts)


def names_tunable() -> list[str]:
    from kernels import registry

    return [n for n in registry.kernel_names() if tunable(n)]


# ------------------------------------------------------------------------------------------------------- plan


def plan_tune(
    kernel: str,
    shapes: list[list[int]],
    dtypes: list[str],
    target: str,
    arch: str | None,
    params: dict[str, Any],
    sweep: str = "tune",
    verdicts: dict[tuple, dict] | None = None,
) -> list[JobSpec]:
    """One tune job per shape and dtype: the legal candidates of ``arch`` (its table's choice among them) less those
    ``verdicts`` (``(dtype, bucket, impl) -> verdict``, from :func:`compile_verdicts`) drops.  ``arch=None`` (no
    compile target: tests on the CPU) plans the generic rule's candidates, unfiltered."""
    from kernels import registry
    from kernels import tune as kernel_tune

    entry = registry.get(kernel)
    if entry.tune is None:
        raise ConfigError(f"{kernel} declares no tune knobs (KernelEntry.tune)")
    tune = entry.tune
    rule_arch = arch or "generic"
    specs = []
    for shape in shapes:
        bucket = tune.bucket(shape)
        names = [kernel_tune.impl_name(tune, c) for c in kernel_tune.choices(tune, shape, rule_arch)]
        current = kernel_tune.impl_name(tune, tune.current(shape, rule_arch))
        for dtype in dtypes:
            dropped = {}
            for name in names:
                v = (verdicts or {}).get((dtype, bucket, name))
                if v is not None and not v["keep"]:
                    dropped[name] = v["reason"]
            kept = [n for n in names if n not in dropped]
            specs.append(
                JobSpec(
                    kind=TUNE,
                    kernel=kernel,
                    shape=list(shape),
                    dtype=dtype,
                    impls=kept,
                    target=target,
                    params={
                        **params,
                        "tune": {
                            "arch": arch,
                            "bucket": bucket,
                            "current": current,
                            "dropped": dropped,
                            "compiled": arch is not None,
                        },
                    },
                    sweep=sweep,
                )
            )
    return specs


# ------------------------------------------------------------------------------------------ compile verdicts


def cache_path() -> Path:
    env = os.environ.get("KERNELFLEET_TUNE_CACHE")
    return Path(env) if env else user_cache.path("tune-filter.json")


def _load_cache(path: Path) -> dict[str, dict]:
    data = user_cache.read(path)
    return data if isinstance(data, dict) else {}


def _cache_key(task: dict, code: CodeVersion) -> str:
    code_hash = code.job_hash(JobSpec(kind=ISA, kernel=task["kernel"]))
    what = [task["kernel"], task["arch"], task["dtype"], task["bucket"], task["impl"], code_hash, code.software]
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


def _run_filter(tasks: list[dict]) -> list[dict]:
    """Compile ``tasks`` in child processes (one per CPU, at most 4), without Triton's interpreter."""
    if not tasks:
        return []
    n = max(1, min(len(tasks), os.cpu_count() or 1, 4))
    chunks = [tasks[i::n] for i in range(n)]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="kf-tune-filter-") as tmp:
        procs = []
        for i, chunk in enumerate(chunks):
            out = Path(tmp) / f"verdicts-{i}.json"
            proc = subprocess.Popen(
                [sys.executable, "-m", "workers.jobs.tune_filter", str(out)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                cwd=str(REPO_ROOT),
                text=True,
            )
            procs.append((proc, out, chunk))
        for proc, _, chunk in procs:
            proc.stdin.write(json.dumps(chunk))
            proc.stdin.close()
        by_task: dict[int, dict] = {}
        for proc, out, chunk in procs:
            err = proc.stderr.read()
            if proc.wait() != 0 or not out.exists():
                last = (err.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"the tune compile filter failed: {last}")
            for task, verdict in zip(chunk, json.loads(out.read_text())):
                by_task[id(task)] = verdict
    results = []
    for task in tasks:
        v = by_task[id(task)]
        if "error" in v:
            raise RuntimeError(f"the tune compile filter failed on {task['kernel']} {task['impl']}: {v['error']}")
        results.append(v)
    return results


def compile_verdicts(
    kernel: str, shapes: list[list[int]], dtypes: list[str], arch: str, code: CodeVersion | None = None, progress=None
) -> dict[tuple, dict]:
    """``(dtype, bucket, impl) -> {"keep", "reason", "figures"}`` for every candidate of ``kernel`` on ``arch``:
    compiled once per bucket (at its first shape), from the cache when the same code compiled it before."""
    from kernels import registry
    from kernels import tune as kernel_tune

    code = code or code_version()
    tune = registry.get(kernel).tune
    tasks = []
    seen = set()
    for shape in shapes:
        bucket = tune.bucket(shape)
        for dtype in dtypes:
            for c in kernel_tune.choices(tune, shape, arch):
                name = kernel_tune.impl_name(tune, c)
                if (dtype, bucket, name) in seen:
                    continue
                seen.add((dtype, bucket, name))
                tasks.append(
                    {
                        "kernel": kernel,
                        "shape": list(shape),
                        "dtype": dtype,
                        "arch": arch,
                        "impl": name,
                        "bucket": bucket,
                    }
                )
    path = cache_path()
    cache = _load_cache(path)
    keys = [_cache_key(t, code) for t in tasks]
    todo = [t for t, k in zip(tasks, keys) if k not in cache]
    if todo and progress is not None:
        progress(f"compiling {len(todo)} {kernel} candidates for {arch} (cached: {len(tasks) - len(todo)})")
    if todo:
        for task, verdict in zip(todo, _run_filter(todo)):
            cache[_cache_key(task, code)] = verdict
        user_cache.write(path, cache)  # one that cannot be written costs compile time next time, nothing else
    return {(t["dtype"], t["bucket"], t["impl"]): cache[k] for t, k in zip(tasks, keys)}


def summary(specs: list[JobSpec]) -> list[str]:
    """Per kernel: jobs, candidates to time and candidates the compile dropped (the dry run's lines)."""
    lines = []
    by_kernel: dict[str, list[JobSpec]] = {}
    for s in specs:
        if s.kind == TUNE:
            by_kernel.setdefault(s.kernel or "", []).append(s)
    for kernel, jobs in by_kernel.items():
        timed = sum(len(s.impls) for s in jobs)
        dropped = sum(len(s.params["tune"]["dropped"]) for s in jobs)
        arch = jobs[0].params["tune"]["arch"] or "no compile target"
        lines.append(
            f"tune {kernel}: {len(jobs)} jobs, {timed} candidates to time "
            f"({min(len(s.impls) for s in jobs)}-{max(len(s.impls) for s in jobs)} a job), "
            f"{dropped} dropped by the {arch} compile"
        )
    return lines
