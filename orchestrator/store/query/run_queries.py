"""Runs: the list of runs, one run's summary table (the CLI's end-of-run summary and ``runs``), its outcomes and
failed attempts, where it measured; the devices and nodes the store knows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from orchestrator.store import conditions
from orchestrator.store.models import (
    Device,
    Job,
    JobAttempt,
    Measurement,
    Node,
    Run,
    RunJob,
)
from orchestrator.store.query.access import Source, chunks, read_session
from orchestrator.store.query.picked import (
    bandwidths_of,
    correctness_lookup,
    fill_micro,
    gpu_types_of,
    pick_for_run,
    run_jobs,
    run_or_raise,
)
from workers import kinds
from workers.device import rehearsal
from workers.kinds.correctness import NAME as CORRECTNESS
from workers.kinds.micro import NAME as MICRO
from workers.spec import GOOD_STATUSES, STATUS_INCORRECT, STATUS_OK, STATUS_SKIPPED

TRITON_IMPLS = ("triton", "liger")  # implementations that run Triton (its interpreter on a CPU)


def interpreted(r: dict) -> bool:
    """A Triton implementation timed on a CPU: Triton's interpreter ran it."""
    return r.get("gpu_type") == "cpu" and r.get("impl") in TRITON_IMPLS


def _run_dict(run: Run, n_jobs: int | None = None) -> dict[str, Any]:
    return {
        "id": run.id,
        "sweep": run.sweep,
        "plan_key": run.plan_key,
        "commit": run.commit,
        "code_hash": run.code_hash,
        "user": run.user,
        "host": run.host,
        "source": run.source,
        "source_digest": run.source_digest,
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "counts": run.counts,
        "n_jobs": n_jobs,
        "conditions": run.conditions,  # what it was made under (orchestrator/store/conditions.py); None: plain
        "marked": conditions.describe(run.conditions, note=False),
        "marked_note": conditions.describe(run.conditions),
    }


def list_runs(src: Source, limit: int = 50) -> list[dict[str, Any]]:
    """The newest runs first, with how many jobs each comprised."""
    n_jobs = select(RunJob.run_id, func.count().label("n")).group_by(RunJob.run_id).subquery()
    with read_session(src) as s:
        rows = s.execute(
            select(Run, n_jobs.c.n)
            .outerjoin(n_jobs, n_jobs.c.run_id == Run.id)
            .order_by(Run.started_at.desc(), Run.id.desc())
            .limit(limit)
        ).all()
        return [_run_dict(run, n or 0) for run, n in rows]


def run_info(src: Source, run_id: int) -> dict[str, Any] | None:
    """One run with its composed config and live job counts; None if there is no such run.

    ``job_counts`` counts each job of the run by the status of its newest attempt in this run; jobs the run
    did not execute count as ``done_before`` (an earlier run has a good result) or ``pending``.
    """
    with read_session(src) as s:
        run = s.get(Run, run_id)
        if run is None:
            return None
        jobs = run_jobs(s, run_id)
        counts: dict[str, int] = defaultdict(int)
        for p in pick_for_run(s, run_id, jobs):
            if p.attempt is not None and p.attempt.run_id == run_id:
                counts[p.attempt.status] += 1
            elif p.job.status in GOOD_STATUSES:
                counts["done_before"] += 1
            else:
                counts["pending"] += 1
        info = _run_dict(run, len(jobs))
        info["config"] = run.config
        info["job_counts"] = dict(sorted(counts.items()))
        return info


