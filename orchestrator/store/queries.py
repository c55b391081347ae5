"""The store's read API: the CLI summary and the dashboard read results through this module only.

Every function takes the store as its first argument (``src``): a URL (or bare SQLite path), an Engine or a
Session.  URLs share one engine per URL and are checked once for an up-to-date schema (SchemaOutOfDate
otherwise).  Nothing here writes.  Times are timezone-aware UTC datetimes.

Metric names, units and directions: the catalogue in workers/metrics.py (``impl`` is the implementation, or the mode
for e2e).  A profile job's per-kernel rows are in ``details["profile_rows"] = [{name, calls, total_ns, avg_ns, pct}]``,
its raw files are artifacts.  A query given a metric the catalogue lacks raises ValueError.  A micro job's details
hold, per compiled implementation, ``details["autotune"][impl]``: the kernels Inductor generated, the configs its
autotuner picked and ``pick`` (compared between runs: autotune_pick()).

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

from sqlalchemy import Engine, Text, cast, func, null, select
from sqlalchemy.orm import Session

from orchestrator.store import e2e_anchors
from orchestrator.store.e2e_anchors import floor_figures
from orchestrator.store.migrate import SchemaOutOfDate, check_schema  # noqa: F401  SchemaOutOfDate: for readers to catch
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
    DEFAULT_NOISE_WINDOW,
    DEFAULT_THRESHOLD,
    DEFAULT_WINDOW,
    DEFAULT_Z,
    Point,
    _finite,
    between_run_scale,
    judge,
    threshold_for,
    verdict_words,
)
from orchestrator.store.session import get_engine, normalize_url
from workers import metrics as catalogue
from workers import rehearsal
from workers.e2e_spec import MODES
from workers.spec import GOOD_STATUSES

Source = str | Engine | Session

MICRO_METRICS = catalogue.of_kind("micro")
CORRECTNESS_METRICS = catalogue.of_kind("correctness")
E2E_METRICS = catalogue.of_kind("e2e")
BASELINE_IMPL = "eager"
COMPILE_IMPLS = ("compile", "compile_max")
AUTOTUNED_IMPLS = ("compile_max",)  # max-autotune: a process may keep another kernel config (docs/regressions.md)

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
        raise KeyError(f"no run {run_id}")
    return run


def _pick_for_run(s: Session, run_id: int, jobs: Sequence[Job]) -> list[_Picked]:
    """Each job with the attempt the run shows (see the module doc) and its measurements."""
    job_ids = [j.id for j in jobs]
    in_run: dict[int, int] = {}
    for chunk in _chunks(job_ids):
        rows = s.execute(
            select(JobAttempt.job_id, func.max(JobAttempt.attempt))
            .where(JobAttempt.run_id == run_id, JobAttempt.job_id.in_(chunk))
            .group_by(JobAttempt.job_id)
        ).all()
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
        yield items[i : i + size]


def _bandwidths(s: Session, keys: set[str | None]) -> dict[str, float | None]:
    keys = {k for k in keys if k}
    if not keys:
        return {}
    return dict(
        s.execute(
            select(Device.hardware_key, Device.copy_bandwidth_gbs).where(Device.hardware_key.in_(sorted(keys)))
        ).all()
    )


def _gpu_types(s: Session, keys: set[str | None]) -> dict[str, str]:
    keys = {k for k in keys if k}
    if not keys:
        return {}
    return dict(
        s.execute(select(Device.hardware_key, Device.gpu_type).where(Device.hardware_key.in_(sorted(keys)))).all()
    )


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
    }


def list_runs(src: Source, limit: int = 50) -> list[dict[str, Any]]:
    """The newest runs first, with how many jobs each comprised."""
    n_jobs = select(RunJob.run_id, func.count().label("n")).group_by(RunJob.run_id).subquery()
    with _reading(src) as s:
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
        jobs = s.scalars(
            select(Job)
            .join(RunJob, RunJob.job_id == Job.id)
            .where(RunJob.run_id == run_id, Job.kind.in_(("correctness", "micro")))
            .order_by(Job.kernel, Job.shape_key, Job.dtype, Job.kind, Job.id)
        ).all()
        picked = _pick_for_run(s, run_id, jobs)
        hw = {p.hardware_key for p in picked}
        bandwidth, gpu_type = _bandwidths(s, hw), _gpu_types(s, hw)
    correct_of = _correctness_lookup(picked)
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
                "correct": correct_of(p, impl) if p.job.kind == "micro" else p.correct(impl),
                "rel_err": p.value(impl, "rel_err"),
                "max_abs": p.value(impl, "max_abs"),
                "status": p.status,
                "error": p.error,
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
    candidates = [
        (t, name)
        for name in COMPILE_IMPLS
        if (t := p.value(name, "time_us")) is not None and correct_of(p, name) is not False
    ]
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


def history(
    src: Source,
    kernel: str,
    shape: Sequence[int] | str,
    dtype: str,
    impl: str,
    hardware_key: str | None = None,
    limit: int = 50,
    metric: str = "time_us",
) -> list[dict[str, Any]]:
    """The time series of one (kernel, shape, dtype, impl[, hardware key]) metric, newest last.

    Each point: value (the median for time metrics), samples (every repeat), unit, measured_at, run_id, commit,
    code_hash, run_started_at, job_key, attempt, hardware_key, node_id.  Only good attempts count.  For e2e
    metrics ``kernel`` names the model and ``impl`` the mode.  ``hardware_key=None`` mixes every device.
    """
    kind = catalogue.get(metric).kind
    query = (
        select(Measurement, JobAttempt, Job.key, Run.commit, Run.code_hash, Run.started_at)
        .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
        .join(Job, Job.id == Measurement.job_id)
        .join(Run, Run.id == JobAttempt.run_id)
        .where(
            *_name_filter(kind, kernel),
            Job.shape_key == shape_key(shape),
            Job.dtype == dtype,
            Measurement.impl == impl,
            Measurement.metric == metric,
            JobAttempt.status.in_(GOOD_STATUSES),
        )
    )
    query = query.where(Job.kind == kind)
    if hardware_key is not None:
        query = query.where(JobAttempt.hardware_key == hardware_key)
    query = query.order_by(_when().desc(), JobAttempt.id.desc()).limit(limit)
    with _reading(src) as s:
        rows = s.execute(query).all()
    points = [
        {
            "value": m.value,
            "samples": m.samples,
            "unit": m.unit,
            "measured_at": a.started_at or a.recorded_at,
            "recorded_at": a.recorded_at,
            "run_id": a.run_id,
            "commit": commit,
            "code_hash": code_hash,
            "run_started_at": run_started,
            "job_key": key,
            "attempt": a.attempt,
            "hardware_key": a.hardware_key,
            "node_id": a.node_id,
        }
        for m, a, key, commit, code_hash, run_started in rows
    ]
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
        latest_correct = {
            (r["kernel"], r["shape_key"], r["dtype"], r["hardware_key"], r["impl"]): r
            for r in _latest_points(s, "correctness", "correct", kernel, hardware_key)
        }
        pairs = {(r["job_id"], r["attempt"]) for r in latest_time}
        metrics: dict[tuple[int, int], dict[tuple[str, str], float | None]] = defaultdict(dict)
        for chunk in _chunks(sorted({job_id for job_id, _ in pairs})):
            for m in s.scalars(
                select(Measurement).where(Measurement.job_id.in_(chunk), Measurement.metric.in_(MICRO_METRICS))
            ):
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
        correct = (
            (own >= 0.5)
            if own is not None
            else (None if verdict is None or verdict["value"] is None else verdict["value"] >= 0.5)
        )
        gbs, kernel_gbs = values.get((impl, "gbs")), values.get((impl, "kernel_gbs"))
        bw = bandwidth.get(r["hardware_key"] or "")
        rows.append(
            {
                "kernel": r["kernel"],
                "shape": r["shape"],
                "dtype": r["dtype"],
                "impl": impl,
                "hardware_key": r["hardware_key"],
                "gpu_type": gpu_type.get(r["hardware_key"] or ""),
                "median_us": r["value"],
                "iqr_us": values.get((impl, "iqr_us")),
                "graph_time_us": values.get((impl, "graph_time_us")),
                "kernel_time_us": values.get((impl, "kernel_time_us")),
                "gbs": gbs,
                "kernel_gbs": kernel_gbs,
                "pct_of_ceiling": _pct(gbs, bw),
                "kernel_pct_of_ceiling": _pct(kernel_gbs, bw),
                "speedup_vs_eager": None
                if correct is False
                else _ratio(values.get((BASELINE_IMPL, "time_us")), r["value"]),
                "correct": correct,
                "measured_at": r["measured_at"],
                "run_id": r["run_id"],
                "commit": r["commit"],
                "job_id": r["job_id"],
                "job_key": r["job_key"],
                "attempt": r["attempt"],
            }
        )
    rows.sort(key=lambda x: (x["kernel"] or "", x["shape"], x["dtype"], x["hardware_key"] or "", x["impl"]))
    return rows


def _latest_points(
    s: Session, kind: str, metric: str, name: str | None, hardware_key: str | None
) -> list[dict[str, Any]]:
    """The newest good measurement of ``metric`` per (name, shape, dtype, hardware key, impl)."""
    rank = (
        func.row_number()
        .over(
            partition_by=(Job.kernel, Job.model, Job.shape_key, Job.dtype, JobAttempt.hardware_key, Measurement.impl),
            order_by=(_when().desc(), JobAttempt.id.desc()),
        )
        .label("rank")
    )
    ranked = (
        select(Measurement.id.label("measurement_id"), rank)
        .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
        .join(Job, Job.id == Measurement.job_id)
        .where(
            Job.kind == kind,
            Measurement.metric == metric,
            JobAttempt.status.in_(GOOD_STATUSES),
            *_name_filter(kind, name),
        )
    )
    if hardware_key is not None:
        ranked = ranked.where(JobAttempt.hardware_key == hardware_key)
    ranked = ranked.subquery()
    query = (
        select(Measurement, JobAttempt, Job, Run.commit)
        .join(ranked, ranked.c.measurement_id == Measurement.id)
        .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
        .join(Job, Job.id == Measurement.job_id)
        .join(Run, Run.id == JobAttempt.run_id)
        .where(ranked.c.rank == 1)
    )
    return [
        {
            "kernel": job.kernel if kind != "e2e" else job.model,
            "shape": list(job.shape or []),
            "shape_key": job.shape_key,
            "dtype": job.dtype,
            "hardware_key": a.hardware_key,
            "impl": m.impl,
            "value": m.value,
            "samples": m.samples,
            "measured_at": a.started_at or a.recorded_at,
            "run_id": a.run_id,
            "commit": commit,
            "job_id": job.id,
            "job_key": job.key,
            "attempt": a.attempt,
        }
        for m, a, job, commit in s.execute(query).all()
    ]


# -- compiled machine code (isa jobs) ------------------------------------------------------------------------
ISA_METRICS = (
    "vgprs",
    "agprs",
    "sgprs",
    "registers",
    "vgpr_spills",
    "sgpr_spills",
    "spill_store_bytes",
    "spill_load_bytes",
    "scratch_bytes",
    "lds_bytes",
    "occupancy_waves",
    "code_bytes",
    "load_min_bits",
    "store_min_bits",
    "loads_b128",
    "loads_b64",
    "loads_b32",
    "loads_b16",
    "stores_b128",
    "stores_b64",
    "stores_b32",
    "stores_b16",
    "transcendentals",
    "conversions",
    "instructions",
    "launches",
    "isa_compile_s",
    "est_min_time_us",
    "est_min_time_copy_us",
)


def isa_results(src: Source, run_id: int) -> list[dict[str, Any]]:
    """One row per isa job of a run: what the kernel compiled to for a target architecture (workers/isa.py).

    Keys: run_id, job_id, job_key, kernel, shape, dtype, arch, hardware_key, gpu_type, the ISA_METRICS (None where
    the target does not report one: VGPRs and occupancy on AMD, registers and spill bytes on NVIDIA), status, error.
    ``est_min_time_us`` is an estimate (the byte model at the target's published bandwidth), not a timing.
    """
    with _reading(src) as s:
        _run_or_raise(s, run_id)
        jobs = s.scalars(
            select(Job)
            .join(RunJob, RunJob.job_id == Job.id)
            .where(RunJob.run_id == run_id, Job.kind == "isa")
            .order_by(Job.kernel, Job.shape_key, Job.dtype, Job.id)
        ).all()
        picked = _pick_for_run(s, run_id, jobs)
        gpu_type = _gpu_types(s, {p.hardware_key for p in picked})
    return [
        {
            "run_id": run_id,
            "job_id": p.job.id,
            "job_key": p.job.key,
            "kernel": p.job.kernel,
            "shape": list(p.job.shape or []),
            "dtype": p.job.dtype,
            "arch": str(((p.job.spec or {}).get("params") or {}).get("arch", "")),
            "hardware_key": p.hardware_key,
            "gpu_type": gpu_type.get(p.hardware_key or ""),
            **{m: p.value("triton", m) for m in ISA_METRICS},
            "status": p.status,
            "error": p.error,
        }
        for p in picked
    ]


def isa_history(src: Source, kernel: str | None = None, limit: int = 5000) -> list[dict[str, Any]]:
    """Every good isa result (newest first, at most ``limit``): what each kernel compiled to per target architecture
    over commits.  Keys: kernel, shape_key, dtype, arch, run_id, commit, measured_at, job_key and the ISA_METRICS
    (None where the target does not report one).  One statement."""
    query = (
        _good_attempt_join(
            select(
                Measurement.metric,
                Measurement.value,
                Job.kernel,
                Job.shape_key,
                Job.dtype,
                Job.spec,
                Job.key,
                JobAttempt.run_id,
                Run.commit,
                _when().label("at"),
            )
        )
        .join(Run, Run.id == JobAttempt.run_id)
        .where(
            Job.kind == "isa",
            Measurement.impl == "triton",
            Measurement.metric.in_(ISA_METRICS),
            JobAttempt.status.in_(GOOD_STATUSES),
        )
        .order_by(_when().desc(), JobAttempt.id.desc())
    )
    if kernel is not None:
        query = query.where(Job.kernel == kernel)
    rows: dict[tuple, dict[str, Any]] = {}
    with _reading(src) as s:
        for metric, value, k, skey, dtype, spec, key, run_id, commit, at in s.execute(query):
            row = rows.get((key, run_id))
            if row is None:
                if len(rows) >= limit:
                    continue
                row = rows[(key, run_id)] = {
                    "kernel": k,
                    "shape_key": skey,
                    "dtype": dtype,
                    "arch": str(((spec or {}).get("params") or {}).get("arch", "")),
                    "run_id": run_id,
                    "commit": commit,
                    "measured_at": at,
                    "job_key": key,
                    **dict.fromkeys(ISA_METRICS),
                }
            row[metric] = value
    return list(rows.values())


# -- devices, fleet -------------------------------------------------------------------------------------------
def devices(src: Source) -> list[dict[str, Any]]:
    with _reading(src) as s:
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
    rehearsal node's marked as such ("rehearsal (rehearsal; really h200)": workers/rehearsal.py); ``rehearsal_of``
    its real type (None for a real node)."""
    with _reading(src) as s:
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
    with _reading(src) as s:
        out = {}
        for gpu_type, info in s.execute(select(Device.gpu_type, Device.info)).all():
            real = ((info or {}).get("extra") or {}).get(rehearsal.EXTRA_KEY)
            if real:
                out[gpu_type] = real
        return out


# -- end to end, profiles, artifacts --------------------------------------------------------------------------
def e2e_results(src: Source, run_id: int | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """One row per (e2e job, mode): for the jobs of ``run_id``, or else the newest attempts of every e2e job
    (newest first, at most ``limit`` jobs).

    Keys: run_id, job_id, job_key, attempt, model, shape, dtype, hardware_key, gpu_type, mode, the E2E_METRICS,
    speedup_vs_eager (eager ms_per_step / this mode's), floor_ms, rest_ms and over_floor_ms (the device floor from
    the mode's profile: orchestrator.store.e2e_anchors.floor_figures), not_run (why the job did not run the mode:
    the worker's ``details["skipped"]``; None when it ran), mode_error (the mode's error, if it failed), status,
    error, measured_at.  Anchors and speed-ups by kind: e2e_comparisons(rows).
    """
    with _reading(src) as s:
        if run_id is not None:
            _run_or_raise(s, run_id)
            jobs = s.scalars(
                select(Job)
                .join(RunJob, RunJob.job_id == Job.id)
                .where(RunJob.run_id == run_id, Job.kind == "e2e")
                .order_by(Job.model, Job.shape_key, Job.dtype, Job.id)
            ).all()
            picked = _pick_for_run(s, run_id, jobs)
        else:
            jobs = s.scalars(
                select(Job)
                .where(Job.kind == "e2e", Job.attempts > 0)
                .order_by(Job.started_at.desc().nulls_last(), Job.id.desc())
                .limit(limit)
            ).all()
            picked = _load_picked(s, jobs, {j.id: j.attempts for j in jobs})
        gpu_type = _gpu_types(s, {p.hardware_key for p in picked})
    rows = []
    for p in picked:
        planned = [str(m) for m in (p.job.spec or {}).get("impls") or []]
        measured = {impl for impl, _ in p.metrics}
        modes = [m for m in MODES if m in measured or m in planned]
        modes += [m for m in planned if m not in modes] + sorted(measured - set(modes) - set(planned))
        eager_ms = p.value("eager", "ms_per_step")
        details = (p.attempt.details if p.attempt else None) or {}
        profile = details.get("profile") or {}
        for mode in modes:
            row = {
                "run_id": p.attempt.run_id if p.attempt else run_id,
                "job_id": p.job.id,
                "job_key": p.job.key,
                "attempt": p.attempt.attempt if p.attempt else None,
                "model": p.job.model,
                "shape": list(p.job.shape or []),
                "dtype": p.job.dtype,
                "hardware_key": p.hardware_key,
                "gpu_type": gpu_type.get(p.hardware_key or ""),
                "mode": mode,
                **{metric: p.value(mode, metric) for metric in E2E_METRICS},
                "status": p.status,
                "error": p.error,
                "measured_at": (p.attempt.started_at or p.attempt.recorded_at) if p.attempt else None,
            }
            row["speedup_vs_eager"] = _ratio(eager_ms, row["ms_per_step"])
            classes = {c: v.get("ms") for c, v in ((profile.get(mode) or {}).get("classes") or {}).items()}
            row.update(floor_figures(row["ms_per_step"], classes))
            row["not_run"] = (details.get("skipped") or {}).get(mode)
            row["mode_error"] = (details.get("errors") or {}).get(mode)
            rows.append(row)
    return rows


def e2e_comparisons(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each injected mode beside the best torch.compile anchor of its own kind (CUDA graphs against CUDA graphs,
    plain calls against plain calls; orchestrator.store.e2e_anchors), per job of e2e_results() or e2e_view() rows.

    One dict per comparison: job_id, kind (``graphs`` | ``plain``), kind_label, anchor, anchor_ms, mode (None:
    the kind has an anchor but no injected mode ran), ms, speedup (anchor_ms / ms)."""
    flat = [
        {
            "job_id": r["job_id"],
            "mode": r.get("mode"),
            "ms_per_step": r["metrics"].get("ms_per_step") if "metrics" in r else r.get("ms_per_step"),
            "correct": r["metrics"].get("correct") if "metrics" in r else r.get("correct"),
        }
        for r in rows
    ]
    out = []
    for job, comps in e2e_anchors.job_comparisons(flat).items():
        for c in comps:
            out.append({"job_id": job, "kind_label": e2e_anchors.KIND_LABELS[c.kind], **c.as_dict()})
    return out


def _job_attempt(s: Session, job: int | str, attempt: int | None) -> tuple[Job, JobAttempt] | None:
    row = s.get(Job, job) if isinstance(job, int) else s.scalars(select(Job).where(Job.key == job)).one_or_none()
    if row is None:
        raise KeyError(f"no job {job!r}")
    number = attempt if attempt is not None else row.attempts
    found = s.scalars(select(JobAttempt).where(JobAttempt.job_id == row.id, JobAttempt.attempt == number)).one_or_none()
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
        rows = s.execute(
            select(Artifact.id, Artifact.kind, Artifact.name, Artifact.path, Artifact.size, Artifact.blob.is_not(None))
            .where(Artifact.job_id == job.id, Artifact.attempt == a.attempt)
            .order_by(Artifact.id)
        ).all()
    return [
        {"id": i, "kind": k, "name": n, "path": p, "size": size, "stored": "blob" if has_blob else "path"}
        for i, k, n, p, size, has_blob in rows
    ]


def artifact_data(src: Source, artifact_id: int) -> bytes | None:
    """The stored bytes of one artifact; None when it is kept as a path on a node."""
    with _reading(src) as s:
        row = s.get(Artifact, artifact_id)
        if row is None:
            raise KeyError(f"no artifact with id {artifact_id}")
        return row.blob


# -- regressions ----------------------------------------------------------------------------------------------
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


def _series(
    s: Session,
    metric: str,
    name: str | None,
    hardware_key: str | None,
    names: set[str | None] | None = None,
    *,
    shape: Sequence[int] | str | None = None,
    dtype: str | None = None,
    impl: str | None = None,
) -> dict[tuple, list[dict[str, Any]]]:
    """Every good point of ``metric`` by series (name, shape_key, dtype, impl, hardware_key), oldest first."""
    kind = catalogue.get(metric).kind
    name_col = Job.model if kind == "e2e" else Job.kernel
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
            Job.kind == kind,
            Measurement.metric == metric,
            JobAttempt.status.in_(GOOD_STATUSES),
            *_name_filter(kind, name),
        )
        .order_by(_when(), JobAttempt.id)
    )
    if hardware_key is not None:
        query = query.where(JobAttempt.hardware_key == hardware_key)
    if names is not None:
        query = query.where(name_col.in_(sorted(n for n in names if n is not None)))
    if shape is not None:
        query = query.where(Job.shape_key == shape_key(shape))
    if dtype is not None:
        query = query.where(Job.dtype == dtype)
    if impl is not None:
        query = query.where(Measurement.impl == impl)
    series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for (
        impl,
        value,
        samples,
        run_id,
        attempt,
        hw,
        started,
        recorded,
        nm,
        shape,
        skey,
        dtype,
        key,
        commit,
        details,
    ) in s.execute(query).all():
        samples = repeats(samples) or ([value] if value is not None else [])
        series[(nm, skey, dtype, impl, hw)].append(
            {
                "value": value,
                "samples": _finite(samples),  # a float array once: the rule reads each point's repeats many times
                "run_id": run_id,
                "attempt": attempt,
                "measured_at": started or recorded,
                "shape": list(shape or []),
                "job_key": key,
                "commit": commit,
                "pick": autotune_pick(repeats(details), impl),
            }
        )
    return series


def autotune_pick(details: Mapping[str, Any] | None, impl: str) -> str | None:
    """The signature of the kernel(s) an implementation's autotuner picked in one job (workers/micro.py stores
    ``details["autotune"][impl]["pick"]``); None when it was not autotuned or not recorded."""
    entry = ((details or {}).get("autotune") or {}).get(impl) or {}
    return entry.get("pick") or None


def is_cpu_device(hardware_key: str | None) -> bool:
    """Timings measured on a CPU: Triton ran in its interpreter (workers.spec.DeviceInfo: vendor ``cpu``)."""
    return bool(hardware_key) and str(hardware_key).split("/", 1)[0] == "cpu"


def _rule_point(p: Mapping[str, Any]) -> Point:
    return Point(p["samples"], p["value"], p.get("pick"))


def _last_per_run(points: Sequence[dict[str, Any]], run_ids: Sequence[int]) -> list[dict[str, Any]]:
    last = {p["run_id"]: p for p in points if p["run_id"] in run_ids}
    return [last[r] for r in run_ids if r in last]


def is_autotuned(impl: str) -> bool:
    """The implementation's kernel is chosen by an autotuner run in each process (torch.compile max-autotune)."""
    return impl in AUTOTUNED_IMPLS


def judge_plan(
    key: tuple,
    reference: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    history: Sequence[Mapping[str, Any]],
    *,
    metric: str = "time_us",
    spread: tuple[float | None, int] | None = None,
    threshold: float | Mapping[str, float] = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    z: float = DEFAULT_Z,
) -> dict[str, Any] | None:
    """The regression rule's verdict on one series' ``current`` points (dicts of :func:`_series`) against its
    ``reference`` points, as the flag dict :func:`regression_report` lists (improvements included); None when the
    rule reports nothing.  The regressions command and the dashboard's Trends page both judge through this."""
    name, _skey, dtype, impl, hw = key
    limit = threshold_for(name, threshold)
    v = judge(
        [_rule_point(p) for p in reference],
        [_rule_point(p) for p in current],
        history=[_rule_point(p) for p in history],
        spread=spread,
        threshold=limit,
        alpha=alpha,
        z=z,
        higher_is_worse=not catalogue.higher_is_better(metric),
        autotuned=is_autotuned(impl),
    )
    if v is None:
        return None
    newest = current[-1]
    return {
        "kernel": name,
        "shape": newest["shape"],
        "dtype": dtype,
        "impl": impl,
        "hardware_key": hw,
        "device": "cpu" if is_cpu_device(hw) else "gpu",
        "metric": metric,
        "status": v.status,
        "verdict": verdict_words(v.status, v.direction, v.z),
        "reason": v.reason,
        "direction": v.direction,
        "change": v.change,
        "reference_median": v.reference_median,
        "current_median": v.current_median,
        "p_value": v.p_value,
        "noise": v.noise,
        "noise_dof": v.noise_dof,
        "z": v.z,
        "threshold": limit,
        "run_id": newest["run_id"],
        "commit": newest["commit"],
        "job_key": newest["job_key"],
        "reference_runs": [p["run_id"] for p in reference],
        "compared": [
            {"run_id": p["run_id"], "commit": p["commit"], "change": c.change, "p_value": c.p_value}
            for p, c in zip(current, v.compared)
        ],
        "pick": newest.get("pick"),
        "reference_pick": reference[-1].get("pick"),
    }


def history_plan(points: Sequence[dict[str, Any]], end: int, *, window: int, consecutive: int, noise_window: int):
    """Against history, the series cut after point ``end``: (reference, current, history) as the rule takes them."""
    upto = points[: end + 1]
    before = upto[:-consecutive]
    return before[-window:], upto[-consecutive:], before[-max(noise_window, window) :]


def regression_report(
    src: Source,
    run_ids: int | Sequence[int] | None = None,
    *,
    baseline_run_ids: int | Sequence[int] | None = None,
    metric: str = "time_us",
    threshold: float | Mapping[str, float] = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    window: int = DEFAULT_WINDOW,
    consecutive: int = DEFAULT_CONSECUTIVE,
    noise_window: int = DEFAULT_NOISE_WINDOW,
    z: float = DEFAULT_Z,
    kernel: str | None = None,
    hardware_key: str | None = None,
    include_improvements: bool = False,
    include_cpu: bool = False,
) -> dict[str, Any]:
    """Judge ``metric`` per (kernel, shape, dtype, impl, hardware key) by regression_rule.py.

    * ``baseline_run_ids`` given: the points of ``run_ids`` (one per run and series) against those of the
      baseline runs.  The between-run spread comes from the series' earlier points and from the runs of each side
      (two runs per side), pooled over the series of the same kernel, implementation and device.
    * otherwise, against history: each series is cut at the point of ``run_ids`` (one run; the newest point of
      every series when None); its last ``consecutive`` points are judged against the ``window`` points before
      them, the spread from the ``noise_window`` points before them.

    Series measured on a CPU (interpreter timings) are judged only with ``include_cpu``.  Returns ``flags``
    (regression_rule verdicts as dicts: kernel, shape, dtype, impl, hardware_key, device ("gpu"/"cpu"), metric,
    status ("confirmed"/"unconfirmed"/"kernel_changed"), reason, direction, change, reference_median,
    current_median, p_value, noise, noise_dof, z, threshold, run_id, commit, job_key, reference_runs, compared,
    pick, reference_pick), ``series`` (how many were judged), ``cpu_series`` (CPU series left out), ``runs``,
    ``baseline_runs``.  Raises KeyError for an unknown run id, ValueError for a bad combination.
    """
    runs = [run_ids] if isinstance(run_ids, int) else list(run_ids or [])
    baselines = [baseline_run_ids] if isinstance(baseline_run_ids, int) else list(baseline_run_ids or [])
    if baselines and not runs:
        raise ValueError("a baseline needs the run(s) to compare with it")
    if len(runs) > 1 and not baselines:
        raise ValueError("several runs are compared with a baseline (--baseline); against history give one run")
    if set(runs) & set(baselines):
        raise ValueError(f"run(s) {sorted(set(runs) & set(baselines))} on both sides of the comparison")
    with _reading(src) as s:
        names = None
        for r in runs + baselines:
            _run_or_raise(s, r)
        if runs:
            name_col = Job.model if catalogue.get(metric).kind == "e2e" else Job.kernel
            names = set(
                s.scalars(
                    select(name_col).distinct().join(RunJob, RunJob.job_id == Job.id).where(RunJob.run_id.in_(runs))
                )
            )
        series = _series(s, metric, kernel, hardware_key, names)
    cpu_series = sum(1 for key in series if is_cpu_device(key[4]))
    if not include_cpu:
        series = {k: v for k, v in series.items() if not is_cpu_device(k[4])}
    plans: list[tuple[tuple, list, list, list]] = []  # (series key, reference, current, history)
    for key, points in sorted(series.items(), key=lambda kv: repr(kv[0])):
        if baselines:
            current, reference = _last_per_run(points, runs), _last_per_run(points, baselines)
            if not current or not reference:
                continue
            position = {id(p): i for i, p in enumerate(points)}  # by identity: points hold arrays, not comparable
            first = min(position[id(p)] for p in reference)
            earlier = [p for p in points[:first] if p["run_id"] not in runs]
            history = earlier[-noise_window:] + sorted(reference, key=lambda p: position[id(p)])
            plans.append((key, reference, current, history))
        else:
            last = len(points) - 1
            if runs:
                last = max((i for i, p in enumerate(points) if p["run_id"] == runs[0]), default=None)
                if last is None:
                    continue
            plans.append(
                (key, *history_plan(points, last, window=window, consecutive=consecutive, noise_window=noise_window))
            )
    spreads: dict[tuple, tuple[float | None, int]] = {}
    if baselines:  # few points per series: pool the spread over the series of the same kernel, impl and device
        groups: dict[tuple, list[list[float]]] = defaultdict(list)
        for (name, _skey, _dtype, impl, hw), reference, current, _history in plans:
            for side in (reference, current):
                levels = [lv for lv in (_rule_point(p).level() for p in side) if lv is not None]
                if len(levels) >= 2:
                    groups[(name, impl, hw)].append(levels)
        spreads = {k: between_run_scale(groups=g) for k, g in groups.items()}
    flags = []
    judged = 0
    for key, reference, current, history in plans:
        if not reference or len(current) < (1 if baselines else consecutive):
            continue
        judged += 1
        flag = judge_plan(
            key,
            reference,
            current,
            history,
            metric=metric,
            spread=spreads.get((key[0], key[3], key[4])),
            threshold=threshold,
            alpha=alpha,
            z=z,
        )
        if flag is not None and (flag["direction"] == "regression" or include_improvements):
            flags.append(flag)
    return {
        "flags": flags,
        "series": judged,
        "cpu_series": 0 if include_cpu else cpu_series,
        "runs": runs,
        "baseline_runs": baselines,
        "metric": metric,
    }


def regressions(
    src: Source,
    run_id: int | None = None,
    *,
    baseline_run_id: int | Sequence[int] | None = None,
    metric: str = "time_us",
    threshold: float | Mapping[str, float] = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    window: int = DEFAULT_WINDOW,
    consecutive: int = DEFAULT_CONSECUTIVE,
    kernel: str | None = None,
    hardware_key: str | None = None,
    include_improvements: bool = False,
    include_cpu: bool = False,
) -> list[dict[str, Any]]:
    """The flags of :func:`regression_report` for one run (against history or the baseline run(s))."""
    if baseline_run_id is not None and run_id is None:
        raise ValueError("baseline_run_id needs run_id: the run to compare with it")
    return regression_report(
        src,
        run_id,
        baseline_run_ids=baseline_run_id,
        metric=metric,
        threshold=threshold,
        alpha=alpha,
        window=window,
        consecutive=consecutive,
        kernel=kernel,
        hardware_key=hardware_key,
        include_improvements=include_improvements,
        include_cpu=include_cpu,
    )["flags"]


# -- dashboard and export views -------------------------------------------------------------------------------
# The dashboard's pages and ``python -m orchestrator export`` read through these.  Each is a bounded number of
# SQL statements (grouped or filtered in the database); Python only shapes the rows that come back.
TIME_READINGS = ("time_us", "kernel_time_us", "graph_time_us")  # per call / kernel time / launch-free graph


def _good_attempt_join(query):
    return (
        query.select_from(Measurement)
        .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
        .join(Job, Job.id == Measurement.job_id)
    )


def store_counts(src: Source) -> dict[str, int]:
    """How much the store holds: runs, jobs, attempts, measurements, devices, nodes."""
    with _reading(src) as s:
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


def newest_micro_runs(src: Source) -> dict[tuple[str, str], tuple[Any, int]]:
    """(kernel, gpu type) -> (when, run id) of the newest run with a good micro attempt of that kernel on that GPU
    type.  One grouped statement over attempts (never over measurements)."""
    with _reading(src) as s:
        rows = s.execute(
            select(Job.kernel, Device.gpu_type, JobAttempt.run_id, func.max(_when()))
            .select_from(JobAttempt)
            .join(Job, Job.id == JobAttempt.job_id)
            .join(Device, Device.hardware_key == JobAttempt.hardware_key)
            .where(Job.kind == "micro", JobAttempt.status.in_(GOOD_STATUSES))
            .group_by(Job.kernel, Device.gpu_type, JobAttempt.run_id)
        ).all()
    newest: dict[tuple[str, str], tuple[Any, int]] = {}
    for kernel, gpu, run_id, at in rows:
        if (kernel, gpu) not in newest or (at, run_id) > newest[(kernel, gpu)]:
            newest[(kernel, gpu)] = (at, run_id)
    return newest


def micro_choices(src: Source, kernel: str | None = None) -> dict[str, Any]:
    """The values the micro-benchmark filters offer: kernels, shapes, dtypes, impls, gpu_types, and
    ``shapes_of`` / ``dtypes_of`` (kernel -> its shapes / dtypes).  ``impls``: those ``kernel`` was measured with
    (every run), or without a kernel those of the newest run of each kernel x GPU type (a bounded read)."""
    with _reading(src) as s:
        keys = s.execute(
            select(Job.kernel, Job.shape_key, Job.dtype).distinct().where(Job.kind == "micro", Job.kernel.is_not(None))
        ).all()
        impls_q = (
            select(Measurement.impl)
            .distinct()
            .join(JobAttempt, (JobAttempt.job_id == Measurement.job_id) & (JobAttempt.attempt == Measurement.attempt))
            .where(Measurement.metric == "time_us")
        )
        if kernel is not None:
            impls_q = impls_q.join(Job, Job.id == Measurement.job_id).where(Job.kind == "micro", Job.kernel == kernel)
        else:
            runs = sorted({run_id for _, run_id in newest_micro_runs(s).values()})
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


def _newest_micro_values(src: Source, reading: str) -> tuple[dict, dict, dict]:
    """What the Overview's cells are made of: (newest_micro_runs, (kernel, gpu type, job id) -> (impl, metric) ->
    value of ``reading`` and ``correct`` from that newest run, run id -> commit).  ``reading``: one of
    TIME_READINGS."""
    if reading not in TIME_READINGS:
        raise ValueError(f"reading must be one of {', '.join(TIME_READINGS)}, got {reading!r}")
    with _reading(src) as s:
        chosen = newest_micro_runs(s)
        if not chosen:
            return {}, {}, {}
        runs = sorted({r for _, r in chosen.values()})
        rows = s.execute(
            _good_attempt_join(
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
                Job.kind == "micro",
                Measurement.metric.in_((reading, "correct")),
                JobAttempt.run_id.in_(runs),
                Job.kernel.in_(sorted({k for k, _ in chosen})),
                JobAttempt.status.in_(GOOD_STATUSES),
            )
        ).all()
        commits = dict(s.execute(select(Run.id, Run.commit).where(Run.id.in_(runs))).all())
    per_job: dict[tuple, dict[tuple[str, str], float | None]] = defaultdict(dict)
    for kernel, gpu, run_id, job_id, mimpl, metric, value in rows:
        if chosen.get((kernel, gpu), (None, None))[1] == run_id:
            per_job[(kernel, gpu, job_id)][(mimpl, metric)] = value
    return chosen, per_job, commits


def newest_micro_cells(src: Source, reading: str = "time_us") -> list[dict[str, Any]]:
    """Every implementation's ``reading`` per kernel x GPU type, from the newest run that measured that kernel on
    that GPU type (the runs speedup_matrix reads): one row per cell with kernel, gpu_type, reading, run_id, commit,
    measured_at, jobs (the job ids of the cell), times (impl -> job id -> value) and correct (impl -> False when it
    failed correctness in any job of the cell, True when it passed in one at least, else None)."""
    chosen, per_job, commits = _newest_micro_values(src, reading)
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for (kernel, gpu, job), v in per_job.items():
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
    """Speed-up of ``impl`` per kernel x GPU type, from the newest run that measured that kernel on that GPU type.

    ``reading`` is one of TIME_READINGS.  Per (job = kernel, shape, dtype): speed-up = eager's reading / impl's,
    and against the faster of compile / compile_max that passed correctness; a cell is the geometric mean over
    the run's shapes and dtypes.  A cell where ``impl`` failed correctness in any of them has ``correct`` False
    and no speed-up.  Keys: kernel, gpu_type, run_id, commit, measured_at, n_jobs, speedup_vs_eager,
    speedup_vs_compile, compile_baseline, correct, min_speedup_vs_eager, max_speedup_vs_eager.
    """
    chosen, per_job, commits = _newest_micro_values(src, reading)
    if not chosen:
        return []
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for (kernel, gpu, _job), v in per_job.items():
        if (impl, reading) not in v and (impl, "correct") not in v:
            continue  # this job did not run ``impl``
        cell = cells.setdefault(
            (kernel, gpu), {"eager": [], "compile": [], "correct": True, "n": 0, "baselines": set()}
        )
        cell["n"] += 1
        if v.get((impl, "correct")) is not None and v[(impl, "correct")] < 0.5:
            cell["correct"] = False
        mine = v.get((impl, reading))
        cell["eager"].append(_ratio(v.get((BASELINE_IMPL, reading)), mine))
        compiled = [
            (t, name)
            for name in COMPILE_IMPLS
            if (t := v.get((name, reading))) is not None
            and (v.get((name, "correct")) is None or v[(name, "correct")] >= 0.5)
        ]
        if compiled:
            best, name = min(compiled)
            cell["compile"].append(_ratio(best, mine))
            cell["baselines"].add(name)
    out = []
    for (kernel, gpu), cell in sorted(cells.items()):
        at, run_id = chosen[(kernel, gpu)]
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
                "speedup_vs_eager": _geomean(eager) if ok else None,
                "speedup_vs_compile": _geomean(comp) if ok else None,
                "compile_baseline": "/".join(sorted(cell["baselines"])) or None,
                "min_speedup_vs_eager": min(eager) if ok and eager else None,
                "max_speedup_vs_eager": max(eager) if ok and eager else None,
            }
        )
    return out


