"""Row building blocks the topic modules share: which attempt a run shows for each job, and its measurements.

Which attempt a run shows: for each job of the run, the newest attempt recorded by that run, else (a job the
run reused because an earlier run did it) the job's newest attempt."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kernels.metadata import BASELINE_IMPL, COMPILE_IMPLS
from orchestrator.store.models import Device, Job, JobAttempt, Measurement, Run, RunJob, shape_key
from orchestrator.store.query.access import chunks
from workers import kinds
from workers import metrics as catalogue
from workers.kinds.correctness import NAME as CORRECTNESS
from workers.kinds.e2e import NAME as E2E
from workers.kinds.micro import NAME as MICRO

TIMED_KINDS = kinds.timed()  # the job kinds whose implementations are timed side by side (workers/kinds/)
MICRO_METRICS = catalogue.of_kind(MICRO)
CORRECTNESS_METRICS = catalogue.of_kind(CORRECTNESS)
E2E_METRICS = catalogue.of_kind(E2E)


@dataclass
class Picked:
    """A job with the attempt shown for it and that attempt's measurements by (impl, metric)."""

    job: Job
    attempt: JobAttempt | None
    metrics: dict[tuple[str, str], Measurement] = field(default_factory=dict)

    def value(self, impl: str, metric: str) -> float | None:
        m = self.metrics.get((impl, metric))
        return None if m is None else m.value

    def correct(self, impl: str) -> bool | None:
        v = self.value(impl, "correct")
        return None if v is None else v >= 0.5

    def impls(self) -> list[str]:
        planned = [str(i) for i in (self.job.spec or {}).get("impls") or []]
        measured = sorted({impl for impl, _ in self.metrics} - set(planned))
        return planned + measured

    @property
    def status(self) -> str:
        return self.attempt.status if self.attempt else self.job.status

    @property
    def error(self) -> str | None:
        return self.attempt.error if self.attempt else self.job.error

    @property
    def hardware_key(self) -> str | None:
        return self.attempt.hardware_key if self.attempt else None


def run_or_raise(s: Session, run_id: int) -> Run:
    run = s.get(Run, run_id)
    if run is None:
        raise KeyError(f"no run {run_id}")
    return run


def own_verdict(own):
    """The join condition of ``own`` (an aliased Measurement) to the `correct` verdict of the same implementation in
    the same attempt as the Measurement read: outer-joined, it is None where nothing checked it."""
    return (
        (own.job_id == Measurement.job_id)
        & (own.attempt == Measurement.attempt)
        & (own.impl == Measurement.impl)
        & (own.metric == "correct")
    )


def marked_run_ids(s: Session) -> list[int]:
    """The runs whose conditions mark them (dirty checkout, shared GPU, rehearsal: orchestrator/store/conditions.py),
    newest first."""
    return list(s.scalars(select(Run.id).where(Run.conditions.is_not(None)).order_by(Run.id.desc())))


