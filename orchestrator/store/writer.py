"""The driver's write API: the orchestrator process is the only writer of the store.

Typical use::

    with StoreWriter(url) as store:                       # raises SchemaOutOfDate on an old/empty schema
        run_id, resumed = store.claim_run(sweep, config, plan_key, commit, code_hash)  # RunHeld: another sweep
        store.add_jobs(run_id, [spec.to_dict() for spec in specs])
        todo = [s for s in specs if s.key not in store.done_keys([s.key for s in specs])]
        ...   # for each result coming back from Ray:
        store.record_result(run_id, result.to_dict())
        store.finish_run(run_id, "complete", counts)

Attempts: every recorded result is one attempt of its job, with its own measurements and artifacts; history is
never deleted and the ``jobs`` row mirrors the newest attempt.  A result is recorded at most once: the same
result delivered again (same content, whatever its attempt number) adds nothing and record_result returns False.
A result carries an attempt number (workers default to 1); it is kept when free, and when that number is already
taken by a different result (a failed job run again, a forced rerun, without the caller numbering attempts)
the result becomes the job's next attempt.  ``next_attempt(key)`` gives the number to stamp in advance.

Transactions: each method is one transaction, except inside ``with store.transaction():``, where every call
is part of one transaction that commits at the end of the block, or leaves the store as it was (an import).
Jobs, run links and devices are inserted if absent, so processes writing overlapping keys at once all succeed;
on SQLite every write transaction takes the database's write lock first (orchestrator/store/locks.py).

Runs: a sweep run has one owner process (orchestrator/store/ownership.py).  ``claim_run`` (and ``start_run``/
``reopen_run``) take the run for this process and start its heartbeat; ``find_resumable_run`` and the claims
raise ``RunHeld`` while another live process holds a run of the same plan.  Store faults (a read-only or
unreachable store) raise
``StoreError`` (orchestrator/store/errors.py).
"""

from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.store import ownership
from orchestrator.store.checks import check_result, parse_artifacts
from orchestrator.store.conditions import checked as conditions_checked
from orchestrator.store.conditions import merged as conditions_merged
from orchestrator.store.errors import StoreError, translated
from orchestrator.store.locks import lock
from orchestrator.store.migrate import SchemaOutOfDate, check_schema
from orchestrator.store.models import (
    JOB_PENDING,
    RUN_SOURCES,
    RUN_STATUSES,
    Artifact,
    Device,
    Job,
    JobAttempt,
    Measurement,
    Node,
    Run,
    RunJob,
    shape_key,
    utcnow,
)
from orchestrator.store.ownership import RunHeld, RunTakenOver
from orchestrator.store.session import create_engine_for, normalize_url
from workers.spec import GOOD_STATUSES, STATUS_LOST, DeviceInfo, JobResult, JobSpec

__all__ = ["RunHeld", "RunTakenOver", "SchemaOutOfDate", "StoreError", "StoreWriter", "json_safe", "result_digest"]

_CHUNK = 500  # keys per IN (...) clause
FINAL_RUN_STATUSES = tuple(s for s in RUN_STATUSES if s != "running")
RESUMABLE_RUN_STATUSES = ("interrupted", "running")