def run_summary(src: Source, run_id: int) -> list[dict[str, Any]]:
    """One row per (job, implementation) for the micro and correctness jobs of a run.

    Keys: run_id, job_id, job_key, attempt, kind, kernel, shape, dtype, target, impl, hardware_key, gpu_type,
    node_id, median_us, iqr_us, graph_time_us, kernel_time_us, gbs, kernel_gbs, copy_bandwidth_gbs, pct_of_ceiling,
    kernel_pct_of_ceiling, speedup_vs_eager, speedup_vs_compile, compile_baseline ("compile" or "compile_max": the
    faster of the two that did not fail correctness), correct (True/False/None: not checked), rel_err, max_abs,
    status (this implementation's: "incorrect" where it failed correctness, "ok" for one that passed in a job
    another implementation failed; else the job's), job_status, error (the job's stored error: which check failed,
    by how much).
    Speed-ups are ratios of medians measured side by side in the same job; an implementation that failed
    correctness never gets one.  pct_of_ceiling = gbs / the device's measured copy bandwidth × 100;
    kernel_pct_of_ceiling the same for kernel_gbs.
    """
    with read_session(src) as s:
        run_or_raise(s, run_id)
        jobs = run_jobs(
            s,
            run_id,
            Job.kind.in_((CORRECTNESS, MICRO)),
            order_by=(Job.kernel, Job.shape_key, Job.dtype, Job.kind, Job.id),
        )
        picked = pick_for_run(s, run_id, jobs)
        hw = {p.hardware_key for p in picked}
        bandwidth, gpu_type = bandwidths_of(s, hw), gpu_types_of(s, hw)
    correct_of = correctness_lookup(picked)
    rows = []
    for p in picked:
        bw = bandwidth.get(p.hardware_key) if p.hardware_key else None
        for impl in p.impls():
            row = {
                "run_id": run_id,
                "job_id": p.job.id,
                "job_key": p.job.key,
                "attempt": p.attempt.attempt if p.attempt else None,
                "kind": p.job.kind,
                "kernel": p.job.kernel,
                "shape": list(p.job.shape or []),
                "dtype": p.job.dtype,
                "target": p.job.target,
                "impl": impl,
                "hardware_key": p.hardware_key,
                "gpu_type": gpu_type.get(p.hardware_key or ""),
                "node_id": p.attempt.node_id if p.attempt else None,
                "median_us": None,
                "iqr_us": None,
                "graph_time_us": None,
                "kernel_time_us": None,
                "gbs": None,
                "kernel_gbs": None,
                "copy_bandwidth_gbs": bw,
                "pct_of_ceiling": None,
                "kernel_pct_of_ceiling": None,
                "speedup_vs_eager": None,
                "speedup_vs_compile": None,
                "compile_baseline": None,
                "correct": correct_of(p, impl) if p.job.kind == MICRO else p.correct(impl),
                "rel_err": p.value(impl, "rel_err"),
                "max_abs": p.value(impl, "max_abs"),
                "status": p.status,
                "job_status": p.status,
                "error": p.error,
            }
            row["status"] = impl_status(p.status, row["correct"])
            if p.job.kind == MICRO:
                fill_micro(row, p, impl, bw, correct_of)
            rows.append(row)
    return rows


def impl_status(job_status: str, correct: bool | None) -> str:
    """One implementation's status in a job of ``job_status``: incorrect when it failed correctness (its own check or
    the correctness job's), ok when it passed in a job that another implementation made incorrect."""
    if correct is False and job_status in (STATUS_OK, STATUS_INCORRECT):
        return STATUS_INCORRECT
    if job_status == STATUS_INCORRECT and correct is True:
        return STATUS_OK
    return job_status


def devices(src: Source) -> list[dict[str, Any]]:
    with read_session(src) as s:
        rows = s.scalars(select(Device).order_by(Device.gpu_type, Device.hardware_key)).all()
        return [
            {
                "hardware_key": d.hardware_key,
                "vendor": d.vendor,
                "name": d.name,
                "arch": d.arch,
                "gpu_type": d.gpu_type,
                "warp_size": d.warp_size,
                "compute_units": d.compute_units,
                "memory_bytes": d.memory_bytes,
                "driver": d.driver,
                "runtime": d.runtime,
                "torch": d.torch,
                "triton": d.triton,
                "copy_bandwidth_gbs": d.copy_bandwidth_gbs,
                "copy_bandwidth_measured_at": d.copy_bandwidth_measured_at,
                "first_seen": d.first_seen,
                "last_seen": d.last_seen,
                "info": d.info,
            }
            for d in rows
        ]


