"""The store's read API: the CLI summary and the dashboard read results through this module only.

Every function takes the store as its first argument (``src``): a URL (or bare SQLite path), an Engine or a
Session.  URLs share one engine per URL and are checked once for an up-to-date schema (SchemaOutOfDate
otherwise).  Nothing here writes.  Times are timezone-aware UTC datetimes.

Metric names the workers emit (Measurement.metric; ``impl`` is the implementation, or the mode for e2e):

  micro, per implementation
    time_us        median time in µs; ``samples`` holds every repeat (µs)
    iqr_us         inter-quartile range of the repeats (µs)
    gbs            GB/s by the kernel's byte model (bytes / median time)
    graph_time_us  optional: median of CUDA/HIP-graph replay (launch-free, warm L2), µs
    kernel_time_us optional: median of the call's own kernel time from the profiler (L2 flushed), µs
    kernel_gbs     optional: GB/s by the byte model over kernel_time_us
    speedup        baseline median / this median, emitted only for implementations that passed correctness
  correctness, per implementation
    rel_err        ‖out − ref‖ / ‖ref‖ against the float64 reference
    max_abs        max |out − ref|
    correct        1.0 passed / 0.0 failed
  e2e, per mode (eager, triton, compile, triton+compile, ...: workers.e2e_spec.MODES)
    ms_per_step, total_s, warmup_s, peak_mem_gb, max_abs_vs_eager, cos_sim_vs_eager
  profile
    no metrics; ``details["profile_rows"] = [{name, calls, total_ns, avg_ns, pct}]``, raw files as artifacts

Which attempt a run shows: for each job of the run, the newest attempt recorded by that run, else (a job the
run reused because an earlier run did it) the job's newest attempt.
"""
from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from orchestrator.store.migrate import check_schema
from orchestrator.store.models import (
    Artifact,
    Device,
    Job,
    JobAttempt,
    Measurement,
    Node,
    Run,
    RunJob,
    shape_key,
)
from orchestrator.store.regression_rule import (
    DEFAULT_ALPHA,
    DEFAULT_CONSECUTIVE,
    DEFAULT_THRESHOLD,
    DEFAULT_WINDOW,
    compare,
    judge_series,
    threshold_for,
)
from orchestrator.store.session import get_engine, normalize_url
from workers.e2e_spec import MODES
from workers.spec import GOOD_STATUSES

Source = str | Engine | Session

MICRO_METRICS = ("time_us", "iqr_us", "gbs", "graph_time_us", "kernel_time_us", "kernel_gbs", "speedup")
CORRECTNESS_METRICS = ("rel_err", "max_abs", "correct")
E2E_METRICS = ("ms_per_step", "total_s", "warmup_s", "peak_mem_gb", "max_abs_vs_eager", "cos_sim_vs_eager",
               "gpu_busy_ms_per_step", "sm_clock_mhz", "power_w")
METRIC_KIND = {**{m: "micro" for m in MICRO_METRICS}, **{m: "correctness" for m in CORRECTNESS_METRICS},
               **{m: "e2e" for m in E2E_METRICS}}
HIGHER_IS_BETTER = frozenset({"gbs", "speedup", "cos_sim_vs_eager"})
BASELINE_IMPL = "eager"
COMPILE_IMPLS = ("compile", "compile_max")

_schema_checked: "weakref.WeakKeyDictionary[Engine, bool]" = weakref.WeakKeyDictionary()


@contextmanager
def _reading(src: Source) -> Iterator[Session]:
    if isinstance(src, Session):
        yield src
        return
    if isinstance(src, Engine):
        engine, url = src, None
    else:
        url = normalize_url(src)
        engine = get_engine(url)
    if engine not in _schema_checked:
        check_schema(engine, url)
        _schema_checked[engine] = True
    with Session(engine) as session:
        yield session


# -- row building blocks --------------------------------------------------------------------------------------
@dataclass
class _Picked:
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


def _run_or_raise(s: Session, run_id: int) -> Run:
    run = s.get(Run, run_id)
    if run is None:
        raise KeyError(f"no run with id {run_id}")
    return run