def _geomean(values: Sequence[float]) -> float | None:
    import math

    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def newest_micro_results(src: Source, kernel: str) -> list[dict[str, Any]]:
    """The newest good micro attempt of ``kernel`` per (shape, dtype, hardware key), one row per implementation.

    Keys: kernel, shape, shape_key, dtype, impl, hardware_key, gpu_type, copy_bandwidth_gbs, time_us,
    kernel_time_us, gbs, kernel_gbs, correct, run_id, commit, measured_at, job_key.  Two statements: a window over
    the kernel's attempts, then those attempts' measurements.
    """
    rank = (
        func.row_number()
        .over(
            partition_by=(Job.shape_key, Job.dtype, JobAttempt.hardware_key),
            order_by=(_when().desc(), JobAttempt.id.desc()),
        )
        .label("rank")
    )
    ranked = (
        select(JobAttempt.id.label("attempt_id"), rank)
        .select_from(JobAttempt)
        .join(Job, Job.id == JobAttempt.job_id)
        .where(Job.kind == "micro", Job.kernel == kernel, JobAttempt.status.in_(GOOD_STATUSES))
    ).subquery()
    wanted = ("time_us", "kernel_time_us", "gbs", "kernel_gbs", "correct")
    with _reading(src) as s:
        rows = s.execute(
            _good_attempt_join(
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
                    _when(),
                    Device.gpu_type,
                    Device.copy_bandwidth_gbs,
                    Run.commit,
                )
            )
            .join(ranked, (ranked.c.attempt_id == JobAttempt.id) & (ranked.c.rank == 1))
            .join(Run, Run.id == JobAttempt.run_id)
            .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
            .where(Measurement.metric.in_(wanted))
        ).all()
    out: dict[tuple, dict[str, Any]] = {}
    for impl, metric, value, shape, skey, dtype, key, hw, run_id, at, gpu, bw, commit in rows:
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
                "measured_at": at,
                "job_key": key,
                **{m: None for m in wanted if m != "correct"},
            },
        )
        row[metric] = (value >= 0.5 if value is not None else None) if metric == "correct" else value
    return sorted(out.values(), key=lambda r: (r["gpu_type"] or "", r["shape_key"], r["dtype"], r["impl"]))


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
) -> list[dict[str, Any]]:
    """Every good micro measurement of ``metric`` for one kernel (optionally one shape, dtype, impl, GPU type),
    oldest first, with eager's reading of the same job beside it and the implementation's own correctness.

    Keys per point: kernel, shape_key, dtype, impl, hardware_key, gpu_type, value, unit, samples, eager_value,
    correct, run_id, commit, measured_at, job_key, attempt.  One statement; ``limit`` bounds the newest points.
    ``with_samples=False``: samples None, the repeats not read (a reader that has them from elsewhere).
    """
    from sqlalchemy.orm import aliased

    eager = aliased(Measurement)
    own = aliased(Measurement)
    query = (
        _good_attempt_join(
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
                _when().label("at"),
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
        .outerjoin(
            own,
            (own.job_id == Measurement.job_id)
            & (own.attempt == Measurement.attempt)
            & (own.impl == Measurement.impl)
            & (own.metric == "correct"),
        )
        .where(
            Job.kind == "micro",
            Job.kernel == kernel,
            Measurement.metric == metric,
            JobAttempt.status.in_(GOOD_STATUSES),
        )
    )
    if shape is not None:
        query = query.where(Job.shape_key == shape_key(shape))
    if dtype is not None:
        query = query.where(Job.dtype == dtype)
    if impl is not None:
        query = query.where(Measurement.impl == impl)
    if gpu_type is not None:
        query = query.where(Device.gpu_type == gpu_type)
    query = query.order_by(_when().desc(), JobAttempt.id.desc()).limit(limit)
    with _reading(src) as s:
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
        ) in rows
    ]
    points.reverse()
    return points