def nodes(src: Source) -> list[dict[str, Any]]:
    """The last fleet snapshot of every node ever seen (alive first).  ``gpu_type`` is the node's GPU-type label, a
    rehearsal node's marked as such ("rehearsal (rehearsal; really h200)": workers/device/rehearsal.py);
    ``rehearsal_of`` its real type (None for a real node)."""
    with read_session(src) as s:
        rows = s.scalars(select(Node).order_by(Node.alive.desc(), Node.node_id)).all()
        return [
            {
                "node_id": n.node_id,
                "address": n.address,
                "labels": n.labels,
                "resources": n.resources,
                "alive": n.alive,
                "gpu_type": rehearsal.describe(n.labels) if rehearsal.GPU_LABEL in (n.labels or {}) else None,
                "rehearsal_of": rehearsal.rehearsal_of(n.labels),
                "first_seen": n.first_seen,
                "last_seen": n.last_seen,
            }
            for n in rows
        ]


def rehearsal_gpu_types(src: Source) -> dict[str, str]:
    """GPU types that are rehearsal tags (`node join --label gpu=...`), each with the GPU type it really was."""
    with read_session(src) as s:
        out = {}
        for gpu_type, info in s.execute(select(Device.gpu_type, Device.info)).all():
            real = ((info or {}).get("extra") or {}).get(rehearsal.EXTRA_KEY)
            if real:
                out[gpu_type] = real
        return out


def store_counts(src: Source) -> dict[str, int]:
    """How much the store holds: runs, jobs, attempts, measurements, devices, nodes."""
    with read_session(src) as s:
        return {
            name: int(s.scalar(select(func.count()).select_from(model)) or 0)
            for name, model in (
                ("runs", Run),
                ("jobs", Job),
                ("attempts", JobAttempt),
                ("measurements", Measurement),
                ("devices", Device),
                ("nodes", Node),
            )
        }


def run_outcomes(src: Source, limit: int = 100) -> list[dict[str, Any]]:
    """The newest runs with how many attempts each recorded per outcome (ok, incorrect, error, crashed,
    timed_out, lost, skipped, ...): list_runs' keys plus ``outcomes`` (status -> count) and ``device`` (the names
    of the devices its attempts ran on, as `python -m orchestrator runs` lists them; None when it recorded none)."""
    runs = list_runs(src, limit)
    if not runs:
        return runs
    with read_session(src) as s:
        counts = s.execute(
            select(JobAttempt.run_id, JobAttempt.status, func.count())
            .where(JobAttempt.run_id.in_([r["id"] for r in runs]))
            .group_by(JobAttempt.run_id, JobAttempt.status)
        ).all()
        devices = s.execute(
            select(JobAttempt.run_id, Device.name)
            .join(Device, Device.hardware_key == JobAttempt.hardware_key)
            .where(JobAttempt.run_id.in_([r["id"] for r in runs]))
            .distinct()
        ).all()
    by_run: dict[int, dict[str, int]] = defaultdict(dict)
    for run_id, status, n in counts:
        by_run[run_id][status] = int(n)
    names: dict[int, set[str]] = defaultdict(set)
    for run_id, name in devices:
        names[run_id].add(name)
    for r in runs:
        r["outcomes"] = by_run.get(r["id"], {})
        r["device"] = ", ".join(sorted(names.get(r["id"], ()))) or None
    return runs