def _pick_for_run(s: Session, run_id: int, jobs: Sequence[Job]) -> list[_Picked]:
    """Each job with the attempt the run shows (see the module doc) and its measurements."""
    job_ids = [j.id for j in jobs]
    in_run: dict[int, int] = {}
    for chunk in _chunks(job_ids):
        rows = s.execute(select(JobAttempt.job_id, func.max(JobAttempt.attempt))
                         .where(JobAttempt.run_id == run_id, JobAttempt.job_id.in_(chunk))
                         .group_by(JobAttempt.job_id)).all()
        in_run.update(rows)
    wanted = {j.id: in_run.get(j.id, j.attempts) for j in jobs}
    return _load_picked(s, jobs, wanted)


def _load_picked(s: Session, jobs: Sequence[Job], wanted: Mapping[int, int]) -> list[_Picked]:
    attempts: dict[int, JobAttempt] = {}
    metrics: dict[int, dict[tuple[str, str], Measurement]] = defaultdict(dict)
    ids = [job_id for job_id, attempt in wanted.items() if attempt > 0]
    for chunk in _chunks(ids):
        for a in s.scalars(select(JobAttempt).where(JobAttempt.job_id.in_(chunk))):
            if wanted[a.job_id] == a.attempt:
                attempts[a.job_id] = a
        for m in s.scalars(select(Measurement).where(Measurement.job_id.in_(chunk))):
            if wanted[m.job_id] == m.attempt:
                metrics[m.job_id][(m.impl, m.metric)] = m
    return [_Picked(j, attempts.get(j.id), metrics.get(j.id, {})) for j in jobs]