def device_ceilings(src: Source) -> list[dict[str, Any]]:
    """Each device that has a measured copy bandwidth: hardware_key, gpu_type, name, copy_bandwidth_gbs."""
    with _reading(src) as s:
        rows = s.execute(
            select(Device.hardware_key, Device.gpu_type, Device.name, Device.copy_bandwidth_gbs)
            .where(Device.copy_bandwidth_gbs.is_not(None))
            .order_by(Device.gpu_type)
        ).all()
    return [{"hardware_key": k, "gpu_type": g, "name": n, "copy_bandwidth_gbs": bw} for k, g, n, bw in rows]


def e2e_view(src: Source, gpu_type: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The newest attempts of e2e jobs (newest first, at most ``limit`` jobs, optionally on one GPU type), one row
    per mode with every metric it recorded, the tolerance and the mode's profile breakdown (device ms per step
    by kernel class, ``gpu_busy_ms``) from the attempt's details.

    Keys: job_id, job_key, attempt, run_id, commit, model, shape_key, dtype, hardware_key, gpu_type, status,
    error, measured_at, mode, metrics (name -> value), units (name -> unit), tolerance, profile_classes (class ->
    ms per step), gpu_busy_ms, floor_ms, rest_ms, over_floor_ms (e2e_anchors.floor_figures), profile_top (rows).
    """
    newest = (
        select(JobAttempt.job_id, func.max(JobAttempt.attempt).label("attempt"))
        .join(Job, Job.id == JobAttempt.job_id)
        .where(Job.kind == "e2e")
    )
    if gpu_type is not None:
        newest = newest.join(Device, Device.hardware_key == JobAttempt.hardware_key).where(Device.gpu_type == gpu_type)
    newest = newest.group_by(JobAttempt.job_id).subquery()
    with _reading(src) as s:
        attempts = s.execute(
            select(JobAttempt, Job.key, Job.model, Job.shape_key, Job.dtype, Run.commit, Device.gpu_type)
            .join(newest, (newest.c.job_id == JobAttempt.job_id) & (newest.c.attempt == JobAttempt.attempt))
            .join(Job, Job.id == JobAttempt.job_id)
            .join(Run, Run.id == JobAttempt.run_id)
            .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
            .order_by(_when().desc(), JobAttempt.id.desc())
            .limit(limit)
        ).all()
        wanted = {(a.job_id, a.attempt) for a, *_ in attempts}
        metrics: dict[tuple[int, int], dict[str, dict[str, tuple[float | None, str]]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for chunk in _chunks(sorted({j for j, _ in wanted})):
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
    for a, key, model, skey, dtype, commit, gpu in attempts:
        details = a.details or {}
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
                    "model": model,
                    "shape_key": skey,
                    "dtype": dtype,
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
                }
            )
    return rows


def profile_jobs(src: Source, limit: int = 100) -> list[dict[str, Any]]:
    """The newest attempts of profile jobs, and of e2e jobs that recorded a profile or artifacts, newest first.

    Keys: job_id, job_key, attempt, kind, name (kernel or model), shape_key, dtype, gpu_type, run_id,
    measured_at, status, n_artifacts.
    """
    n_art = (
        select(Artifact.job_id, Artifact.attempt, func.count().label("n"))
        .group_by(Artifact.job_id, Artifact.attempt)
        .subquery()
    )
    newest = (
        select(JobAttempt.job_id, func.max(JobAttempt.attempt).label("attempt"))
        .join(Job, Job.id == JobAttempt.job_id)
        .where(Job.kind.in_(("profile", "e2e")))
        .group_by(JobAttempt.job_id)
        .subquery()
    )
    with _reading(src) as s:
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
            )
            .join(newest, (newest.c.job_id == JobAttempt.job_id) & (newest.c.attempt == JobAttempt.attempt))
            .join(Job, Job.id == JobAttempt.job_id)
            .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
            .outerjoin(n_art, (n_art.c.job_id == JobAttempt.job_id) & (n_art.c.attempt == JobAttempt.attempt))
            .order_by(_when().desc(), JobAttempt.id.desc())
            .limit(limit)
        ).all()
    out = []
    for a, key, kind, kernel, model, skey, dtype, gpu, n in rows:
        details = a.details or {}
        if kind == "e2e" and not details.get("profile") and not n:
            continue
        out.append(
            {
                "job_id": a.job_id,
                "job_key": key,
                "attempt": a.attempt,
                "kind": kind,
                "name": kernel if kind == "profile" else model,
                "shape_key": skey,
                "dtype": dtype,
                "gpu_type": gpu,
                "run_id": a.run_id,
                "measured_at": a.started_at or a.recorded_at,
                "status": a.status,
                "n_artifacts": int(n or 0),
                "modes": sorted(details.get("profile") or {}) if kind == "e2e" else [],
            }
        )
    return out


def e2e_profile(src: Source, job_id: int, attempt: int | None = None) -> dict[str, Any]:
    """mode -> the e2e attempt's profile breakdown (``details["profile"]``), newest attempt by default."""
    with _reading(src) as s:
        found = _job_attempt(s, job_id, attempt)
    return dict(((found[1].details or {}).get("profile") or {}) if found else {})


