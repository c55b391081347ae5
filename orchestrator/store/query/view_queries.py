"""The dashboard's views: newest micro results, speed-up matrix, filter choices, device ceilings, the end-to-end
and profile pages.  Each is a bounded number of SQL statements (grouped or filtered in the database); Python only
shapes the rows that come back."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select

from orchestrator.stats.e2e_anchors import floor_figures
from orchestrator.stats.e2e_setting import setting_label
from orchestrator.store.conditions import describe as describe_conditions
from orchestrator.store.conditions import plain_runs
from orchestrator.store.models import (
    Artifact,
    Device,
    Job,
    JobAttempt,
    Measurement,
    Run,
)
from orchestrator.store.query.access import Source, chunks, read_session
from orchestrator.store.query.picked import (
    BASELINE_IMPL,
    COMPILE_IMPLS,
    TIMED_KINDS,
    attempt_time,
    geomean,
    good_attempt_join,
    job_attempt,
    safe_ratio,
)
from workers.jobs.e2e.spec import MODES, family_of
from workers.kinds.e2e import NAME as E2E
from workers.kinds.micro import NAME as MICRO
from workers.kinds.profile import NAME as PROFILE
from workers.spec import GOOD_STATUSES

TIME_READINGS = ("time_us", "kernel_time_us", "graph_time_us")  # per call / kernel time / launch-free graph


def newest_micro_runs(
    src: Source, impls: Sequence[str] | None = None, reading: str = "time_us", include_marked: bool = False
) -> dict[tuple[str, str], tuple[Any, int]]:
    """(kernel, gpu type) -> (when, run id) of the newest run with a good micro attempt of that kernel on that GPU
    type; with ``impls``, the newest that timed ``reading`` of one of them (the newest run that timed a
    torch.compile mode, say).  Runs marked by their conditions (shared GPU, rehearsal, uncommitted changes) are
    passed over unless ``include_marked``.  One grouped statement over attempts (over the measurements of
    ``impls`` when given)."""
    query = (
        select(Job.kernel, Device.gpu_type, JobAttempt.run_id, func.max(attempt_time()))
        .select_from(JobAttempt)
        .join(Job, Job.id == JobAttempt.job_id)
        .join(Device, Device.hardware_key == JobAttempt.hardware_key)
        .where(Job.kind == MICRO, JobAttempt.status.in_(GOOD_STATUSES))
        .group_by(Job.kernel, Device.gpu_type, JobAttempt.run_id)
    )
    if impls is not None:
        query = query.join(
            Measurement, (Measurement.job_id == JobAttempt.job_id) & (Measurement.attempt == JobAttempt.attempt)
        ).where(Measurement.metric == reading, Measurement.impl.in_(list(impls)), Measurement.value.is_not(None))
    if not include_marked:
        query = query.join(Run, Run.id == JobAttempt.run_id).where(plain_runs())
    with read_session(src) as s:
        rows = s.execute(query).all()
    newest: dict[tuple[str, str], tuple[Any, int]] = {}
    for kernel, gpu, run_id, at in rows:
        if (kernel, gpu) not in newest or (at, run_id) > newest[(kernel, gpu)]:
            newest[(kernel, gpu)] = (at, run_id)
    return newest


def micro_choices(src: Source, kernel: str | None = None) -> dict[str, Any]:
    """The values the micro-benchmark filters offer: kernels, shapes, dtypes, impls, gpu_types, and
    ``shapes_of`` / ``dtypes_of`` (kernel -> its shapes / dtypes).  ``impls``: those ``kernel`` was measured with
    (every run), or without a kernel those of the newest run of each kernel x GPU type (a bounded read)."""
    with read_session(src) as s:
        keys = s.execute(
            select(Job.kernel, Job.shape_key, Job.dtype).distinct().where(Job.kind == MICRO, Job.kernel.is_not(None))
        ).all()
        impls_q = (
            select(Measurement.impl)
            .distinct()
            .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
            .where(Measurement.metric == "time_us")
        )
        if kernel is not None:
            # a kernel's tune candidates too: the Trends page draws one when it is chosen
            impls_q = impls_q.join(Job, Job.id == Measurement.job_id).where(
                Job.kind.in_(TIMED_KINDS), Job.kernel == kernel
            )
        else:
            runs = sorted({run_id for _, run_id in newest_micro_runs(s, include_marked=True).values()})
            impls_q = impls_q.where(JobAttempt.run_id.in_(runs))
        impls = s.scalars(impls_q).all()
        gpu = s.scalars(
            select(Device.gpu_type)
            .distinct()
            .where(select(JobAttempt.id).where(JobAttempt.hardware_key == Device.hardware_key).exists())
        ).all()
    shapes_of: dict[str, set[str]] = defaultdict(set)
    dtypes_of: dict[str, set[str]] = defaultdict(set)
    for k, skey, dtype in keys:
        shapes_of[k].add(skey)
        dtypes_of[k].add(dtype)
    return {
        "kernels": sorted(shapes_of),
        "shapes": sorted({k[1] for k in keys}),
        "dtypes": sorted({k[2] for k in keys}),
        "impls": sorted(impls),
        "gpu_types": sorted(set(gpu)),
        "shapes_of": {k: sorted(v) for k, v in shapes_of.items()},
        "dtypes_of": {k: sorted(v) for k, v in dtypes_of.items()},
    }


def _micro_values(src: Source, reading: str, chosen: dict[tuple[str, str], tuple[Any, int]]) -> tuple[dict, dict]:
    """The values of the runs ``chosen`` per cell: ((kernel, gpu type, run id, job id) -> (impl, metric) -> value of
    ``reading`` and ``correct``, run id -> commit).  ``reading``: one of TIME_READINGS."""
    if reading not in TIME_READINGS:
        raise ValueError(f"reading must be one of {', '.join(TIME_READINGS)}, got {reading!r}")
    if not chosen:
        return {}, {}
    runs = sorted({r for _, r in chosen.values()})
    with read_session(src) as s:
        rows = s.execute(
            good_attempt_join(
                select(
                    Job.kernel,
                    Device.gpu_type,
                    JobAttempt.run_id,
                    Job.id,
                    Measurement.impl,
                    Measurement.metric,
                    Measurement.value,
                )
            )
            .join(Device, Device.hardware_key == JobAttempt.hardware_key)
            .where(
                Job.kind == MICRO,
                Measurement.metric.in_((reading, "correct")),
                JobAttempt.run_id.in_(runs),
                Job.kernel.in_(sorted({k for k, _ in chosen})),
                JobAttempt.status.in_(GOOD_STATUSES),
            )
        ).all()
        commits = dict(s.execute(select(Run.id, Run.commit).where(Run.id.in_(runs))).all())
    wanted = {(k, g, r) for (k, g), (_, r) in chosen.items()}
    per_job: dict[tuple, dict[tuple[str, str], float | None]] = defaultdict(dict)
    for kernel, gpu, run_id, job_id, mimpl, metric, value in rows:
        if (kernel, gpu, run_id) in wanted:
            per_job[(kernel, gpu, run_id, job_id)][(mimpl, metric)] = value
    return per_job, commits


def _cell_runs(src: Source, reading: str) -> tuple[dict, dict, dict[int, str]]:
    """(the newest run per kernel x GPU type, the newest run that timed a torch.compile mode, run id -> its marks
    for the marked ones): a plain run wherever there is one, else a run marked by its conditions (a cell measured
    only in a fleet rehearsal, say), which the cell then says."""
    if reading not in TIME_READINGS:
        raise ValueError(f"reading must be one of {', '.join(TIME_READINGS)}, got {reading!r}")
    newest = {**newest_micro_runs(src, include_marked=True), **newest_micro_runs(src)}
    with_compile = {
        **newest_micro_runs(src, COMPILE_IMPLS, reading, include_marked=True),
        **newest_micro_runs(src, COMPILE_IMPLS, reading),
    }
    runs = {r for _, r in (*newest.values(), *with_compile.values())}
    with read_session(src) as s:
        marks = {
            rid: describe_conditions(cond, note=False)
            for rid, cond in s.execute(
                select(Run.id, Run.conditions).where(Run.id.in_(sorted(runs)), Run.conditions.is_not(None))
            )
        }
    return newest, with_compile, marks


def newest_micro_cells(src: Source, reading: str = "time_us") -> list[dict[str, Any]]:
    """Every implementation's ``reading`` per kernel x GPU type, from the newest plain run that timed a torch.compile
    mode of that kernel on that GPU type, else the newest plain run that measured it: the fastest implementation is
    never ranked among fewer than were timed.  One row per cell with kernel, gpu_type, reading, run_id, commit,
    measured_at, newest_run_id (the newest run, when it is not run_id: it timed no torch.compile), jobs (the job ids
    of the cell), times (impl -> job id -> value) and correct (impl -> False when it failed correctness in any job
    of the cell, True when it passed in one at least, else None)."""
    newest, with_compile, marks = _cell_runs(src, reading)
    chosen = {cell: with_compile.get(cell, run) for cell, run in newest.items()}
    per_job, commits = _micro_values(src, reading, chosen)
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for (kernel, gpu, _run, job), v in per_job.items():
        at, run_id = chosen[(kernel, gpu)]
        cell = cells.setdefault(
            (kernel, gpu),
            {
                "kernel": kernel,
                "gpu_type": gpu,
                "reading": reading,
                "run_id": run_id,
                "commit": commits.get(run_id),
                "measured_at": at,
                "newest_run_id": newest[(kernel, gpu)][1] if newest[(kernel, gpu)][1] != run_id else None,
                "marked": marks.get(run_id, ""),
                "jobs": [],
                "times": defaultdict(dict),
                "correct": {},
            },
        )
        cell["jobs"].append(job)
        for (impl, metric), value in v.items():
            if metric == reading and value is not None:
                cell["times"][impl][job] = value
            elif metric == "correct" and value is not None:
                cell["correct"][impl] = cell["correct"].get(impl, True) and value >= 0.5
    return [{**c, "times": dict(c["times"])} for _, c in sorted(cells.items())]


def speedup_matrix(src: Source, reading: str = "time_us", impl: str = "triton") -> list[dict[str, Any]]:
    """Speed-up of ``impl`` per kernel x GPU type: against eager from the newest plain run that measured that kernel
    on that GPU type, against the faster torch.compile from the newest plain run that timed a torch.compile mode of
    it (the same run when the newest timed one; runs marked by their conditions are passed over).

    ``reading`` is one of TIME_READINGS.  Per (job = kernel, shape, dtype): speed-up = eager's reading / impl's,
    and against the faster of compile / compile_max that passed correctness; a cell is the geometric mean over
    the run's shapes and dtypes.  A cell where ``impl`` failed correctness in any of them has ``correct`` False
    and no speed-up.  Keys: kernel, gpu_type, run_id, commit, measured_at, n_jobs, speedup_vs_eager,
    speedup_vs_compile, compile_baseline, compile_run_id, compile_commit, compile_measured_at (None when no run
    timed torch.compile), marked (the marks of those runs when a cell had only marked runs), correct,
    min_speedup_vs_eager, max_speedup_vs_eager.
    """
    newest, with_compile, marks = _cell_runs(src, reading)
    if not newest:
        return []
    per_job, commits = _micro_values(src, reading, newest)
    compile_jobs, compile_commits = _micro_values(src, reading, with_compile)
    commits.update(compile_commits)
    cells: dict[tuple[str, str], dict[str, Any]] = {}

    def cell_of(kernel: str, gpu: str) -> dict[str, Any]:
        return cells.setdefault(
            (kernel, gpu), {"eager": [], "compile": [], "correct": True, "n": 0, "baselines": set(), "timed": False}
        )

    for (kernel, gpu, _run, _job), v in per_job.items():
        if (impl, reading) not in v and (impl, "correct") not in v:
            continue  # this job did not run ``impl``
        cell = cell_of(kernel, gpu)
        cell["n"] += 1
        if v.get((impl, "correct")) is not None and v[(impl, "correct")] < 0.5:
            cell["correct"] = False
        cell["eager"].append(safe_ratio(v.get((BASELINE_IMPL, reading)), v.get((impl, reading))))
    for (kernel, gpu, _run, _job), v in compile_jobs.items():
        if (impl, reading) not in v and (impl, "correct") not in v:
            continue
        cell = cell_of(kernel, gpu)
        cell["timed"] = True
        if v.get((impl, "correct")) is not None and v[(impl, "correct")] < 0.5:
            cell["correct"] = False
        compiled = [
            (t, name)
            for name in COMPILE_IMPLS
            if (t := v.get((name, reading))) is not None
            and (v.get((name, "correct")) is None or v[(name, "correct")] >= 0.5)
        ]
        if compiled:
            best, name = min(compiled)
            cell["compile"].append(safe_ratio(best, v.get((impl, reading))))
            cell["baselines"].add(name)
    out = []
    for (kernel, gpu), cell in sorted(cells.items()):
        if (kernel, gpu) not in newest or not cell["n"]:
            continue
        at, run_id = newest[(kernel, gpu)]
        c_at, c_run = with_compile.get((kernel, gpu), (None, None)) if cell["timed"] else (None, None)
        eager = [x for x in cell["eager"] if x]
        comp = [x for x in cell["compile"] if x]
        ok = cell["correct"]
        out.append(
            {
                "kernel": kernel,
                "gpu_type": gpu,
                "impl": impl,
                "reading": reading,
                "run_id": run_id,
                "commit": commits.get(run_id),
                "measured_at": at,
                "n_jobs": cell["n"],
                "correct": ok,
                "speedup_vs_eager": geomean(eager) if ok else None,
                "speedup_vs_compile": geomean(comp) if ok else None,
                "compile_baseline": "/".join(sorted(cell["baselines"])) or None,
                "compile_run_id": c_run,
                "compile_commit": commits.get(c_run) if c_run is not None else None,
                "compile_measured_at": c_at,
                "marked": "; ".join(
                    dict.fromkeys(f"run {r}: {marks[r]}" for r in (run_id, c_run) if r is not None and r in marks)
                ),
                "min_speedup_vs_eager": min(eager) if ok and eager else None,
                "max_speedup_vs_eager": max(eager) if ok and eager else None,
            }
        )
    return out


def newest_micro_results(src: Source, kernel: str, include_marked: bool = False) -> list[dict[str, Any]]:
    """The newest good micro attempt of ``kernel`` per (shape, dtype, hardware key), one row per implementation.
    Runs marked by their conditions (shared GPU, rehearsal, uncommitted changes) are passed over unless
    ``include_marked``.

    Keys: kernel, shape, shape_key, dtype, impl, hardware_key, gpu_type, copy_bandwidth_gbs, time_us,
    kernel_time_us, gbs, kernel_gbs, correct, run_id, commit, marked (the run's conditions in words, "" for a plain
    run), measured_at, job_key.  Two statements: a window over the kernel's attempts, then those attempts'
    measurements.
    """
    rank = (
        func.row_number()
        .over(
            partition_by=(Job.shape_key, Job.dtype, JobAttempt.hardware_key),
            order_by=(attempt_time().desc(), JobAttempt.id.desc()),
        )
        .label("rank")
    )
    ranked = (
        select(JobAttempt.id.label("attempt_id"), rank)
        .select_from(JobAttempt)
        .join(Job, Job.id == JobAttempt.job_id)
        .where(Job.kind == MICRO, Job.kernel == kernel, JobAttempt.status.in_(GOOD_STATUSES))
    )
    if not include_marked:
        ranked = ranked.join(Run, Run.id == JobAttempt.run_id).where(plain_runs())
    ranked = ranked.subquery()
    wanted = ("time_us", "kernel_time_us", "gbs", "kernel_gbs", "correct")
    with read_session(src) as s:
        rows = s.execute(
            good_attempt_join(
                select(
                    Measurement.impl,
                    Measurement.metric,
                    Measurement.value,
                    Job.shape,
                    Job.shape_key,
                    Job.dtype,
                    Job.key,
                    JobAttempt.hardware_key,
                    JobAttempt.run_id,
                    attempt_time(),
                    Device.gpu_type,
                    Device.copy_bandwidth_gbs,
                    Run.commit,
                    Run.conditions,
                )
            )
            .join(ranked, (ranked.c.attempt_id == JobAttempt.id) & (ranked.c.rank == 1))
            .join(Run, Run.id == JobAttempt.run_id)
            .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
            .where(Measurement.metric.in_(wanted))
        ).all()
    out: dict[tuple, dict[str, Any]] = {}
    for impl, metric, value, shape, skey, dtype, key, hw, run_id, at, gpu, bw, commit, cond in rows:
        row = out.setdefault(
            (key, impl),
            {
                "kernel": kernel,
                "shape": list(shape or []),
                "shape_key": skey,
                "dtype": dtype,
                "impl": impl,
                "hardware_key": hw,
                "gpu_type": gpu,
                "copy_bandwidth_gbs": bw,
                "correct": None,
                "run_id": run_id,
                "commit": commit,
                "marked": describe_conditions(cond, note=False),
                "measured_at": at,
                "job_key": key,
                **{m: None for m in wanted if m != "correct"},
            },
        )
        row[metric] = (value >= 0.5 if value is not None else None) if metric == "correct" else value
    return sorted(out.values(), key=lambda r: (r["gpu_type"] or "", r["shape_key"], r["dtype"], r["impl"]))


def device_ceilings(src: Source) -> list[dict[str, Any]]:
    """Each device that has a measured copy bandwidth: hardware_key, gpu_type, name, copy_bandwidth_gbs."""
    with read_session(src) as s:
        rows = s.execute(
            select(Device.hardware_key, Device.gpu_type, Device.name, Device.copy_bandwidth_gbs)
            .where(Device.copy_bandwidth_gbs.is_not(None))
            .order_by(Device.gpu_type)
        ).all()
    return [{"hardware_key": k, "gpu_type": g, "name": n, "copy_bandwidth_gbs": bw} for k, g, n, bw in rows]


def e2e_view(
    src: Source, gpu_type: str | None = None, limit: int = 50, include_marked: bool = False
) -> list[dict[str, Any]]:
    """The newest attempts of e2e jobs (newest first, at most ``limit`` jobs, optionally on one GPU type), one row
    per mode with every metric it recorded, the tolerance and the mode's profile breakdown (device ms per step
    by kernel class, ``gpu_busy_ms``) from the attempt's details.  Attempts of runs marked by their conditions
    (shared GPU, rehearsal, uncommitted changes) are passed over unless ``include_marked``.

    Keys: job_id, job_key, attempt, run_id, commit, marked (the run's conditions in words, "" for a plain run),
    model, family (workers.jobs.e2e.spec.family_of), shape_key, dtype, setting (e2e_setting.setting_label: one series),
    hardware_key, gpu_type, status, error, measured_at, mode, metrics (name -> value), units (name ->
    unit), tolerance, profile_classes (class -> ms per step), gpu_busy_ms, floor_ms, rest_ms, over_floor_ms
    (e2e_anchors.floor_figures), profile_top (rows), ours (our kernels by module, from the profile),
    injected_kernels (the registry kernels the mode's injection used).
    """
    newest = (
        select(JobAttempt.job_id, func.max(JobAttempt.attempt).label("attempt"))
        .join(Job, Job.id == JobAttempt.job_id)
        .where(Job.kind == E2E)
    )
    if not include_marked:
        newest = newest.join(Run, Run.id == JobAttempt.run_id).where(plain_runs())
    if gpu_type is not None:
        newest = newest.join(Device, Device.hardware_key == JobAttempt.hardware_key).where(Device.gpu_type == gpu_type)
    newest = newest.group_by(JobAttempt.job_id).subquery()
    with read_session(src) as s:
        attempts = s.execute(
            select(
                JobAttempt,
                Job.key,
                Job.model,
                Job.shape_key,
                Job.dtype,
                Run.commit,
                Device.gpu_type,
                Job.spec,
                Run.conditions,
            )
            .join(newest, (newest.c.job_id == JobAttempt.job_id) & (newest.c.attempt == JobAttempt.attempt))
            .join(Job, Job.id == JobAttempt.job_id)
            .join(Run, Run.id == JobAttempt.run_id)
            .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
            .order_by(attempt_time().desc(), JobAttempt.id.desc())
            .limit(limit)
        ).all()
        wanted = {(a.job_id, a.attempt) for a, *_ in attempts}
        metrics: dict[tuple[int, int], dict[str, dict[str, tuple[float | None, str]]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for chunk in chunks(sorted({j for j, _ in wanted})):
            for job_id, attempt, mode, metric, value, unit in s.execute(
                select(
                    Measurement.job_id,
                    Measurement.attempt,
                    Measurement.impl,
                    Measurement.metric,
                    Measurement.value,
                    Measurement.unit,
                ).where(Measurement.job_id.in_(chunk))
            ):
                if (job_id, attempt) in wanted:
                    metrics[(job_id, attempt)][mode][metric] = (value, unit)
    rows = []
    for a, key, model, skey, dtype, commit, gpu, spec, cond in attempts:
        marked = describe_conditions(cond, note=False)
        details = a.details or {}
        setting = setting_label(model, skey, dtype, (spec or {}).get("params") or {})
        injection = details.get("injection") or {}
        profile = details.get("profile") or {}
        per_mode = metrics.get((a.job_id, a.attempt), {})
        planned = [m for m in MODES if m in per_mode] + sorted(set(per_mode) - set(MODES))
        tolerance = (details.get("tolerance") or {}).get("rel_err_vs_eager")
        for mode in planned or [None]:
            got = per_mode.get(mode, {}) if mode else {}
            prof = profile.get(mode) or {} if mode else {}
            classes = {c: v.get("ms") for c, v in (prof.get("classes") or {}).items()}
            ms_per_step = got.get("ms_per_step", (None, None))[0]
            rows.append(
                {
                    "job_id": a.job_id,
                    "job_key": key,
                    "attempt": a.attempt,
                    "run_id": a.run_id,
                    "commit": commit,
                    "marked": marked,
                    "model": model,
                    "family": family_of(model or "?"),
                    "shape_key": skey,
                    "dtype": dtype,
                    "setting": setting,
                    "hardware_key": a.hardware_key,
                    "gpu_type": gpu,
                    "status": a.status,
                    "error": a.error,
                    "measured_at": a.started_at or a.recorded_at,
                    "mode": mode,
                    "metrics": {k: v for k, (v, _) in got.items()},
                    "units": {k: u for k, (_, u) in got.items()},
                    "tolerance": tolerance,
                    "profile_classes": classes,
                    "gpu_busy_ms": prof.get("gpu_busy_ms"),
                    **floor_figures(ms_per_step, classes),
                    "profile_top": list(prof.get("top") or []),
                    "ours": list(prof.get("ours") or []),
                    "injected_kernels": list((injection.get(mode) or {}).get("kernels") or []) if mode else [],
                }
            )
    return rows


def profile_jobs(src: Source, limit: int = 100, include_marked: bool = False) -> list[dict[str, Any]]:
    """The newest attempts of profile jobs, and of e2e jobs that recorded a profile or artifacts, newest first.
    Attempts of runs marked by their conditions (shared GPU, rehearsal, uncommitted changes) are passed over unless
    ``include_marked``.

    Keys: job_id, job_key, attempt, kind, name (kernel or model), shape_key, dtype, gpu_type, run_id, marked (the
    run's conditions in words, "" for a plain run), measured_at, status, n_artifacts.
    """
    n_art = (
        select(Artifact.job_id, Artifact.attempt, func.count().label("n"))
        .group_by(Artifact.job_id, Artifact.attempt)
        .subquery()
    )
    newest = (
        select(JobAttempt.job_id, func.max(JobAttempt.attempt).label("attempt"))
        .join(Job, Job.id == JobAttempt.job_id)
        .where(Job.kind.in_((PROFILE, E2E)))
        .group_by(JobAttempt.job_id)
    )
    if not include_marked:
        newest = newest.join(Run, Run.id == JobAttempt.run_id).where(plain_runs())
    newest = newest.subquery()
    with read_session(src) as s:
        rows = s.execute(
            select(
                JobAttempt,
                Job.key,
                Job.kind,
                Job.kernel,
                Job.model,
                Job.shape_key,
                Job.dtype,
                Device.gpu_type,
                n_art.c.n,
                Run.conditions,
            )
            .join(newest, (newest.c.job_id == JobAttempt.job_id) & (newest.c.attempt == JobAttempt.attempt))
            .join(Job, Job.id == JobAttempt.job_id)
            .join(Run, Run.id == JobAttempt.run_id)
            .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
            .outerjoin(n_art, (n_art.c.job_id == JobAttempt.job_id) & (n_art.c.attempt == JobAttempt.attempt))
            .order_by(attempt_time().desc(), JobAttempt.id.desc())
            .limit(limit)
        ).all()
    out = []
    for a, key, kind, kernel, model, skey, dtype, gpu, n, cond in rows:
        details = a.details or {}
        if kind == E2E and not details.get("profile") and not n:
            continue
        out.append(
            {
                "job_id": a.job_id,
                "job_key": key,
                "attempt": a.attempt,
                "kind": kind,
                "name": kernel if kind == PROFILE else model,
                "shape_key": skey,
                "dtype": dtype,
                "gpu_type": gpu,
                "run_id": a.run_id,
                "marked": describe_conditions(cond, note=False),
                "measured_at": a.started_at or a.recorded_at,
                "status": a.status,
                "n_artifacts": int(n or 0),
                "modes": sorted(details.get("profile") or {}) if kind == E2E else [],
            }
        )
    return out


def e2e_profile(src: Source, job_id: int, attempt: int | None = None) -> dict[str, Any]:
    """mode -> the e2e attempt's profile breakdown (``details["profile"]``), newest attempt by default."""
    with read_session(src) as s:
        found = job_attempt(s, job_id, attempt)
    return dict(((found[1].details or {}).get("profile") or {}) if found else {})
