"""Micro series: the points of each (kernel, shape, dtype, implementation, device) with their stored repeats, as
the regression rule and the Trends page read them.  A micro job's details hold, per compiled implementation,
``details["autotune"][impl]``: the kernels Inductor generated, the configs its autotuner picked and ``pick``
(compared between runs: autotune_pick())."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Text, cast, null, select
from sqlalchemy.orm import Session

from orchestrator.stats.regression_rule import (
    finite,
)
from orchestrator.store.conditions import describe as describe_conditions
from orchestrator.store.conditions import plain_runs
from orchestrator.store.models import (
    Device,
    Job,
    JobAttempt,
    Measurement,
    Run,
)
from orchestrator.store.query.access import Source, read_session
from orchestrator.store.query.picked import (
    BASELINE_IMPL,
    TIMED_KINDS,
    attempt_time,
    good_attempt_join,
    name_filter,
    narrowed,
    own_verdict,
)
from workers import kinds
from workers import metrics as catalogue
from workers.kinds.micro import NAME as MICRO
from workers.spec import GOOD_STATUSES


def repeats_text(column=Measurement.samples):
    """A measurement's stored repeats as their JSON text, for ``repeats`` to decode: the driver's json.loads would
    take most of a Trends or Compare view (thousands of repeats a reading, decimal text)."""
    return cast(column, Text)


def repeats(text: str | None) -> list | None:
    """The repeats ``repeats_text`` read: orjson's parse, the same floats as json.loads to the bit and about 7 times
    faster; what orjson refuses (NaN, Infinity written by an older writer) goes through json."""
    if text is None:
        return None
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        import json

        return json.loads(text)


def job_kinds(metric: str, with_tune: bool = True) -> tuple[str, ...]:
    """The job kinds ``metric``'s series are read from: a micro reading's series are the micro jobs' implementations
    and, ``with_tune``, the tune jobs' launch candidates (named apart, ``triton[num_warps=8,...]``: series of their
    own, which trends and regressions read as any other); another reading's, its own kind."""
    kind = catalogue.get(metric).kind
    return TIMED_KINDS if kind == MICRO and with_tune else (kind,)


def series_by_key(
    s: Session,
    metric: str,
    name: str | None,
    hardware_key: str | None,
    names: set[str | None] | None = None,
    *,
    shape: Sequence[int] | str | None = None,
    dtype: str | None = None,
    impl: str | None = None,
    decode_newest: int | None = None,
    with_tune: bool = True,
    job_keys: Sequence[str] | None = None,
    include_marked: bool = False,
    keep_runs: Sequence[int] = (),
) -> dict[tuple, list[dict[str, Any]]]:
    """Every good point of ``metric`` by series (name, shape_key, dtype, impl, hardware_key), oldest first.
    ``decode_newest``: decode the repeats (and the autotune pick) of each series' newest that many points only; the
    older points' ``samples`` and ``pick`` are None (a reader that judges only its newest points reads no more).
    ``with_tune``: a micro reading's tune candidates too (:func:`job_kinds`).  ``job_keys``: only the points of jobs
    with these keys.  Runs marked by their conditions (dirty checkout, shared GPU, rehearsal:
    orchestrator/store/conditions.py) are left out unless ``include_marked`` or named in ``keep_runs``."""
    kind = catalogue.get(metric).kind
    name_col = Job.model if kinds.runs_model(kind) else Job.kernel
    query = (
        select(
            Measurement.impl,
            Measurement.value,
            repeats_text(),
            JobAttempt.run_id,
            JobAttempt.attempt,
            JobAttempt.hardware_key,
            JobAttempt.started_at,
            JobAttempt.recorded_at,
            name_col,
            Job.shape,
            Job.shape_key,
            Job.dtype,
            Job.key,
            Run.commit,
            repeats_text(JobAttempt.details),  # read for the autotune pick only: decoded as the repeats are
        )
        .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
        .join(Job, Job.id == Measurement.job_id)
        .join(Run, Run.id == JobAttempt.run_id)
        .where(
            Job.kind.in_(job_kinds(metric, with_tune)),
            Measurement.metric == metric,
            JobAttempt.status.in_(GOOD_STATUSES),
            *name_filter(kind, name),
        )
        .order_by(attempt_time(), JobAttempt.id)
    )
    if hardware_key is not None:
        query = query.where(JobAttempt.hardware_key == hardware_key)
    if not include_marked:
        query = query.where(plain_runs() | Run.id.in_(list(keep_runs)))
    if names is not None:
        query = query.where(name_col.in_(sorted(n for n in names if n is not None)))
    query = narrowed(query, shape, dtype, impl)
    if job_keys is not None:
        query = query.where(Job.key.in_(sorted(set(job_keys))))
    rows_of: dict[tuple, list[Any]] = defaultdict(list)
    for row in s.execute(query).all():
        impl, hw, nm, skey, dtype = row[0], row[5], row[8], row[10], row[11]
        rows_of[(nm, skey, dtype, impl, hw)].append(row)
    series: dict[tuple, list[dict[str, Any]]] = {}
    for series_key, rows in rows_of.items():
        first_decoded = 0 if decode_newest is None else max(0, len(rows) - decode_newest)
        points = series[series_key] = []
        for i, row in enumerate(rows):
            impl, value, samples, run_id, attempt, _, started, recorded, _, shape, _, _, key, commit, details = row
            decoded = i >= first_decoded
            if decoded:
                samples = finite(repeats(samples) or ([value] if value is not None else []))
            points.append(
                {
                    "value": value,
                    # a float array once: the rule reads each point's repeats many times
                    "samples": samples if decoded else None,
                    "run_id": run_id,
                    "attempt": attempt,
                    "measured_at": started or recorded,
                    "shape": list(shape or []),
                    "job_key": key,
                    "commit": commit,
                    "pick": autotune_pick(repeats(details), impl) if decoded else None,
                }
            )
    return series