def run_outcomes(src: Source, limit: int = 100) -> list[dict[str, Any]]:
    """The newest runs with how many attempts each recorded per outcome (ok, incorrect, error, crashed,
    timed_out, lost, skipped, ...): list_runs' keys plus ``outcomes`` (status -> count) and ``device`` (the names
    of the devices its attempts ran on, as `python -m orchestrator runs` lists them; None when it recorded none)."""
    runs = list_runs(src, limit)
    if not runs:
        return runs
    with _reading(src) as s:
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
    """Attempts that did not end well (not ok / incorrect / skipped), newest first, with their error.

    Keys: run_id, job_id, job_key, attempt, kind, name, shape_key, dtype, status, error, node_id, gpu_type,
    measured_at.
    """
    query = (
        select(JobAttempt, Job.key, Job.kind, Job.kernel, Job.model, Job.shape_key, Job.dtype, Device.gpu_type)
        .join(Job, Job.id == JobAttempt.job_id)
        .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
        .where(JobAttempt.status.not_in(GOOD_STATUSES))
    )
    if run_id is not None:
        query = query.where(JobAttempt.run_id == run_id)
    with _reading(src) as s:
        rows = s.execute(query.order_by(JobAttempt.recorded_at.desc(), JobAttempt.id.desc()).limit(limit)).all()
    return [
        {
            "run_id": a.run_id,
            "job_id": a.job_id,
            "job_key": key,
            "attempt": a.attempt,
            "kind": kind,
            "name": model if kind == "e2e" else kernel,
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


EXPORT_COLUMNS = (
    "kind",
    "kernel",
    "model",
    "shape",
    "dtype",
    "impl",
    "target",
    "gpu_type",
    "hardware_key",
    "commit",
    "run_id",
    "job_key",
    "attempt",
    "status",
    "measured_at",
    "metric",
    "value",
    "unit",
)


def iter_measurements(
    src: Source, run_id: int | None = None, since: Any = None, batch: int = 5000
) -> Iterator[dict[str, Any]]:
    """Every measurement as one long-format row (EXPORT_COLUMNS), streamed from the database ``batch`` rows at
    a time (server-side cursor on PostgreSQL), ordered by measurement id.  ``run_id``: the attempts that run
    recorded; ``since``: attempts measured at or after that aware datetime."""
    query = (
        _good_attempt_join(
            select(
                Job.kind,
                Job.kernel,
                Job.model,
                Job.shape_key,
                Job.dtype,
                Measurement.impl,
                Job.target,
                Device.gpu_type,
                JobAttempt.hardware_key,
                Run.commit,
                JobAttempt.run_id,
                Job.key,
                JobAttempt.attempt,
                JobAttempt.status,
                _when(),
                Measurement.metric,
                Measurement.value,
                Measurement.unit,
            )
        )
        .join(Run, Run.id == JobAttempt.run_id)
        .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
    )
    if run_id is not None:
        query = query.where(JobAttempt.run_id == run_id)
    if since is not None:
        query = query.where(_when() >= since)
    query = query.order_by(Measurement.id).execution_options(yield_per=batch)
    with _reading(src) as s:
        for row in s.execute(query):
            yield dict(zip(EXPORT_COLUMNS, row))


def display_store_url(url: str) -> str:
    """The store URL for messages (password masked)."""
    from orchestrator.store.session import display_url

    try:
        return display_url(normalize_url(url))
    except ValueError:  # a URL that cannot be used is still named, without its password
        return display_url(url)


def open_read_only(url: str) -> Engine:
    """An engine that can only read the store at ``url`` (SQLite opened with ``mode=ro``, PostgreSQL sessions
    with ``default_transaction_read_only``), its schema checked: SchemaOutOfDate (naming ``python -m orchestrator
    db upgrade``) when it is not at this code's revision or does not exist.  Pass it as ``src`` to the readers
    above; nothing is created or migrated."""
    import sqlite3

    from sqlalchemy import create_engine, event, pool
    from sqlalchemy.engine import make_url

    from orchestrator.store.session import SQLITE_BUSY_TIMEOUT_S, is_sqlite, sqlite_path

    url = normalize_url(url)
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is None:
            raise ValueError(f"{url}: an in-memory SQLite database holds no results to read")
        if not path.exists():
            check_schema(get_engine(url), url)  # raises "does not exist yet", creating nothing
        uri = path.resolve().as_uri() + "?mode=ro"
        engine = create_engine(
            "sqlite://",
            poolclass=pool.QueuePool,
            creator=lambda: sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_S, check_same_thread=False),
        )

        @event.listens_for(engine, "connect")
        def _read_only(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA query_only=ON")
            cursor.close()
    else:
        parsed = make_url(url)
        options = (str(parsed.query.get("options", "")) + " -c default_transaction_read_only=on").strip()
        engine = create_engine(parsed.update_query_dict({"options": options}), pool_pre_ping=True)
    check_schema(engine, url)
    _schema_checked[engine] = True
    return engine


def profile_kernel_rows(src: Source, job_id: int | str, attempt: int | None = None) -> dict[str, list[dict]]:
    """implementation -> the per-kernel rows ({name, calls, total_ns, avg_ns, pct}) of a profile job's attempt
    (newest by default), as ``workers.profile`` records them in ``details["profile_rows"]``."""
    with _reading(src) as s:
        found = _job_attempt(s, job_id, attempt)
    rows = ((found[1].details or {}).get("profile_rows") if found else None) or {}
    if isinstance(rows, list):  # one list without implementations
        return {"": [dict(r) for r in rows]}
    return {str(impl): [dict(r) for r in rs or []] for impl, rs in rows.items()}


def store_url(explicit: str | None = None) -> str:
    """The store a reader opens: ``explicit``, else $KERNELFLEET_DB, else the default SQLite file (as a sweep)."""
    from orchestrator.store.session import resolve_url

    return resolve_url(explicit)


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
    return {
        "devices": names,
        "measured_from": min(starts) if starts else None,
        "measured_to": max(starts) if starts else None,
        "unavailable": {k: v for k, v in unavailable.items() if v},
    }