def json_safe(value: Any) -> Any:
    """A value both backends store alike as JSON: tuples become lists, NaN/inf become None (PostgreSQL's json
    type refuses them), keys become strings."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _finite_or_none(value: float | None) -> float | None:
    """SQLite turns NaN into NULL; do the same everywhere so both backends agree (infinities are kept)."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _samples(samples: Sequence[float | None] | None) -> list[float | None] | None:
    if samples is None:
        return None
    # json_safe of the floats, in one pass: NaN and infinities become None
    floats = (None if x is None else float(x) for x in samples)
    return [x if x is None or math.isfinite(x) else None for x in floats]


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def result_digest(result: dict[str, Any]) -> str:
    """Identity of a result as sent, without its attempt number (which callers may or may not set)."""
    content = {k: v for k, v in result.items() if k != "attempt"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def _from_unix(seconds: float | None) -> dt.datetime | None:
    return None if seconds is None else dt.datetime.fromtimestamp(float(seconds), dt.timezone.utc)


def _parse_result(result: dict[str, Any]) -> JobResult:
    """The driver's own result, checked as the store will hold it (orchestrator/store/checks.py)."""
    return check_result(result, strict=False)


def _insert_absent(s: Session, model: type, rows: list[dict[str, Any]], unique: list[str]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING: rows another transaction inserted meanwhile are left as they are."""
    if not rows:
        return
    dialect = s.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        raise NotImplementedError(f"the store supports SQLite and PostgreSQL, not {dialect}")
    for i in range(0, len(rows), _CHUNK):
        s.execute(insert(model.__table__).on_conflict_do_nothing(index_elements=unique), rows[i : i + _CHUNK])


def _device_fields(info: DeviceInfo) -> dict[str, Any]:
    return {
        "vendor": info.vendor,
        "name": info.name,
        "arch": info.arch,
        "gpu_type": info.gpu_type,
        "warp_size": int(info.warp_size),
        "compute_units": int(info.compute_units),
        "memory_bytes": int(info.memory_bytes),
        "driver": info.driver,
        "runtime": info.runtime,
        "torch": info.torch,
        "triton": info.triton,
    }


def _add_run(
    s: Session,
    sweep: str,
    config: dict[str, Any],
    plan_key: str,
    commit: str | None,
    code_hash: str | None,
    source: str,
    source_digest: str | None,
    started_at: dt.datetime | None,
) -> int:
    """A new run (status running, owned by this process), stamped with the current user, host and time; its id."""
    now = utcnow()
    run = Run(
        sweep=sweep,
        config=json_safe(dict(config or {})),
        plan_key=plan_key,
        commit=commit,
        code_hash=code_hash,
        user=_current_user(),
        host=socket.gethostname(),
        source=source,
        source_digest=source_digest,
        status="running",
        started_at=started_at or now,
        finished_at=None,
        counts=None,
    )
    ownership.take(run, now)
    s.add(run)
    s.flush()
    return run.id


class StoreWriter:
    """Writes runs, jobs, results, devices and fleet snapshots.  Each method is one transaction."""

    def __init__(self, url: str):
        self.url = normalize_url(url)
        self._engine = create_engine_for(self.url)
        self._pinned = threading.local()  # the session of an open transaction(), per thread
        self._heartbeats: dict[int, ownership.Heartbeat] = {}
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        try:
            check_schema(self._engine, self.url)
            self._check_writable()
        except BaseException:
            self._engine.dispose()
            raise

    def _check_writable(self) -> None:
        """A store the writer cannot write fails now, in one line, not at the first result."""
        with translated(self.url), self._engine.connect() as conn:
            try:
                conn.execute(text("UPDATE alembic_version SET version_num = version_num"))
            finally:
                conn.rollback()

    # -- lifetime -------------------------------------------------------------------------------------------
    def close(self) -> None:
        for beat in list(self._heartbeats.values()):
            beat.stop()
        self._heartbeats.clear()
        self._engine.dispose()

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self, lock_name: str = "write") -> Iterator[Session]:
        pinned = getattr(self._pinned, "session", None)
        if pinned is not None:  # inside transaction(): part of it
            yield pinned
            return
        with translated(self.url), self._sessions.begin() as session:
            if session.get_bind().dialect.name == "sqlite" or lock_name != "write":
                lock(session.connection(), lock_name)
            yield session

    @contextmanager
    def transaction(self, lock_name: str = "write") -> Iterator[None]:
        """Every write in the block is one transaction: all of it is committed at the end, or none of it."""
        if getattr(self._pinned, "session", None) is not None:
            raise RuntimeError("transaction() does not nest")
        with self._tx(lock_name) as session:
            self._pinned.session = session
            try:
                yield
            finally:
                self._pinned.session = None

    @staticmethod
    def _run(session: Session, run_id: int) -> Run:
        run = session.get(Run, run_id)
        if run is None:
            raise KeyError(f"no run with id {run_id}")
        return run

    @staticmethod
    def _job(session: Session, key: str) -> Job:
        job = session.scalars(select(Job).where(Job.key == key)).one_or_none()
        if job is None:
            raise KeyError(f"unknown job key {key!r}: add_jobs() its spec first")
        return job

    # -- runs -----------------------------------------------------------------------------------------------
    def start_run(
        self,
        sweep: str,
        config: dict[str, Any],
        plan_key: str,
        commit: str | None,
        code_hash: str | None,
        source: str = "sweep",
        source_digest: str | None = None,
        started_at: dt.datetime | None = None,
    ) -> int:
        """A new run (status running), stamped with the current user, host and time (``started_at``: when its
        results were measured, for an import); returns its id.

        A sweep run is owned by this process (heartbeat until finish_run/close); RunHeld if another live process
        runs a sweep of the same plan."""
        if source not in RUN_SOURCES:
            raise ValueError(f"run source {source!r} not in {RUN_SOURCES}")
        with self._tx(self._plan_lock(plan_key) if source == "sweep" else "write") as s:
            if source == "sweep":
                self._refuse_if_held(s, plan_key)
            run_id = _add_run(s, sweep, config, plan_key, commit, code_hash, source, source_digest, started_at)
        if source == "sweep":
            self._keep_alive(run_id)
        return run_id

    @staticmethod
    def _plan_lock(plan_key: str) -> str:
        return f"plan:{plan_key}"

    def _live_holder(self, s: Session, plan_key: str) -> Run | None:
        """The sweep run of this plan that another live process is running, if any."""
        now = utcnow()
        running = s.scalars(
            select(Run)
            .where(Run.plan_key == plan_key, Run.source == "sweep", Run.status == "running")
            .order_by(Run.id.desc())
        )
        return next((run for run in running if ownership.held_by_other(run, now)), None)

    def _refuse_if_held(self, s: Session, plan_key: str) -> None:
        holder = self._live_holder(s, plan_key)
        if holder is not None:
            raise RunHeld(holder, self.url)

    @staticmethod
    def _resumable(s: Session, plan_key: str) -> int | None:
        return s.scalar(
            select(Run.id)
            .where(Run.plan_key == plan_key, Run.source == "sweep", Run.status.in_(RESUMABLE_RUN_STATUSES))
            .order_by(Run.started_at.desc(), Run.id.desc())
            .limit(1)
        )

    def _while_held(self, plan_key: str, wait: bool, on_wait: Callable[[str], None] | None, poll_s: float, then):
        """``then(session)`` under the plan's lock once no other live process holds a run of the plan; RunHeld
        while one does, or with ``wait`` poll until it is gone (``on_wait`` gets one line saying who is waited
        for)."""
        told = False
        while True:
            with self._tx(self._plan_lock(plan_key)) as s:
                holder = self._live_holder(s, plan_key)
                if holder is None:
                    return then(s)
                held = RunHeld(holder, self.url)
            if not wait:
                raise held
            if on_wait is not None and not told:
                on_wait(f"waiting: {held.args[0].split('; wait for it')[0]}")
                told = True
            time.sleep(poll_s)

    def find_resumable_run(
        self, plan_key: str, wait: bool = False, on_wait: Callable[[str], None] | None = None, poll_s: float = 2.0
    ) -> int | None:
        """The latest sweep run with this plan key that did not finish and that no live process holds: one
        interrupted, or still marked running by an owner that is gone (see orchestrator/store/ownership.py).
        RunHeld while another live process runs the plan (or, with ``wait``, wait for it)."""
        return self._while_held(plan_key, wait, on_wait, poll_s, lambda s: self._resumable(s, plan_key))

    def claim_run(
        self,
        sweep: str,
        config: dict[str, Any],
        plan_key: str,
        commit: str | None,
        code_hash: str | None,
        wait: bool = False,
        on_wait: Callable[[str], None] | None = None,
        poll_s: float = 2.0,
    ) -> tuple[int, bool]:
        """Take this plan's unfinished run for this process, or start a new sweep run: (run id, resumed).

        One step under the plan's lock, so of two sweeps of one plan started at once one runs it and the other
        gets RunHeld (or, with ``wait``, waits and then takes what is left).  The run gets this process as owner
        and a heartbeat until finish_run/close."""

        def take(s: Session) -> tuple[int, bool]:
            now = utcnow()
            run_id = self._resumable(s, plan_key)
            if run_id is not None:
                ownership.take(self._run(s, run_id), now)
                return run_id, True
            return _add_run(s, sweep, config, plan_key, commit, code_hash, "sweep", None, None), False

        run_id, resumed = self._while_held(plan_key, wait, on_wait, poll_s, take)
        self._keep_alive(run_id)
        return run_id, resumed

    def reopen_run(self, run_id: int) -> None:
        """Claim an unfinished run for this process (status running, heartbeat); RunHeld while another live
        process holds it or another run of its plan."""
        with self._tx() as s:
            plan_key, source = s.execute(select(Run.plan_key, Run.source).where(Run.id == run_id)).one_or_none() or (
                None,
                None,
            )
        if plan_key is None:
            raise KeyError(f"no run with id {run_id}")
        with self._tx(self._plan_lock(plan_key)) as s:
            run = self._run(s, run_id)
            if source == "sweep":
                self._refuse_if_held(s, plan_key)
            ownership.take(run, utcnow())
        if source == "sweep":
            self._keep_alive(run_id)

    def heartbeat(self, run_id: int) -> bool:
        """Refresh the heartbeat of a run this process holds; False when it no longer holds it (finished, or
        taken over after this process looked gone)."""
        me = ownership.Owner.me()
        with self._tx() as s:
            done = s.execute(
                update(Run)
                .where(Run.id == run_id, Run.status == "running", Run.owner_host == me.host, Run.owner_pid == me.pid)
                .values(heartbeat_at=utcnow())
            )
            return done.rowcount == 1

    def _keep_alive(self, run_id: int) -> None:
        if run_id not in self._heartbeats:
            self._heartbeats[run_id] = ownership.Heartbeat(lambda: self.heartbeat(run_id))

    def find_import_run(self, source_digest: str) -> int | None:
        """The run that imported the file with this digest, if any (so an import is not recorded twice)."""
        with self._tx() as s:
            return s.scalar(
                select(Run.id)
                .where(Run.source == "import", Run.source_digest == source_digest)
                .order_by(Run.id.desc())
                .limit(1)
            )

    def mark_run(self, run_id: int, conditions: dict[str, Any] | None, *, add: bool = True) -> None:
        """Record what a run was made under (orchestrator/store/conditions.py): ``add`` joins ``conditions`` to
        what the run holds (a resumed run keeps its marks), else replaces it (None: a plain run)."""
        with self._tx() as s:
            run = self._run(s, run_id)
            run.conditions = conditions_merged(run.conditions, conditions) if add else conditions_checked(conditions)

    def finish_run(
        self, run_id: int, status: str, counts: dict[str, Any], finished_at: dt.datetime | None = None
    ) -> None:
        if status not in FINAL_RUN_STATUSES:
            raise ValueError(f"finish_run status {status!r} not in {FINAL_RUN_STATUSES}")
        beat = self._heartbeats.pop(run_id, None)
        if beat is not None:
            beat.stop()
        with self._tx() as s:
            run = self._run(s, run_id)
            ownership.check_held(run, self.url)  # a displaced owner never overwrites the run of the sweep that took it
            run.status = status
            run.finished_at = finished_at or utcnow()
            run.counts = json_safe(dict(counts or {}))

    # -- jobs -----------------------------------------------------------------------------------------------
    def add_jobs(self, run_id: int, specs: Iterable[dict[str, Any]]) -> int:
        """Create the jobs not yet in the store (status pending) and link every spec's job to the run.

        Jobs already in the store (done by an earlier run, or planned twice) are linked, never duplicated.
        Returns how many job rows were created.
        """
        by_key: dict[str, dict[str, Any]] = {}
        for raw in specs:
            try:
                spec = JobSpec.from_dict(dict(raw)).to_dict()
            except TypeError as exc:
                raise ValueError(f"not a JobSpec dict ({exc}): {raw!r:.200}") from exc
            if not spec["key"]:
                raise ValueError(f"job spec without a key: {spec!r:.200}")
            by_key.setdefault(spec["key"], spec)
        keys = list(by_key)
        with self._tx() as s:
            self._run(s, run_id)
            known: set[str] = set()
            for chunk in _chunks(keys):
                known.update(s.scalars(select(Job.key).where(Job.key.in_(chunk))))
            new_keys = [key for key in keys if key not in known]
            _insert_absent(
                s,
                Job,
                [
                    {
                        "key": key,
                        "spec": json_safe(by_key[key]),
                        "kind": by_key[key]["kind"],
                        "kernel": by_key[key]["kernel"],
                        "model": by_key[key]["model"],
                        "shape": list(by_key[key]["shape"]),
                        "shape_key": shape_key(by_key[key]["shape"]),
                        "dtype": by_key[key]["dtype"],
                        "target": by_key[key]["target"],
                        "status": JOB_PENDING,
                        "attempts": 0,
                        "created_run_id": run_id,
                    }
                    for key in new_keys
                ],
                ["key"],
            )
            ids: dict[str, int] = {}
            created = 0
            for chunk in _chunks(keys):
                for key, job_id, creator in s.execute(
                    select(Job.key, Job.id, Job.created_run_id).where(Job.key.in_(chunk))
                ):
                    ids[key] = job_id
                    created += key not in known and creator == run_id
            _insert_absent(
                s, RunJob, [{"run_id": run_id, "job_id": job_id} for job_id in ids.values()], ["run_id", "job_id"]
            )
            return created

    def done_keys(self, keys: Iterable[str], run_id: int | None = None) -> set[str]:
        """The keys whose job has a good status (ok, incorrect, skipped).

        With ``run_id``, only keys whose good attempt was recorded by that run (resuming a forced rerun).
        """
        keys = list(dict.fromkeys(keys))
        done: set[str] = set()
        with self._tx() as s:
            for chunk in _chunks(keys):
                if run_id is None:
                    query = select(Job.key).where(Job.key.in_(chunk), Job.status.in_(GOOD_STATUSES))
                else:
                    query = (
                        select(Job.key)
                        .join(JobAttempt, JobAttempt.job_id == Job.id)
                        .where(Job.key.in_(chunk), JobAttempt.run_id == run_id, JobAttempt.status.in_(GOOD_STATUSES))
                    )
                done.update(s.scalars(query))
        return done

    def next_attempt(self, key: str) -> int:
        """The attempt number to give the next run of this job."""
        with self._tx() as s:
            return self._job(s, key).attempts + 1

    # -- devices --------------------------------------------------------------------------------------------
    def record_device(self, device: dict[str, Any]) -> str:
        """Insert or refresh a device (by hardware key); returns the hardware key."""
        with self._tx() as s:
            return self._upsert_device(s, device)

    @staticmethod
    def _upsert_device(s: Session, device: dict[str, Any]) -> str:
        try:
            info = DeviceInfo.from_dict(dict(device))
        except TypeError as exc:
            raise ValueError(f"not a DeviceInfo dict ({exc}): {sorted(device)}") from exc
        key = device.get("hardware_key") or info.hardware_key
        now = utcnow()
        row = s.get(Device, key)
        if row is None:  # insert-if-absent: another process may record the same device at the same moment
            _insert_absent(
                s,
                Device,
                [
                    {
                        "hardware_key": key,
                        **_device_fields(info),
                        "first_seen": now,
                        "last_seen": now,
                        "info": json_safe(info.to_dict()),
                    }
                ],
                ["hardware_key"],
            )
            row = s.get(Device, key)
        for name, value in _device_fields(info).items():
            setattr(row, name, value)
        row.last_seen = now
        row.info = json_safe({**info.to_dict(), "hardware_key": key})
        s.flush()
        return key

    def set_copy_bandwidth(self, hardware_key: str, gbs: float) -> None:
        """Cache the device's measured copy bandwidth (GB/s), the ceiling for % of peak."""
        gbs = float(gbs)
        if not math.isfinite(gbs) or gbs <= 0:
            raise ValueError(f"copy bandwidth must be a positive number of GB/s, got {gbs}")
        with self._tx() as s:
            row = s.get(Device, hardware_key)
            if row is None:
                raise KeyError(f"unknown device {hardware_key!r}: record_device() it first")
            row.copy_bandwidth_gbs = gbs
            row.copy_bandwidth_measured_at = utcnow()

    def copy_bandwidth(self, hardware_key: str) -> float | None:
        with self._tx() as s:
            return s.scalar(select(Device.copy_bandwidth_gbs).where(Device.hardware_key == hardware_key))

    # -- results --------------------------------------------------------------------------------------------
    def record_result(self, run_id: int, result: dict[str, Any], force: bool = False) -> bool:
        """Record one JobResult dict as an attempt of its job; returns False when it added nothing.

        Nothing is added when the same result was recorded before (see the module doc), or when the job already
        has a good status and ``force`` is False (a forced rerun records its attempt next to the old ones).
        Artifacts in ``details["artifacts"]`` ({kind, name, data_b64 | path, size}) are stored in the
        artifacts table (blobs decoded); details keep only their id, kind, name, path, size and where stored.
        """
        r = _parse_result(result)
        if r.error is not None:  # PostgreSQL text cannot hold NUL (crash output may carry one)
            r.error = r.error.replace("\x00", "\\x00")
        digest = result_digest(result)
        details = dict(r.details or {})
        artifacts = parse_artifacts(r.key, details)
        details.pop("artifacts", None)
        with self._tx() as s:
            ownership.check_held(self._run(s, run_id), self.url)
            job = self._job(s, r.key)
            seen = s.scalar(
                select(JobAttempt.id).where(JobAttempt.job_id == job.id, JobAttempt.result_digest == digest).limit(1)
            )
            if seen is not None:
                return False
            if job.status in GOOD_STATUSES and not force:
                return False
            number = r.attempt
            taken = s.scalar(select(JobAttempt.id).where(JobAttempt.job_id == job.id, JobAttempt.attempt == number))
            if taken is not None:
                number = (s.scalar(select(func.max(JobAttempt.attempt)).where(JobAttempt.job_id == job.id)) or 0) + 1
            device = result.get("device")  # as sent: keeps the hardware key the worker computed
            hardware_key = self._upsert_device(s, device) if device else None
            started_at = _from_unix(r.started_at)
            attempt = JobAttempt(
                job_id=job.id,
                attempt=number,
                run_id=run_id,
                status=r.status,
                error=r.error,
                node_id=r.node_id,
                hardware_key=hardware_key,
                started_at=started_at,
                duration_s=_finite_or_none(r.duration_s),
                details=None,
                recorded_at=utcnow(),
                result_digest=digest,
            )
            s.add(attempt)
            s.flush()
            s.add_all(
                Measurement(
                    job_id=job.id,
                    attempt=number,
                    impl=m.impl,
                    metric=m.metric,
                    value=_finite_or_none(m.value),
                    unit=m.unit or "",
                    samples=_samples(m.samples),
                )
                for m in r.measurements
            )
            rows = [
                Artifact(
                    job_id=job.id,
                    attempt=number,
                    kind=a["kind"],
                    name=a["name"],
                    path=a["path"],
                    blob=a["blob"],
                    size=a["size"],
                )
                for a in artifacts
            ]
            s.add_all(rows)
            s.flush()
            if rows:
                details["artifacts"] = [
                    {
                        "id": row.id,
                        "kind": row.kind,
                        "name": row.name,
                        "path": row.path,
                        "size": row.size,
                        "stored": "blob" if row.blob is not None else "path",
                    }
                    for row in rows
                ]
            attempt.details = json_safe(details)
            if number >= job.attempts:  # the newest attempt: the job row mirrors it
                job.status = r.status
                job.error = r.error
                job.node_id = r.node_id
                job.hardware_key = hardware_key
                job.started_at = started_at
                job.duration_s = attempt.duration_s
                job.details = attempt.details
                job.last_run_id = run_id
                job.attempts = number
            _insert_absent(s, RunJob, [{"run_id": run_id, "job_id": job.id}], ["run_id", "job_id"])
            return True

    def mark_lost(self, run_id: int, key: str, reason: str, attempt: int | None = None, force: bool = False) -> bool:
        """Record that no node could run this job (node died, retries exhausted); same rules as record_result.
        Marking the same job lost for the same reason twice in one run records it once."""
        if attempt is None:
            attempt = self.next_attempt(key)
        lost = JobResult(key=key, status=STATUS_LOST, error=reason, attempt=attempt, details={"lost_in_run": run_id})
        return self.record_result(run_id, lost.to_dict(), force=force)

    def runs_holding(self, keys: Iterable[str]) -> list[int]:
        """The runs that recorded the newest attempts of these jobs."""
        keys = list(dict.fromkeys(keys))
        runs: set[int] = set()
        with self._tx() as s:
            for chunk in _chunks(keys):
                runs.update(s.scalars(select(Job.last_run_id).where(Job.key.in_(chunk), Job.last_run_id.is_not(None))))
        return sorted(runs)

    def job_statuses(self, keys: Iterable[str]) -> dict[str, str]:
        """key -> the job's status (its newest attempt's, or "pending"); unknown keys are left out."""
        keys = list(dict.fromkeys(keys))
        statuses: dict[str, str] = {}
        with self._tx() as s:
            for chunk in _chunks(keys):
                statuses.update(s.execute(select(Job.key, Job.status).where(Job.key.in_(chunk))).all())
        return statuses

    def run_job_statuses(self, run_id: int, keys: Iterable[str]) -> dict[str, str]:
        """key -> the status of the job's newest attempt recorded by run ``run_id``, or "not_run" when that run
        recorded none (the run was interrupted before it)."""
        keys = list(dict.fromkeys(keys))
        statuses = dict.fromkeys(keys, "not_run")
        with self._tx() as s:
            for chunk in _chunks(keys):
                rows = s.execute(
                    select(Job.key, JobAttempt.status)
                    .join(JobAttempt, JobAttempt.job_id == Job.id)
                    .where(Job.key.in_(chunk), JobAttempt.run_id == run_id)
                    .order_by(JobAttempt.attempt)
                ).all()
                statuses.update(rows)  # ordered by attempt: the newest wins
        return statuses

    # -- fleet ----------------------------------------------------------------------------------------------
    def record_nodes(self, nodes: Iterable[dict[str, Any]]) -> int:
        """Snapshot of the fleet: upsert each node by id.  Takes our own form ({node_id, labels, resources,
        alive, address}) or Ray's (``ray.nodes()``: NodeID, Labels, Resources, Alive, NodeManagerAddress)."""
        now = utcnow()
        count = 0
        with self._tx() as s:
            for n in nodes:
                node_id = n.get("node_id") or n.get("NodeID")
                if not node_id:
                    raise ValueError(f"node without node_id/NodeID: {n!r:.200}")
                row = s.get(Node, node_id)
                if row is None:
                    row = Node(node_id=node_id, first_seen=now)
                    s.add(row)
                row.address = n.get("address") or n.get("NodeManagerAddress")
                row.labels = json_safe(dict(n.get("labels") or n.get("Labels") or {}))
                row.resources = json_safe(dict(n.get("resources") or n.get("Resources") or {}))
                row.alive = bool(n.get("alive", n.get("Alive", True)))
                row.last_seen = now
                count += 1
        return count