def autotune_pick(details: Mapping[str, Any] | None, impl: str) -> str | None:
    """The signature of the kernel(s) an implementation's autotuner picked in one job (workers/jobs/micro.py stores
    ``details["autotune"][impl]["pick"]``); None when it was not autotuned or not recorded."""
    entry = ((details or {}).get("autotune") or {}).get(impl) or {}
    return entry.get("pick") or None


def trend_points(
    src: Source,
    kernel: str,
    *,
    shape: Sequence[int] | str | None = None,
    dtype: str | None = None,
    impl: str | None = None,
    gpu_type: str | None = None,
    metric: str = "time_us",
    limit: int = 2000,
    with_samples: bool = True,
    include_marked: bool = False,
) -> list[dict[str, Any]]:
    """Every good micro measurement of ``metric`` for one kernel (optionally one shape, dtype, impl, GPU type),
    oldest first, with eager's reading of the same job beside it and the implementation's own correctness.

    Keys per point: kernel, shape_key, dtype, impl, hardware_key, gpu_type, value, unit, samples, eager_value,
    correct, run_id, commit, measured_at, job_key, attempt, marked (the run's conditions in words, "" for a plain
    run).  One statement; ``limit`` bounds the newest points.
    ``with_samples=False``: samples None, the repeats not read (a reader that has them from elsewhere).  Runs
    marked by their conditions (orchestrator/store/conditions.py) are left out unless ``include_marked``.
    """
    from sqlalchemy.orm import aliased

    eager = aliased(Measurement)
    own = aliased(Measurement)
    query = (
        good_attempt_join(
            select(
                Measurement.impl,
                Measurement.value,
                Measurement.unit,
                repeats_text() if with_samples else null(),
                eager.value,
                own.value,
                Job.kernel,
                Job.shape_key,
                Job.dtype,
                Job.key,
                JobAttempt.run_id,
                JobAttempt.attempt,
                JobAttempt.hardware_key,
                Device.gpu_type,
                Run.commit,
                attempt_time().label("at"),
                Run.conditions,
            )
        )
        .join(Device, Device.hardware_key == JobAttempt.hardware_key)
        .join(Run, Run.id == JobAttempt.run_id)
        .outerjoin(
            eager,
            (eager.job_id == Measurement.job_id)
            & (eager.attempt == Measurement.attempt)
            & (eager.impl == BASELINE_IMPL)
            & (eager.metric == metric),
        )
        .outerjoin(own, own_verdict(own))
        .where(
            # a named implementation may be a tune candidate; every implementation: the micro jobs' only
            Job.kind.in_(TIMED_KINDS if impl is not None else (MICRO,)),
            Job.kernel == kernel,
            Measurement.metric == metric,
            JobAttempt.status.in_(GOOD_STATUSES),
        )
    )
    query = narrowed(query, shape, dtype, impl)
    if gpu_type is not None:
        query = query.where(Device.gpu_type == gpu_type)
    if not include_marked:
        query = query.where(plain_runs())
    query = query.order_by(attempt_time().desc(), JobAttempt.id.desc()).limit(limit)
    with read_session(src) as s:
        rows = s.execute(query).all()
    points = [
        {
            "kernel": k,
            "shape_key": skey,
            "dtype": dt_,
            "impl": im,
            "hardware_key": hw,
            "gpu_type": gpu,
            "value": value,
            "unit": unit,
            "samples": repeats(samples),
            "eager_value": eager_value,
            "correct": None if correct is None else correct >= 0.5,
            "run_id": run_id,
            "commit": commit,
            "measured_at": at,
            "job_key": key,
            "attempt": attempt,
            "marked": describe_conditions(conditions, note=False),
        }
        for (
            im,
            value,
            unit,
            samples,
            eager_value,
            correct,
            k,
            skey,
            dt_,
            key,
            run_id,
            attempt,
            hw,
            gpu,
            commit,
            at,
            conditions,
        ) in rows
    ]
    points.reverse()
    return points
