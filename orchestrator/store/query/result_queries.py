"""Results by job: history of a kernel or model, the latest results, ISA facts, end-to-end rows and their
comparisons, profile rows and artifacts, and every measurement for ``export``.

A profile job's per-kernel rows are in ``details["profile_rows"] = [{name, calls, total_ns, avg_ns, pct}]``, its raw
files are artifacts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from orchestrator.stats import e2e_amdahl, e2e_anchors
from orchestrator.stats.e2e_anchors import floor_figures
from orchestrator.stats.e2e_setting import setting_label
from orchestrator.store.checks import INT32_MAX
from orchestrator.store.conditions import describe as describe_conditions
from orchestrator.store.conditions import plain_runs
from orchestrator.store.models import (
    Artifact,
    Device,
    Job,
    JobAttempt,
    Measurement,
    Run,
    shape_key,
)
from orchestrator.store.query.access import Source, chunks, read_session
from orchestrator.store.query.picked import (
    BASELINE_IMPL,
    E2E_METRICS,
    MICRO_METRICS,
    attempt_time,
    bandwidths_of,
    good_attempt_join,
    gpu_types_of,
    job_attempt,
    load_picked,
    name_filter,
    own_verdict,
    pct_of,
    pick_for_run,
    run_jobs,
    run_or_raise,
    safe_ratio,
)
from workers import kinds
from workers import metrics as catalogue
from workers.jobs.e2e.spec import MODES
from workers.kinds.correctness import NAME as CORRECTNESS
from workers.kinds.e2e import NAME as E2E
from workers.kinds.isa import NAME as ISA
from workers.kinds.micro import NAME as MICRO
from workers.spec import GOOD_STATUSES


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
            *name_filter(kind, kernel),
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
    query = query.order_by(attempt_time().desc(), JobAttempt.id.desc()).limit(limit)
    with read_session(src) as s:
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
    with read_session(src) as s:
        latest_time = _latest_points(s, MICRO, "time_us", kernel, hardware_key)
        latest_correct = {
            (r["kernel"], r["shape_key"], r["dtype"], r["hardware_key"], r["impl"]): r
            for r in _latest_points(s, CORRECTNESS, "correct", kernel, hardware_key)
        }
        pairs = {(r["job_id"], r["attempt"]) for r in latest_time}
        metrics: dict[tuple[int, int], dict[tuple[str, str], float | None]] = defaultdict(dict)
        for chunk in chunks(sorted({job_id for job_id, _ in pairs})):
            for m in s.scalars(
                select(Measurement).where(Measurement.job_id.in_(chunk), Measurement.metric.in_(MICRO_METRICS))
            ):
                if (m.job_id, m.attempt) in pairs:
                    metrics[(m.job_id, m.attempt)][(m.impl, m.metric)] = m.value
        hw = {r["hardware_key"] for r in latest_time}
        bandwidth, gpu_type = bandwidths_of(s, hw), gpu_types_of(s, hw)
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
                "pct_of_ceiling": pct_of(gbs, bw),
                "kernel_pct_of_ceiling": pct_of(kernel_gbs, bw),
                "speedup_vs_eager": None
                if correct is False
                else safe_ratio(values.get((BASELINE_IMPL, "time_us")), r["value"]),
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
            order_by=(attempt_time().desc(), JobAttempt.id.desc()),
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
            *name_filter(kind, name),
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
            "kernel": job.model if kinds.runs_model(kind) else job.kernel,
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


ISA_METRICS = kinds.kind_of(ISA).metrics  # the isa job's own (workers/kinds/isa.py)


def isa_results(src: Source, run_id: int) -> list[dict[str, Any]]:
    """One row per isa job of a run: what the kernel compiled to for a target architecture (workers/jobs/isa.py).

    Keys: run_id, job_id, job_key, kernel, shape, dtype, arch, hardware_key, gpu_type, the ISA_METRICS (None where
    the target does not report one: VGPRs and occupancy on AMD, registers and spill bytes on NVIDIA), status, error.
    ``est_min_time_us`` is an estimate (the byte model at the target's published bandwidth), not a timing.
    """
    with read_session(src) as s:
        run_or_raise(s, run_id)
        jobs = run_jobs(s, run_id, Job.kind == ISA, order_by=(Job.kernel, Job.shape_key, Job.dtype, Job.id))
        picked = pick_for_run(s, run_id, jobs)
        gpu_type = gpu_types_of(s, {p.hardware_key for p in picked})
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


def isa_history(
    src: Source, kernel: str | None = None, limit: int = 5000, include_marked: bool = False
) -> list[dict[str, Any]]:
    """Every good isa result (newest first, at most ``limit``): what each kernel compiled to per target architecture
    over commits.  Keys: kernel, shape_key, dtype, arch, run_id, commit, marked (the run's conditions in words, ""
    for a plain run), measured_at, job_key and the ISA_METRICS (None where the target does not report one).  Runs
    marked by their conditions (an experiment on an uncommitted tree, say) are left out unless ``include_marked``.
    One statement."""
    query = (
        good_attempt_join(
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
                attempt_time().label("at"),
                Run.conditions,
            )
        )
        .join(Run, Run.id == JobAttempt.run_id)
        .where(
            Job.kind == ISA,
            Measurement.impl == "triton",
            Measurement.metric.in_(ISA_METRICS),
            JobAttempt.status.in_(GOOD_STATUSES),
        )
        .order_by(attempt_time().desc(), JobAttempt.id.desc())
    )
    if kernel is not None:
        query = query.where(Job.kernel == kernel)
    if not include_marked:
        query = query.where(plain_runs())
    rows: dict[tuple, dict[str, Any]] = {}
    with read_session(src) as s:
        for metric, value, k, skey, dtype, spec, key, run_id, commit, at, cond in s.execute(query):
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
                    "marked": describe_conditions(cond, note=False),
                    "measured_at": at,
                    "job_key": key,
                    **dict.fromkeys(ISA_METRICS),
                }
            row[metric] = value
    return list(rows.values())


def e2e_results(src: Source, run_id: int | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """One row per (e2e job, mode): for the jobs of ``run_id``, or else the newest attempts of every e2e job
    (newest first, at most ``limit`` jobs).

    Keys: run_id, job_id, job_key, attempt, model, shape, dtype, hardware_key, gpu_type, mode, the E2E_METRICS,
    speedup_vs_eager (eager ms_per_step / this mode's), floor_ms, rest_ms and over_floor_ms (the device floor from
    the mode's profile: orchestrator.store.e2e_anchors.floor_figures), not_run (why the job did not run the mode:
    the worker's ``details["skipped"]``; None when it ran), mode_error (the mode's error, if it failed), status,
    error, measured_at.  Anchors and speed-ups by kind: e2e_comparisons(rows).
    """
    with read_session(src) as s:
        if run_id is not None:
            run_or_raise(s, run_id)
            jobs = run_jobs(s, run_id, Job.kind == E2E, order_by=(Job.model, Job.shape_key, Job.dtype, Job.id))
            picked = pick_for_run(s, run_id, jobs)
        else:
            jobs = s.scalars(
                select(Job)
                .where(Job.kind == E2E, Job.attempts > 0)
                .order_by(Job.started_at.desc().nulls_last(), Job.id.desc())
                .limit(limit)
            ).all()
            picked = load_picked(s, jobs, {j.id: j.attempts for j in jobs})
        gpu_type = gpu_types_of(s, {p.hardware_key for p in picked})
    rows = []
    for p in picked:
        planned = [str(m) for m in (p.job.spec or {}).get("impls") or []]
        measured = {impl for impl, _ in p.metrics}
        modes = [m for m in MODES if m in measured or m in planned]
        modes += [m for m in planned if m not in modes] + sorted(measured - set(modes) - set(planned))
        eager_ms = p.value("eager", "ms_per_step")
        details = (p.attempt.details if p.attempt else None) or {}
        profile = details.get("profile") or {}
        injection = details.get("injection") or {}
        params = (p.job.spec or {}).get("params") or {}
        setting = setting_label(p.job.model, list(p.job.shape or []), p.job.dtype, params)
        for mode in modes:
            row = {
                "run_id": p.attempt.run_id if p.attempt else run_id,
                "job_id": p.job.id,
                "job_key": p.job.key,
                "attempt": p.attempt.attempt if p.attempt else None,
                "model": p.job.model,
                "shape": list(p.job.shape or []),
                "dtype": p.job.dtype,
                "setting": setting,
                "hardware_key": p.hardware_key,
                "gpu_type": gpu_type.get(p.hardware_key or ""),
                "mode": mode,
                **{metric: p.value(mode, metric) for metric in E2E_METRICS},
                "status": p.status,
                "error": p.error,
                "measured_at": (p.attempt.started_at or p.attempt.recorded_at) if p.attempt else None,
            }
            row["speedup_vs_eager"] = safe_ratio(eager_ms, row["ms_per_step"])
            classes = {c: v.get("ms") for c, v in ((profile.get(mode) or {}).get("classes") or {}).items()}
            row.update(floor_figures(row["ms_per_step"], classes))
            row["not_run"] = (details.get("skipped") or {}).get(mode)
            row["mode_error"] = (details.get("errors") or {}).get(mode)
            row["ours"] = list((profile.get(mode) or {}).get("ours") or [])
            row["kernelfleet_ms"] = classes.get("kernelfleet")
            row["injected_kernels"] = list((injection.get(mode) or {}).get("kernels") or [])
            rows.append(row)
    return rows


def _registry_names(names: Sequence[str]) -> list[str]:
    """The registry's kernel names for an injection report's (public function names: rms_norm -> rmsnorm); the
    rewrites that are not kernels (fused_qkv, linear_gelu) stay as they are and find no micro result."""
    if not names:
        return []
    from kernels import registry

    return [registry.kernel_name(n) for n in names]


def e2e_reconciliation(src: Source, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The Amdahl reconciliation (orchestrator.stats.e2e_amdahl) of the jobs of e2e_results() or e2e_view() rows:
    per injected mode, the end-to-end speed-up over its base that the micro results of its kernels on the same
    device and dtype predict from the mode's profile, beside the measured one.  One dict per mode: job_id,
    setting, gpu_type, e2e_amdahl.reconcile_job's keys, and kernels (the speed-ups as text)."""
    jobs: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r.get("mode") is None:
            continue
        m = r["metrics"] if "metrics" in r else r
        kernels = _registry_names(r.get("injected_kernels") or [])
        ours = r.get("ours") or []
        kf_ms = r.get("kernelfleet_ms", (r.get("profile_classes") or {}).get("kernelfleet"))
        if not ours and kf_ms:  # a profile from before the per-module breakdown: our kernels' total, all together
            ours = [{"module": "kernels (profile total)", "kernels": kernels, "ms": kf_ms}]
        job = jobs.setdefault(
            r["job_id"],
            {"hardware_key": r.get("hardware_key"), "dtype": r.get("dtype"), "head": r, "modes": {}},
        )
        correct = m.get("correct")
        job["modes"][r["mode"]] = {
            "ms": m.get("ms_per_step"),
            "correct": None if correct is None else correct >= 0.5,
            "ours": ours,
            "kernels": kernels,
        }
    wanted = {
        j["hardware_key"] for j in jobs.values() if j["hardware_key"] and any(x["ours"] for x in j["modes"].values())
    }
    micro = {hk: latest_results(src, hardware_key=hk) for hk in sorted(wanted)}
    out = []
    for job_id, j in jobs.items():
        if j["hardware_key"] not in micro:
            continue
        speedups = e2e_amdahl.kernel_speedups(micro[j["hardware_key"]], j["dtype"])
        for rec in e2e_amdahl.reconcile_job(j["modes"], speedups):
            head = j["head"]
            kernels = e2e_amdahl.speedup_text(rec["kernel_speedups"], rec["unmeasured"])
            out.append(
                {
                    "job_id": job_id,
                    "setting": head.get("setting"),
                    "gpu_type": head.get("gpu_type"),
                    **rec,
                    "kernels": kernels,
                }
            )
    return out


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


def profile_rows(src: Source, job_id: int | str, attempt: int | None = None) -> list[dict[str, Any]]:
    """The per-kernel rows of a profile job ({name, calls, total_ns, avg_ns, pct}), newest attempt by default.
    ``job_id`` may also be the job key."""
    with read_session(src) as s:
        found = job_attempt(s, job_id, attempt)
    if found is None:
        return []
    return [dict(r) for r in (found[1].details or {}).get("profile_rows") or []]


def artifacts(src: Source, job_id: int | str, attempt: int | None = None) -> list[dict[str, Any]]:
    """The artifacts of a job's attempt (newest by default), without their data: id, kind, name, path, size,
    stored ("blob" or "path")."""
    with read_session(src) as s:
        found = job_attempt(s, job_id, attempt)
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
    """The stored bytes of one artifact; None when it is kept as a path on a node.  KeyError when there is no
    such artifact, an id past what the id column holds (a 32-bit INTEGER on PostgreSQL) included."""
    if not 0 < artifact_id <= INT32_MAX:  # the driver would refuse to send it (OverflowError, integer out of range)
        raise KeyError(f"no artifact with id {artifact_id}")
    with read_session(src) as s:
        row = s.get(Artifact, artifact_id)
        if row is None:
            raise KeyError(f"no artifact with id {artifact_id}")
        return row.blob


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
    "correct",
    "marked",
)