def failed_attempts(src: Source, run_id: int | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """Attempts that did not end well (neither ok nor skipped: an incorrect one too, whose error names the failing
    check), newest first, with their error.

    Keys: run_id, job_id, job_key, attempt, kind, name, shape_key, dtype, status, error, node_id, gpu_type,
    measured_at.
    """
    query = (
        select(JobAttempt, Job.key, Job.kind, Job.kernel, Job.model, Job.shape_key, Job.dtype, Device.gpu_type)
        .join(Job, Job.id == JobAttempt.job_id)
        .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
        .where(JobAttempt.status.not_in((STATUS_OK, STATUS_SKIPPED)))
    )
    if run_id is not None:
        query = query.where(JobAttempt.run_id == run_id)
    with read_session(src) as s:
        rows = s.execute(query.order_by(JobAttempt.recorded_at.desc(), JobAttempt.id.desc()).limit(limit)).all()
    return [
        {
            "run_id": a.run_id,
            "job_id": a.job_id,
            "job_key": key,
            "attempt": a.attempt,
            "kind": kind,
            "name": model if kinds.runs_model(kind) else kernel,
            "shape_key": skey,
            "dtype": dtype,
            "status": a.status,
            "error": a.error,
            "node_id": a.node_id,
            "gpu_type": gpu,
            "measured_at": a.started_at or a.recorded_at,
        }
        for a, key, kind, kernel, model, skey, dtype, gpu in rows
    ]


def run_devices(src: Source, run_ids: Sequence[int]) -> dict[int, list[str]]:
    """The names of the devices each run's shown results were measured on (sorted; run_measured's ``devices``) for
    many runs at once, in two queries per 500 runs whatever the runs hold: the devices of the attempts each run
    recorded (its newest per job) and of the newest attempts of the jobs it reused (done by earlier runs)."""
    out: dict[int, set[str]] = {run_id: set() for run_id in run_ids}
    own = aliased(JobAttempt)
    with read_session(src) as s:
        for chunk in chunks(list(out)):
            newest = (
                select(JobAttempt.run_id, JobAttempt.job_id, func.max(JobAttempt.attempt).label("attempt"))
                .where(JobAttempt.run_id.in_(chunk))
                .group_by(JobAttempt.run_id, JobAttempt.job_id)
                .subquery()
            )
            recorded = (
                select(newest.c.run_id, Device.name)
                .join(RunJob, (RunJob.run_id == newest.c.run_id) & (RunJob.job_id == newest.c.job_id))
                .join(JobAttempt, (JobAttempt.job_id == newest.c.job_id) & (JobAttempt.attempt == newest.c.attempt))
                .join(Device, Device.hardware_key == JobAttempt.hardware_key)
                .distinct()
            )
            reused = (
                select(RunJob.run_id, Device.name)
                .join(Job, Job.id == RunJob.job_id)
                .join(JobAttempt, (JobAttempt.job_id == Job.id) & (JobAttempt.attempt == Job.attempts))
                .join(Device, Device.hardware_key == JobAttempt.hardware_key)
                .where(
                    RunJob.run_id.in_(chunk),
                    ~select(own.id).where(own.run_id == RunJob.run_id, own.job_id == RunJob.job_id).exists(),
                )
                .distinct()
            )
            for query in (recorded, reused):
                for run_id, name in s.execute(query):
                    out[run_id].add(name)
    return {run_id: sorted(names) for run_id, names in out.items()}


def run_measured(src: Source, run_id: int) -> dict[str, Any]:
    """When, where and what a run's shown results measured: ``devices`` (names, sorted), ``measured_from`` and
    ``measured_to`` (the earliest and latest start of the attempts shown, which predate the run for jobs done
    earlier; None when it shows none) and ``unavailable`` ({job id: {impl: why it was not run}}, from the
    attempts' details)."""
    with read_session(src) as s:
        run_or_raise(s, run_id)
        jobs = run_jobs(s, run_id)
        picked = [p for p in pick_for_run(s, run_id, jobs) if p.attempt is not None]
        keys = {p.attempt.hardware_key for p in picked if p.attempt.hardware_key}
        names = sorted({d.name for d in s.scalars(select(Device).where(Device.hardware_key.in_(keys)))}) if keys else []
    starts = [p.attempt.started_at or p.attempt.recorded_at for p in picked]
    unavailable = {p.job.id: dict((p.attempt.details or {}).get("unavailable") or {}) for p in picked}
    return {
        "devices": names,
        "measured_from": min(starts) if starts else None,
        "measured_to": max(starts) if starts else None,
        "unavailable": {k: v for k, v in unavailable.items() if v},
    }