def _chunks(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _bandwidths(s: Session, keys: set[str | None]) -> dict[str, float | None]:
    keys = {k for k in keys if k}
    if not keys:
        return {}
    return dict(s.execute(select(Device.hardware_key, Device.copy_bandwidth_gbs)
                          .where(Device.hardware_key.in_(sorted(keys)))).all())


def _gpu_types(s: Session, keys: set[str | None]) -> dict[str, str]:
    keys = {k for k in keys if k}
    if not keys:
        return {}
    return dict(s.execute(select(Device.hardware_key, Device.gpu_type)
                          .where(Device.hardware_key.in_(sorted(keys)))).all())


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def _pct(gbs: float | None, bandwidth: float | None) -> float | None:
    ratio = _ratio(gbs, bandwidth)
    return None if ratio is None else ratio * 100.0


def _correctness_lookup(picked: Sequence[_Picked]):
    """impl -> correct, for a micro job: its own `correct` metric, else the correctness job of the same
    (kernel, shape, dtype) on the same hardware, else any of those with the same target (False if any failed)."""
    by_hw: dict[tuple, dict[str, bool]] = defaultdict(dict)
    by_target: dict[tuple, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for p in picked:
        if p.job.kind != "correctness":
            continue
        for impl in p.impls():
            c = p.correct(impl)
            if c is None:
                continue
            by_hw[(p.job.kernel, p.job.shape_key, p.job.dtype, p.hardware_key)][impl] = c
            by_target[(p.job.kernel, p.job.shape_key, p.job.dtype, p.job.target)][impl].append(c)

    def lookup(p: _Picked, impl: str) -> bool | None:
        own = p.correct(impl)
        if own is not None:
            return own
        same_hw = by_hw.get((p.job.kernel, p.job.shape_key, p.job.dtype, p.hardware_key), {})
        if impl in same_hw:
            return same_hw[impl]
        verdicts = by_target.get((p.job.kernel, p.job.shape_key, p.job.dtype, p.job.target), {}).get(impl)
        if verdicts:
            return all(verdicts)
        return None

    return lookup


# -- runs -----------------------------------------------------------------------------------------------------
def _run_dict(run: Run, n_jobs: int | None = None) -> dict[str, Any]:
    return {
        "id": run.id, "sweep": run.sweep, "plan_key": run.plan_key, "commit": run.commit,
        "code_hash": run.code_hash, "user": run.user, "host": run.host, "source": run.source,
        "source_digest": run.source_digest, "status": run.status, "started_at": run.started_at,
        "finished_at": run.finished_at, "counts": run.counts, "n_jobs": n_jobs,
    }


def list_runs(src: Source, limit: int = 50) -> list[dict[str, Any]]:
    """The newest runs first, with how many jobs each comprised."""
    n_jobs = (select(RunJob.run_id, func.count().label("n")).group_by(RunJob.run_id).subquery())
    with _reading(src) as s:
        rows = s.execute(select(Run, n_jobs.c.n).outerjoin(n_jobs, n_jobs.c.run_id == Run.id)
                         .order_by(Run.started_at.desc(), Run.id.desc()).limit(limit)).all()
        return [_run_dict(run, n or 0) for run, n in rows]


def run_info(src: Source, run_id: int) -> dict[str, Any] | None:
    """One run with its composed config and live job counts; None if there is no such run.

    ``job_counts`` counts each job of the run by the status of its newest attempt in this run; jobs the run
    did not execute count as ``done_before`` (an earlier run has a good result) or ``pending``.
    """
    with _reading(src) as s:
        run = s.get(Run, run_id)
        if run is None:
            return None
        jobs = s.scalars(select(Job).join(RunJob, RunJob.job_id == Job.id).where(RunJob.run_id == run_id)).all()
        counts: dict[str, int] = defaultdict(int)
        for p in _pick_for_run(s, run_id, jobs):
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
    status, error.
    Speed-ups are ratios of medians measured side by side in the same job; an implementation that failed
    correctness never gets one.  pct_of_ceiling = gbs / the device's measured copy bandwidth × 100;
    kernel_pct_of_ceiling the same for kernel_gbs.
    """
    with _reading(src) as s:
        _run_or_raise(s, run_id)
        jobs = s.scalars(select(Job).join(RunJob, RunJob.job_id == Job.id)
                         .where(RunJob.run_id == run_id, Job.kind.in_(("correctness", "micro")))
                         .order_by(Job.kernel, Job.shape_key, Job.dtype, Job.kind, Job.id)).all()
        picked = _pick_for_run(s, run_id, jobs)
        hw = {p.hardware_key for p in picked}
        bandwidth, gpu_type = _bandwidths(s, hw), _gpu_types(s, hw)
    correct_of = _correctness_lookup(picked)
    rows = []
    for p in picked:
        bw = bandwidth.get(p.hardware_key) if p.hardware_key else None
        for impl in p.impls():
            row = {
                "run_id": run_id, "job_id": p.job.id, "job_key": p.job.key,
                "attempt": p.attempt.attempt if p.attempt else None, "kind": p.job.kind, "kernel": p.job.kernel,
                "shape": list(p.job.shape or []), "dtype": p.job.dtype, "target": p.job.target, "impl": impl,
                "hardware_key": p.hardware_key, "gpu_type": gpu_type.get(p.hardware_key or ""),
                "node_id": p.attempt.node_id if p.attempt else None,
                "median_us": None, "iqr_us": None, "graph_time_us": None, "kernel_time_us": None, "gbs": None,
                "kernel_gbs": None, "copy_bandwidth_gbs": bw, "pct_of_ceiling": None,
                "kernel_pct_of_ceiling": None, "speedup_vs_eager": None,
                "speedup_vs_compile": None, "compile_baseline": None,
                "correct": correct_of(p, impl) if p.job.kind == "micro" else p.correct(impl),
                "rel_err": p.value(impl, "rel_err"), "max_abs": p.value(impl, "max_abs"),
                "status": p.status, "error": p.error,
            }
            if p.job.kind == "micro":
                _fill_micro(row, p, impl, bw, correct_of)
            rows.append(row)
    return rows


def _fill_micro(row: dict[str, Any], p: _Picked, impl: str, bandwidth: float | None, correct_of) -> None:
    median = p.value(impl, "time_us")
    row["median_us"] = median
    row["iqr_us"] = p.value(impl, "iqr_us")
    row["graph_time_us"] = p.value(impl, "graph_time_us")
    row["kernel_time_us"] = p.value(impl, "kernel_time_us")
    row["gbs"] = p.value(impl, "gbs")
    row["kernel_gbs"] = p.value(impl, "kernel_gbs")
    row["pct_of_ceiling"] = _pct(row["gbs"], bandwidth)
    row["kernel_pct_of_ceiling"] = _pct(row["kernel_gbs"], bandwidth)
    if row["correct"] is False or median is None:
        return
    row["speedup_vs_eager"] = _ratio(p.value(BASELINE_IMPL, "time_us"), median)
    candidates = [(t, name) for name in COMPILE_IMPLS
                  if (t := p.value(name, "time_us")) is not None and correct_of(p, name) is not False]
    if candidates:
        best_time, best_name = min(candidates)
        row["speedup_vs_compile"] = _ratio(best_time, median)
        row["compile_baseline"] = best_name


# -- history --------------------------------------------------------------------------------------------------
def _when():
    return func.coalesce(JobAttempt.started_at, JobAttempt.recorded_at)


def _name_filter(kind: str | None, name: str | None):
    if name is None:
        return []
    return [Job.model == name] if kind == "e2e" else [Job.kernel == name]


def history(src: Source, kernel: str, shape: Sequence[int] | str, dtype: str, impl: str,
            hardware_key: str | None = None, limit: int = 50, metric: str = "time_us") -> list[dict[str, Any]]:
    """The time series of one (kernel, shape, dtype, impl[, hardware key]) metric, newest last.

    Each point: value (the median for time metrics), samples (every repeat), unit, measured_at, run_id, commit,
    code_hash, run_started_at, job_key, attempt, hardware_key, node_id.  Only good attempts count.  For e2e
    metrics ``kernel`` names the model and ``impl`` the mode.  ``hardware_key=None`` mixes every device.
    """
    kind = METRIC_KIND.get(metric)
    query = (select(Measurement, JobAttempt, Job.key, Run.commit, Run.code_hash, Run.started_at)
             .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id)
                   & (JobAttempt.attempt == Measurement.attempt))
             .join(Job, Job.id == Measurement.job_id)
             .join(Run, Run.id == JobAttempt.run_id)
             .where(*_name_filter(kind, kernel), Job.shape_key == shape_key(shape), Job.dtype == dtype,
                    Measurement.impl == impl, Measurement.metric == metric,
                    JobAttempt.status.in_(GOOD_STATUSES)))
    if kind is not None:
        query = query.where(Job.kind == kind)
    if hardware_key is not None:
        query = query.where(JobAttempt.hardware_key == hardware_key)
    query = query.order_by(_when().desc(), JobAttempt.id.desc()).limit(limit)
    with _reading(src) as s:
        rows = s.execute(query).all()
    points = [{
        "value": m.value, "samples": m.samples, "unit": m.unit,
        "measured_at": a.started_at or a.recorded_at, "recorded_at": a.recorded_at,
        "run_id": a.run_id, "commit": commit, "code_hash": code_hash, "run_started_at": run_started,
        "job_key": key, "attempt": a.attempt, "hardware_key": a.hardware_key, "node_id": a.node_id,
    } for m, a, key, commit, code_hash, run_started in rows]
    points.reverse()
    return points


def latest_results(src: Source, kernel: str | None = None, hardware_key: str | None = None) -> list[dict[str, Any]]:
    """The newest micro-benchmark result of every (kernel, shape, dtype, impl, hardware key).

    Keys: kernel, shape, dtype, impl, hardware_key, gpu_type, median_us, iqr_us, graph_time_us, kernel_time_us, gbs,
    kernel_gbs, pct_of_ceiling, kernel_pct_of_ceiling, speedup_vs_eager (against eager of the same job; None when
    this implementation's newest correctness verdict on that hardware is a failure), correct, measured_at, run_id,
    commit, job_id, job_key, attempt.
    """
    with _reading(src) as s:
        latest_time = _latest_points(s, "micro", "time_us", kernel, hardware_key)
        latest_correct = {(r["kernel"], r["shape_key"], r["dtype"], r["hardware_key"], r["impl"]): r
                          for r in _latest_points(s, "correctness", "correct", kernel, hardware_key)}
        pairs = {(r["job_id"], r["attempt"]) for r in latest_time}
        metrics: dict[tuple[int, int], dict[tuple[str, str], float | None]] = defaultdict(dict)
        for chunk in _chunks(sorted({job_id for job_id, _ in pairs})):
            for m in s.scalars(select(Measurement).where(Measurement.job_id.in_(chunk),
                                                         Measurement.metric.in_(MICRO_METRICS))):
                if (m.job_id, m.attempt) in pairs:
                    metrics[(m.job_id, m.attempt)][(m.impl, m.metric)] = m.value
        hw = {r["hardware_key"] for r in latest_time}
        bandwidth, gpu_type = _bandwidths(s, hw), _gpu_types(s, hw)
    rows = []
    for r in latest_time:
        values = metrics[(r["job_id"], r["attempt"])]
        impl = r["impl"]
        verdict = latest_correct.get((r["kernel"], r["shape_key"], r["dtype"], r["hardware_key"], impl))
        own = values.get((impl, "correct"))
        correct = (own >= 0.5) if own is not None else (
            None if verdict is None or verdict["value"] is None else verdict["value"] >= 0.5)
        gbs, kernel_gbs = values.get((impl, "gbs")), values.get((impl, "kernel_gbs"))
        bw = bandwidth.get(r["hardware_key"] or "")
        rows.append({
            "kernel": r["kernel"], "shape": r["shape"], "dtype": r["dtype"], "impl": impl,
            "hardware_key": r["hardware_key"], "gpu_type": gpu_type.get(r["hardware_key"] or ""),
            "median_us": r["value"], "iqr_us": values.get((impl, "iqr_us")),
            "graph_time_us": values.get((impl, "graph_time_us")),
            "kernel_time_us": values.get((impl, "kernel_time_us")), "gbs": gbs, "kernel_gbs": kernel_gbs,
            "pct_of_ceiling": _pct(gbs, bw), "kernel_pct_of_ceiling": _pct(kernel_gbs, bw),
            "speedup_vs_eager": None if correct is False else _ratio(values.get((BASELINE_IMPL, "time_us")),
                                                                      r["value"]),
            "correct": correct, "measured_at": r["measured_at"], "run_id": r["run_id"], "commit": r["commit"],
            "job_id": r["job_id"], "job_key": r["job_key"], "attempt": r["attempt"],
        })
    rows.sort(key=lambda x: (x["kernel"] or "", x["shape"], x["dtype"], x["hardware_key"] or "", x["impl"]))
    return rows


def _latest_points(s: Session, kind: str, metric: str, name: str | None,
                   hardware_key: str | None) -> list[dict[str, Any]]:
    """The newest good measurement of ``metric`` per (name, shape, dtype, hardware key, impl)."""
    rank = func.row_number().over(
        partition_by=(Job.kernel, Job.model, Job.shape_key, Job.dtype, JobAttempt.hardware_key, Measurement.impl),
        order_by=(_when().desc(), JobAttempt.id.desc()),
    ).label("rank")
    ranked = (select(Measurement.id.label("measurement_id"), rank)
              .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id)
                    & (JobAttempt.attempt == Measurement.attempt))
              .join(Job, Job.id == Measurement.job_id)
              .where(Job.kind == kind, Measurement.metric == metric, JobAttempt.status.in_(GOOD_STATUSES),
                     *_name_filter(kind, name)))
    if hardware_key is not None:
        ranked = ranked.where(JobAttempt.hardware_key == hardware_key)
    ranked = ranked.subquery()
    query = (select(Measurement, JobAttempt, Job, Run.commit)
             .join(ranked, ranked.c.measurement_id == Measurement.id)
             .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id)
                   & (JobAttempt.attempt == Measurement.attempt))
             .join(Job, Job.id == Measurement.job_id)
             .join(Run, Run.id == JobAttempt.run_id)
             .where(ranked.c.rank == 1))
    return [{
        "kernel": job.kernel if kind != "e2e" else job.model, "shape": list(job.shape or []),
        "shape_key": job.shape_key, "dtype": job.dtype, "hardware_key": a.hardware_key, "impl": m.impl,
        "value": m.value, "samples": m.samples, "measured_at": a.started_at or a.recorded_at, "run_id": a.run_id,
        "commit": commit, "job_id": job.id, "job_key": job.key, "attempt": a.attempt,
    } for m, a, job, commit in s.execute(query).all()]


# -- devices, fleet -------------------------------------------------------------------------------------------
def devices(src: Source) -> list[dict[str, Any]]:
    with _reading(src) as s:
        rows = s.scalars(select(Device).order_by(Device.gpu_type, Device.hardware_key)).all()
        return [{
            "hardware_key": d.hardware_key, "vendor": d.vendor, "name": d.name, "arch": d.arch,
            "gpu_type": d.gpu_type, "warp_size": d.warp_size, "compute_units": d.compute_units,
            "memory_bytes": d.memory_bytes, "driver": d.driver, "runtime": d.runtime, "torch": d.torch,
            "triton": d.triton, "copy_bandwidth_gbs": d.copy_bandwidth_gbs,
            "copy_bandwidth_measured_at": d.copy_bandwidth_measured_at, "first_seen": d.first_seen,
            "last_seen": d.last_seen, "info": d.info,
        } for d in rows]


def nodes(src: Source) -> list[dict[str, Any]]:
    """The last fleet snapshot of every node ever seen (alive first)."""
    with _reading(src) as s:
        rows = s.scalars(select(Node).order_by(Node.alive.desc(), Node.node_id)).all()
        return [{"node_id": n.node_id, "address": n.address, "labels": n.labels, "resources": n.resources,
                 "alive": n.alive, "first_seen": n.first_seen, "last_seen": n.last_seen} for n in rows]


# -- end to end, profiles, artifacts --------------------------------------------------------------------------
def e2e_results(src: Source, run_id: int | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """One row per (e2e job, mode): for the jobs of ``run_id``, or else the newest attempts of every e2e job
    (newest first, at most ``limit`` jobs).

    Keys: run_id, job_id, job_key, attempt, model, shape, dtype, hardware_key, gpu_type, mode, the E2E_METRICS,
    speedup_vs_eager (eager ms_per_step / this mode's), status, error, measured_at.
    """
    with _reading(src) as s:
        if run_id is not None:
            _run_or_raise(s, run_id)
            jobs = s.scalars(select(Job).join(RunJob, RunJob.job_id == Job.id)
                             .where(RunJob.run_id == run_id, Job.kind == "e2e")
                             .order_by(Job.model, Job.shape_key, Job.dtype, Job.id)).all()
            picked = _pick_for_run(s, run_id, jobs)
        else:
            jobs = s.scalars(select(Job).where(Job.kind == "e2e", Job.attempts > 0)
                             .order_by(Job.started_at.desc().nulls_last(), Job.id.desc()).limit(limit)).all()
            picked = _load_picked(s, jobs, {j.id: j.attempts for j in jobs})
        gpu_type = _gpu_types(s, {p.hardware_key for p in picked})
    rows = []
    for p in picked:
        planned = [str(m) for m in (p.job.spec or {}).get("impls") or []]
        measured = {impl for impl, _ in p.metrics}
        modes = [m for m in MODES if m in measured or m in planned]
        modes += [m for m in planned if m not in modes] + sorted(measured - set(modes) - set(planned))
        eager_ms = p.value("eager", "ms_per_step")
        for mode in modes:
            row = {
                "run_id": p.attempt.run_id if p.attempt else run_id, "job_id": p.job.id, "job_key": p.job.key,
                "attempt": p.attempt.attempt if p.attempt else None, "model": p.job.model,
                "shape": list(p.job.shape or []), "dtype": p.job.dtype, "hardware_key": p.hardware_key,
                "gpu_type": gpu_type.get(p.hardware_key or ""), "mode": mode,
                **{metric: p.value(mode, metric) for metric in E2E_METRICS},
                "status": p.status, "error": p.error,
                "measured_at": (p.attempt.started_at or p.attempt.recorded_at) if p.attempt else None,
            }
            row["speedup_vs_eager"] = _ratio(eager_ms, row["ms_per_step"])
            rows.append(row)
    return rows


def _job_attempt(s: Session, job: int | str, attempt: int | None) -> tuple[Job, JobAttempt] | None:
    row = s.get(Job, job) if isinstance(job, int) else s.scalars(select(Job).where(Job.key == job)).one_or_none()
    if row is None:
        raise KeyError(f"no job {job!r}")
    number = attempt if attempt is not None else row.attempts
    found = s.scalars(select(JobAttempt).where(JobAttempt.job_id == row.id,
                                               JobAttempt.attempt == number)).one_or_none()
    return None if found is None else (row, found)


def profile_rows(src: Source, job_id: int | str, attempt: int | None = None) -> list[dict[str, Any]]:
    """The per-kernel rows of a profile job ({name, calls, total_ns, avg_ns, pct}), newest attempt by default.
    ``job_id`` may also be the job key."""
    with _reading(src) as s:
        found = _job_attempt(s, job_id, attempt)
    if found is None:
        return []
    return [dict(r) for r in (found[1].details or {}).get("profile_rows") or []]


def artifacts(src: Source, job_id: int | str, attempt: int | None = None) -> list[dict[str, Any]]:
    """The artifacts of a job's attempt (newest by default), without their data: id, kind, name, path, size,
    stored ("blob" or "path")."""
    with _reading(src) as s:
        found = _job_attempt(s, job_id, attempt)
        if found is None:
            return []
        job, a = found
        rows = s.execute(select(Artifact.id, Artifact.kind, Artifact.name, Artifact.path, Artifact.size,
                                Artifact.blob.is_not(None))
                         .where(Artifact.job_id == job.id, Artifact.attempt == a.attempt)
                         .order_by(Artifact.id)).all()
    return [{"id": i, "kind": k, "name": n, "path": p, "size": size, "stored": "blob" if has_blob else "path"}
            for i, k, n, p, size, has_blob in rows]


def artifact_data(src: Source, artifact_id: int) -> bytes | None:
    """The stored bytes of one artifact; None when it is kept as a path on a node."""
    with _reading(src) as s:
        row = s.get(Artifact, artifact_id)
        if row is None:
            raise KeyError(f"no artifact with id {artifact_id}")
        return row.blob


# -- regressions ----------------------------------------------------------------------------------------------
def _series(s: Session, metric: str, name: str | None, hardware_key: str | None,
            names: set[str | None] | None = None) -> dict[tuple, list[dict[str, Any]]]:
    kind = METRIC_KIND.get(metric, "micro")
    name_col = Job.model if kind == "e2e" else Job.kernel
    query = (select(Measurement.impl, Measurement.value, Measurement.samples, JobAttempt.run_id,
                    JobAttempt.attempt, JobAttempt.hardware_key, JobAttempt.started_at, JobAttempt.recorded_at,
                    name_col, Job.shape, Job.shape_key, Job.dtype, Job.key, Run.commit)
             .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id)
                   & (JobAttempt.attempt == Measurement.attempt))
             .join(Job, Job.id == Measurement.job_id)
             .join(Run, Run.id == JobAttempt.run_id)
             .where(Job.kind == kind, Measurement.metric == metric, JobAttempt.status.in_(GOOD_STATUSES),
                    *_name_filter(kind, name))
             .order_by(_when(), JobAttempt.id))
    if hardware_key is not None:
        query = query.where(JobAttempt.hardware_key == hardware_key)
    if names is not None:
        query = query.where(name_col.in_(sorted(n for n in names if n is not None)))
    series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for (impl, value, samples, run_id, attempt, hw, started, recorded, nm, shape, skey, dtype, key,
         commit) in s.execute(query).all():
        series[(nm, skey, dtype, impl, hw)].append({
            "value": value, "samples": samples if samples else ([value] if value is not None else []),
            "run_id": run_id, "attempt": attempt, "measured_at": started or recorded, "shape": list(shape or []),
            "job_key": key, "commit": commit,
        })
    return series


def regressions(src: Source, run_id: int | None = None, *, baseline_run_id: int | None = None,
                metric: str = "time_us", threshold: float | Mapping[str, float] = DEFAULT_THRESHOLD,
                alpha: float = DEFAULT_ALPHA, window: int = DEFAULT_WINDOW,
                consecutive: int = DEFAULT_CONSECUTIVE, kernel: str | None = None,
                hardware_key: str | None = None, include_improvements: bool = False) -> list[dict[str, Any]]:
    """Flag changes of ``metric`` per (kernel, shape, dtype, impl, hardware key) by DESIGN's rule
    (regression_rule.py: relative change >= threshold AND one-sided Mann-Whitney U p < alpha on the repeats).

    * ``baseline_run_id`` given: compare ``run_id``'s points with the baseline run's, one to one.
    * otherwise, against history: each series is cut at ``run_id``'s point (the newest point of every series
      when run_id is None); its last ``consecutive`` points are compared with the ``window`` points before
      them and flagged when all of them violate in the same direction.

    ``threshold`` is one fraction or a mapping kernel -> fraction ("default" for the rest).  Each flag: kernel,
    shape, dtype, impl, hardware_key, metric, direction ("regression"/"improvement"), change (fraction,
    + = higher value), reference_median, current_median, p_value (largest of the compared points), run_id,
    commit, job_key, reference_runs, compared (per compared point: run_id, commit, change, p_value).
    """
    if baseline_run_id is not None and run_id is None:
        raise ValueError("baseline_run_id needs run_id: the run to compare with it")
    higher_is_worse = metric not in HIGHER_IS_BETTER
    with _reading(src) as s:
        names = None
        if run_id is not None:
            _run_or_raise(s, run_id)
            name_col = Job.model if METRIC_KIND.get(metric) == "e2e" else Job.kernel
            names = set(s.scalars(select(name_col).distinct().join(RunJob, RunJob.job_id == Job.id)
                                  .where(RunJob.run_id == run_id)))
        series = _series(s, metric, kernel, hardware_key, names)
    flags = []
    for (name, _skey, dtype, impl, hw), points in sorted(series.items(), key=lambda kv: repr(kv[0])):
        limit = threshold_for(name, threshold)
        if baseline_run_id is not None:
            current = [p for p in points if p["run_id"] == run_id]
            reference = [p for p in points if p["run_id"] == baseline_run_id]
            if not current or not reference:
                continue
            c = compare(reference[-1]["samples"], current[-1]["samples"], threshold=limit, alpha=alpha,
                        higher_is_worse=higher_is_worse)
            if c is None or not c.violation:
                continue
            comparisons, streak, ref_points = [c], [current[-1]], [reference[-1]]
        else:
            if run_id is not None:
                last = max((i for i, p in enumerate(points) if p["run_id"] == run_id), default=None)
                if last is None:
                    continue
                points = points[:last + 1]
            verdict = judge_series([p["samples"] for p in points], threshold=limit, alpha=alpha, window=window,
                                   consecutive=consecutive, higher_is_worse=higher_is_worse)
            if verdict is None:
                continue
            comparisons, streak = verdict, points[-consecutive:]
            ref_points = points[-consecutive - window:-consecutive]
        if not comparisons[0].worse and not include_improvements:
            continue
        newest = streak[-1]
        flags.append({
            "kernel": name, "shape": newest["shape"], "dtype": dtype, "impl": impl, "hardware_key": hw,
            "metric": metric, "direction": comparisons[-1].direction, "change": comparisons[-1].change,
            "reference_median": comparisons[-1].reference_median,
            "current_median": comparisons[-1].current_median,
            "p_value": max(c.p_value for c in comparisons), "threshold": limit,
            "run_id": newest["run_id"], "commit": newest["commit"], "job_key": newest["job_key"],
            "reference_runs": [p["run_id"] for p in ref_points],
            "compared": [{"run_id": p["run_id"], "commit": p["commit"], "change": c.change, "p_value": c.p_value}
                         for p, c in zip(streak, comparisons)],
        })
    return flags



def run_measured(src: Source, run_id: int) -> dict[str, Any]:
    """When, where and what a run's shown results measured: ``devices`` (names, sorted), ``measured_from`` and
    ``measured_to`` (the earliest and latest start of the attempts shown, which predate the run for jobs done
    earlier; None when it shows none) and ``unavailable`` ({job id: {impl: why it was not run}}, from the
    attempts' details)."""
    with _reading(src) as s:
        _run_or_raise(s, run_id)
        jobs = s.scalars(select(Job).join(RunJob, RunJob.job_id == Job.id).where(RunJob.run_id == run_id)).all()
        picked = [p for p in _pick_for_run(s, run_id, jobs) if p.attempt is not None]
        keys = {p.attempt.hardware_key for p in picked if p.attempt.hardware_key}
        names = sorted({d.name for d in s.scalars(select(Device).where(Device.hardware_key.in_(keys)))}) if keys else []
    starts = [p.attempt.started_at or p.attempt.recorded_at for p in picked]
    unavailable = {p.job.id: dict((p.attempt.details or {}).get("unavailable") or {}) for p in picked}
    return {"devices": names, "measured_from": min(starts) if starts else None,
            "measured_to": max(starts) if starts else None,
            "unavailable": {k: v for k, v in unavailable.items() if v}}
