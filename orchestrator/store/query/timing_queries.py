"""Micro-benchmark timings with their repeats, for the exports other tools read
(orchestrator/interchange/tool_formats.py: Liger-Kernel's benchmark CSV, TritonBench's CSV and JSON).

One row per (micro job attempt, implementation): the attempt each job's newest good result, optionally only the
attempts a run recorded or measured since a time; its ``time_us`` median, repeats and the device's name."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from sqlalchemy import select

from orchestrator.stats.series_verdicts import is_cpu_device
from orchestrator.store.models import Device, Job, JobAttempt, Measurement, Run
from orchestrator.store.query.access import Source, read_session
from workers.kinds.micro import NAME as MICRO
from workers.spec import GOOD_STATUSES


def iter_timings(
    src: Source, run_id: int | None = None, since: dt.datetime | None = None, metric: str = "time_us"
) -> Iterator[dict[str, Any]]:
    """kernel, shape (list), dtype, impl, gpu_name, gpu_type, hardware_key, device ("gpu"/"cpu"), commit, run_id,
    measured_at, value, samples — ordered by kernel, dtype, device, shape, impl."""
    query = (
        select(
            Job.kernel,
            Job.shape,
            Job.shape_key,
            Job.dtype,
            Measurement.impl,
            Device.name,
            Device.gpu_type,
            JobAttempt.hardware_key,
            Run.commit,
            JobAttempt.run_id,
            JobAttempt.started_at,
            JobAttempt.recorded_at,
            Measurement.value,
            Measurement.samples,
        )
        .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
        .join(Job, Job.id == Measurement.job_id)
        .join(Run, Run.id == JobAttempt.run_id)
        .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
        .where(Job.kind == MICRO, Measurement.metric == metric, JobAttempt.status.in_(GOOD_STATUSES))
        .order_by(Job.kernel, Job.dtype, JobAttempt.hardware_key, Job.shape_key, Measurement.impl, JobAttempt.id)
    )
    if run_id is not None:
        query = query.where(JobAttempt.run_id == run_id)
    if since is not None:
        query = query.where(JobAttempt.started_at >= since)
    with read_session(src) as s:
        for (
            kernel,
            shape,
            _skey,
            dtype,
            impl,
            name,
            gpu_type,
            hw,
            commit,
            rid,
            started,
            recorded,
            v,
            samples,
        ) in s.execute(query):
            if v is None:
                continue
            yield {
                "kernel": kernel,
                "shape": list(shape or []),
                "dtype": dtype,
                "impl": impl,
                "gpu_name": name or hw or "",
                "gpu_type": gpu_type or "",
                "hardware_key": hw,
                "device": "cpu" if is_cpu_device(hw) else "gpu",
                "commit": commit,
                "run_id": rid,
                "measured_at": started or recorded,
                "value": v,
                "samples": list(samples) if samples else [v],
            }
