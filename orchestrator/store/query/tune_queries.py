"""Reads of tune runs (workers/jobs/tune.py): which runs tuned what, and each job's candidates with their timings.

A tune job stores each candidate launch configuration as an implementation ``triton[knob=value,...]`` with the micro
harness's metrics, and ``details["tune"]`` (the current table's choice, the candidates' knobs, those dropped and
why, the width bucket).  ``tune table`` (orchestrator/reports/tune_table.py) and the dashboard's Tune page read them
here.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from orchestrator.store.conditions import describe as describe_conditions
from orchestrator.store.models import Device, Job, JobAttempt, Measurement, Run, RunJob
from orchestrator.store.query.access import Source, read_session
from workers.kinds.tune import NAME as TUNE_KIND
from workers.spec import GOOD_STATUSES

TIMINGS = ("time_us", "graph_time_us", "kernel_time_us")  # the timings a tune table may judge by
TUNE_METRICS = ("time_us", "iqr_us", "graph_time_us", "kernel_time_us", "correct", "speedup", "gbs")


def tune_runs(src: Source, gpu_type: str | None = None) -> list[dict[str, Any]]:
    """Runs holding tune results, newest first: id, sweep, commit, started_at, plan_key, marked (the run's
    conditions in words, "" for a plain run: orchestrator/store/conditions.py), gpu_types and devices (of their good
    attempts), jobs, kernels; ``gpu_type``: only runs measured on that GPU type."""
    query = (
        select(
            Run.id,
            Run.sweep,
            Run.commit,
            Run.started_at,
            Run.plan_key,
            Run.conditions,
            Device.gpu_type,
            Device.name,
            Job.kernel,
        )
        .join(JobAttempt, JobAttempt.run_id == Run.id)
        .join(Job, Job.id == JobAttempt.job_id)
        .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
        .where(Job.kind == TUNE_KIND, JobAttempt.status.in_(GOOD_STATUSES))
    )
    runs: dict[int, dict[str, Any]] = {}
    with read_session(src) as s:
        for rid, sweep, commit, started, plan_key, cond, gtype, dname, kernel in s.execute(query):
            r = runs.setdefault(
                rid,
                {
                    "id": rid,
                    "sweep": sweep,
                    "commit": commit,
                    "started_at": started,
                    "plan_key": plan_key,
                    "marked": describe_conditions(cond, note=False),
                    "gpu_types": set(),
                    "devices": set(),
                    "kernels": set(),
                    "jobs": 0,
                },
            )
            r["gpu_types"].add(gtype or "")
            r["devices"].add(dname or "")
            r["kernels"].add(kernel)
            r["jobs"] += 1
    out = []
    for r in sorted(runs.values(), key=lambda r: r["id"], reverse=True):
        if gpu_type is not None and gpu_type not in r["gpu_types"]:
            continue
        out.append({**r, **{k: sorted(r[k]) for k in ("gpu_types", "devices", "kernels")}})
    return out


def is_tune_run(src: Source, run_id: int) -> bool:
    with read_session(src) as s:
        n = s.scalar(
            select(func.count())
            .select_from(RunJob)
            .join(Job, Job.id == RunJob.job_id)
            .where(RunJob.run_id == run_id, Job.kind == TUNE_KIND)
        )
    return bool(n)


def tune_results(
    src: Source, run_id: int, kernel: str | None = None, gpu_type: str | None = None
) -> list[dict[str, Any]]:
    """One row per tune job of the run (its attempt in that run; the last good one): kernel, shape, dtype, status,
    bucket, current, knobs, arch, dropped, errors, device (name, gpu_type, arch, hardware_key), measured_at, commit
    and ``candidates``: impl -> {knobs, time_us, iqr_us, samples, graph_time_us, kernel_time_us, correct,
    speedup, gbs}.  Ordered by kernel, dtype, shape."""
    query = (
        select(Job, JobAttempt, Device, Run.commit)
        .join(JobAttempt, JobAttempt.job_id == Job.id)
        .join(Run, Run.id == JobAttempt.run_id)
        .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
        .where(Job.kind == TUNE_KIND, JobAttempt.run_id == run_id, JobAttempt.status.in_(GOOD_STATUSES))
        .order_by(Job.kernel, Job.dtype, Job.shape_key, JobAttempt.attempt)
    )
    if kernel is not None:
        query = query.where(Job.kernel == kernel)
    if gpu_type is not None:
        query = query.where(Device.gpu_type == gpu_type)
    rows: dict[int, dict[str, Any]] = {}
    with read_session(src) as s:
        attempts = {}
        for job, attempt, device, commit in s.execute(query):
            attempts[job.id] = (job, attempt, device, commit)  # the last good attempt of the run
        if not attempts:
            return []
        keys = [(job.id, attempt.attempt) for job, attempt, _, _ in attempts.values()]
        values: dict[tuple[int, int], dict[str, dict[str, Any]]] = {}
        mq = select(Measurement).where(
            Measurement.job_id.in_([k[0] for k in keys]), Measurement.metric.in_(TUNE_METRICS)
        )
        wanted = set(keys)
        for m in s.scalars(mq):
            if (m.job_id, m.attempt) not in wanted:
                continue
            impl = values.setdefault((m.job_id, m.attempt), {}).setdefault(m.impl, {})
            impl[m.metric] = m.value
            if m.metric in TIMINGS:
                repeats = list(m.samples) if m.samples else ([m.value] if m.value is not None else [])
                impl[f"{m.metric}_samples"] = repeats
                if m.metric == "time_us":
                    impl["samples"] = repeats
        for job, attempt, device, commit in attempts.values():
            details = attempt.details or {}
            tune = details.get("tune") or {}
            knobs_of = tune.get("candidates") or {}
            candidates = {}
            for impl, figures in sorted(values.get((job.id, attempt.attempt), {}).items()):
                candidates[impl] = {"knobs": knobs_of.get(impl, {}), **figures}
            rows[job.id] = {
                "job_id": job.id,
                "kernel": job.kernel,
                "shape": list(job.shape or []),
                "shape_key": job.shape_key,
                "dtype": job.dtype,
                "status": attempt.status,
                "bucket": tune.get("bucket", ""),
                "current": tune.get("current"),
                "knobs": list(tune.get("knobs") or []),
                "arch": tune.get("arch") or (device.arch if device else ""),
                "dropped": dict(tune.get("dropped") or {}),
                "errors": dict(details.get("errors") or {}),
                "device": {
                    "name": device.name if device else "",
                    "gpu_type": device.gpu_type if device else "",
                    "arch": device.arch if device else "",
                    "hardware_key": attempt.hardware_key,
                },
                "measured_at": attempt.started_at or attempt.recorded_at,
                "commit": commit,
                "candidates": candidates,
            }
    return sorted(rows.values(), key=lambda r: (r["kernel"], r["dtype"], [int(x) for x in r["shape"]]))


def fastest(row: dict[str, Any], metric: str = "time_us") -> str | None:
    """The fastest correct candidate of one :func:`tune_results` row by ``metric`` (the current choice on a tie);
    None when no candidate has a correct timing."""
    timed = {
        impl: c[metric]
        for impl, c in row["candidates"].items()
        if c.get(metric) is not None and c.get("correct", 1.0) == 1.0
    }
    return min(timed, key=lambda i: (timed[i], i != row["current"])) if timed else None