def run_conditions(s: Session, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Each marked run's conditions among ``run_ids``."""
    ids = list(run_ids)
    if not ids:
        return {}
    rows = s.execute(select(Run.id, Run.conditions).where(Run.id.in_(ids), Run.conditions.is_not(None)))
    return {rid: cond for rid, cond in rows if cond}


def run_jobs(s: Session, run_id: int, *where: Any, order_by: Sequence[Any] = ()) -> Sequence[Job]:
    """The jobs run ``run_id`` comprises that match ``where``, in ``order_by``."""
    query = select(Job).join(RunJob, RunJob.job_id == Job.id).where(RunJob.run_id == run_id, *where)
    return s.scalars(query.order_by(*order_by)).all()


def narrowed(query: Any, shape: Sequence[int] | str | None, dtype: str | None, impl: str | None) -> Any:
    """``query`` kept to one shape, dtype and implementation, each where given."""
    if shape is not None:
        query = query.where(Job.shape_key == shape_key(shape))
    if dtype is not None:
        query = query.where(Job.dtype == dtype)
    if impl is not None:
        query = query.where(Measurement.impl == impl)
    return query


def pick_for_run(s: Session, run_id: int, jobs: Sequence[Job]) -> list[Picked]:
    """Each job with the attempt the run shows (see the module doc) and its measurements."""
    job_ids = [j.id for j in jobs]
    in_run: dict[int, int] = {}
    for chunk in chunks(job_ids):
        rows = s.execute(
            select(JobAttempt.job_id, func.max(JobAttempt.attempt))
            .where(JobAttempt.run_id == run_id, JobAttempt.job_id.in_(chunk))
            .group_by(JobAttempt.job_id)
        ).all()
        in_run.update(rows)
    wanted = {j.id: in_run.get(j.id, j.attempts) for j in jobs}
    return load_picked(s, jobs, wanted)


def load_picked(s: Session, jobs: Sequence[Job], wanted: Mapping[int, int]) -> list[Picked]:
    attempts: dict[int, JobAttempt] = {}
    metrics: dict[int, dict[tuple[str, str], Measurement]] = defaultdict(dict)
    ids = [job_id for job_id, attempt in wanted.items() if attempt > 0]
    for chunk in chunks(ids):
        for a in s.scalars(select(JobAttempt).where(JobAttempt.job_id.in_(chunk))):
            if wanted[a.job_id] == a.attempt:
                attempts[a.job_id] = a
        for m in s.scalars(select(Measurement).where(Measurement.job_id.in_(chunk))):
            if wanted[m.job_id] == m.attempt:
                metrics[m.job_id][(m.impl, m.metric)] = m
    return [Picked(j, attempts.get(j.id), metrics.get(j.id, {})) for j in jobs]


def bandwidths_of(s: Session, keys: set[str | None]) -> dict[str, float | None]:
    keys = {k for k in keys if k}
    if not keys:
        return {}
    return dict(
        s.execute(
            select(Device.hardware_key, Device.copy_bandwidth_gbs).where(Device.hardware_key.in_(sorted(keys)))
        ).all()
    )


def gpu_types_of(s: Session, keys: set[str | None]) -> dict[str, str]:
    keys = {k for k in keys if k}
    if not keys:
        return {}
    return dict(
        s.execute(select(Device.hardware_key, Device.gpu_type).where(Device.hardware_key.in_(sorted(keys)))).all()
    )


def safe_ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def pct_of(gbs: float | None, bandwidth: float | None) -> float | None:
    ratio = safe_ratio(gbs, bandwidth)
    return None if ratio is None else ratio * 100.0


def correctness_lookup(picked: Sequence[Picked]):
    """impl -> correct, for a micro job: False when its own `correct` metric or the correctness job of the same
    (kernel, shape, dtype) on the same hardware (else any of those with the same target) failed: a micro job
    checks one input, the correctness job every case, and a failure of either is never shown as correct; True
    when one passed and none failed; None when nothing checked it."""
    by_hw: dict[tuple, dict[str, bool]] = defaultdict(dict)
    by_target: dict[tuple, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for p in picked:
        if p.job.kind != CORRECTNESS:
            continue
        for impl in p.impls():
            c = p.correct(impl)
            if c is None:
                continue
            by_hw[(p.job.kernel, p.job.shape_key, p.job.dtype, p.hardware_key)][impl] = c
            by_target[(p.job.kernel, p.job.shape_key, p.job.dtype, p.job.target)][impl].append(c)

    def lookup(p: Picked, impl: str) -> bool | None:
        own = p.correct(impl)
        same_hw = by_hw.get((p.job.kernel, p.job.shape_key, p.job.dtype, p.hardware_key), {})
        if impl in same_hw:
            job = same_hw[impl]
        else:
            verdicts = by_target.get((p.job.kernel, p.job.shape_key, p.job.dtype, p.job.target), {}).get(impl)
            job = all(verdicts) if verdicts else None
        if own is False or job is False:
            return False
        return True if own or job else None

    return lookup


def fill_micro(row: dict[str, Any], p: Picked, impl: str, bandwidth: float | None, correct_of) -> None:
    median = p.value(impl, "time_us")
    row["median_us"] = median
    row["iqr_us"] = p.value(impl, "iqr_us")
    row["graph_time_us"] = p.value(impl, "graph_time_us")
    row["kernel_time_us"] = p.value(impl, "kernel_time_us")
    row["gbs"] = p.value(impl, "gbs")
    row["kernel_gbs"] = p.value(impl, "kernel_gbs")
    row["pct_of_ceiling"] = pct_of(row["gbs"], bandwidth)
    row["kernel_pct_of_ceiling"] = pct_of(row["kernel_gbs"], bandwidth)
    if row["correct"] is False or median is None:
        return
    row["speedup_vs_eager"] = safe_ratio(p.value(BASELINE_IMPL, "time_us"), median)
    candidates = [
        (t, name)
        for name in COMPILE_IMPLS
        if (t := p.value(name, "time_us")) is not None and correct_of(p, name) is not False
    ]
    if candidates:
        best_time, best_name = min(candidates)
        row["speedup_vs_compile"] = safe_ratio(best_time, median)
        row["compile_baseline"] = best_name


def attempt_time():
    return func.coalesce(JobAttempt.started_at, JobAttempt.recorded_at)


def name_filter(kind: str | None, name: str | None):
    if name is None:
        return []
    return [Job.model == name] if kinds.runs_model(kind) else [Job.kernel == name]


def job_attempt(s: Session, job: int | str, attempt: int | None) -> tuple[Job, JobAttempt] | None:
    row = s.get(Job, job) if isinstance(job, int) else s.scalars(select(Job).where(Job.key == job)).one_or_none()
    if row is None:
        raise KeyError(f"no job {job!r}")
    number = attempt if attempt is not None else row.attempts
    found = s.scalars(select(JobAttempt).where(JobAttempt.job_id == row.id, JobAttempt.attempt == number)).one_or_none()
    return None if found is None else (row, found)


def good_attempt_join(query):
    return (
        query.select_from(Measurement)
        .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
        .join(Job, Job.id == Measurement.job_id)
    )


def geomean(values: Sequence[float]) -> float | None:
    import math

    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None