def iter_measurements(
    src: Source, run_id: int | None = None, since: Any = None, batch: int = 5000
) -> Iterator[dict[str, Any]]:
    """Every measurement as one long-format row (EXPORT_COLUMNS), streamed from the database ``batch`` rows at
    a time (server-side cursor on PostgreSQL), ordered by measurement id.  ``run_id``: the attempts that run
    recorded; ``since``: attempts measured at or after that aware datetime.  ``correct``: the implementation's own
    verdict in that attempt (False: it failed correctness, and its times are no speed), None where not checked;
    ``marked``: what the run was made under, when its conditions mark it (shared GPU, rehearsal, uncommitted
    changes), else ""."""
    from sqlalchemy.orm import aliased

    own = aliased(Measurement)
    query = (
        good_attempt_join(
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
                attempt_time(),
                Measurement.metric,
                Measurement.value,
                Measurement.unit,
                own.value,
                Run.conditions,
            )
        )
        .join(Run, Run.id == JobAttempt.run_id)
        .outerjoin(Device, Device.hardware_key == JobAttempt.hardware_key)
        .outerjoin(own, own_verdict(own))
    )
    if run_id is not None:
        query = query.where(JobAttempt.run_id == run_id)
    if since is not None:
        query = query.where(attempt_time() >= since)
    query = query.order_by(Measurement.id).execution_options(yield_per=batch)
    with read_session(src) as s:
        for row in s.execute(query):
            out = dict(zip(EXPORT_COLUMNS, row))
            out["correct"] = None if out["correct"] is None else out["correct"] >= 0.5
            out["marked"] = describe_conditions(out["marked"], note=False)
            yield out


def profile_kernel_rows(src: Source, job_id: int | str, attempt: int | None = None) -> dict[str, list[dict]]:
    """implementation -> the per-kernel rows ({name, calls, total_ns, avg_ns, pct}) of a profile job's attempt
    (newest by default), as ``workers.jobs.profile`` records them in ``details["profile_rows"]``."""
    with read_session(src) as s:
        found = job_attempt(s, job_id, attempt)
    rows = ((found[1].details or {}).get("profile_rows") if found else None) or {}
    if isinstance(rows, list):  # one list without implementations
        return {"": [dict(r) for r in rows]}
    return {str(impl): [dict(r) for r in rs or []] for impl, rs in rows.items()}
