"""The store's tables (SQLAlchemy 2.0 typed ORM).

Only portable column types (JSON, not JSONB; no ARRAY), so SQLite and PostgreSQL behave the same.  Every
timestamp is a timezone-aware UTC datetime (:class:`UTCDateTime`).  Changing anything here needs a new Alembic
revision under ``migrations/versions/`` (the test-suite compares the two).

Tables:
  runs          one invocation of a sweep (or one import of a results file), with the process that holds it
  devices       one row per hardware key (hardware + software stack), with the measured copy bandwidth
  jobs          one row per job key (content hash of the work + code version); holds the latest attempt's outcome
  run_jobs      which jobs a run comprised (including jobs done by earlier runs)
  job_attempts  every recorded attempt of a job: which run, which device, outcome; history is never deleted
  measurements  one metric of one implementation of one attempt, with every repeat in ``samples``
  artifacts     files a job produced (profiler CSVs, traces): a blob in the store or a path on the node
  nodes         the last snapshot of each Ray node of the fleet
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

RUN_STATUSES = ("running", "complete", "failed", "interrupted")
RUN_SOURCES = ("sweep", "import")
JOB_PENDING = "pending"  # planned, no result recorded yet

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_N_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def shape_key(shape: Sequence[int] | str | None) -> str:
    """The indexable text form of a shape: ``[4, 4096, 2048]`` -> ``"4x4096x2048"`` (a string passes through)."""
    if shape is None:
        return ""
    if isinstance(shape, str):
        return shape.strip()
    return "x".join(str(int(s)) for s in shape)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC datetime on every backend.

    Naive datetimes are refused on the way in.  SQLite has no time zone type, so the value is stored as naive
    UTC there and the zone is put back on the way out.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise ValueError(f"naive datetime {value!r}: the store keeps timezone-aware UTC times only")
        value = value.astimezone(dt.timezone.utc)
        if dialect.name == "sqlite":
            value = value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.timezone.utc)
        return value.astimezone(dt.timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        dt.datetime: UTCDateTime(),
        dict[str, Any]: JSON(none_as_null=True),  # Python None is SQL NULL, not the JSON value null
        list[Any]: JSON(none_as_null=True),
        bytes: LargeBinary(),
    }


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint("status IN ('running', 'complete', 'failed', 'interrupted')", name="status"),
        CheckConstraint("source IN ('sweep', 'import')", name="source"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sweep: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]]  # the composed (resolved) configuration
    plan_key: Mapped[str] = mapped_column(String(128), index=True)  # hash of the planned job keys (resume)
    commit: Mapped[str | None] = mapped_column(String(64))
    code_hash: Mapped[str | None] = mapped_column(String(128))
    user: Mapped[str] = mapped_column(String(100))
    host: Mapped[str] = mapped_column(String(255))
    source: Mapped[str] = mapped_column(String(16))
    source_digest: Mapped[str | None] = mapped_column(String(128), index=True)  # e.g. sha256 of an imported file
    status: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[dt.datetime]
    finished_at: Mapped[dt.datetime | None]
    counts: Mapped[dict[str, Any] | None]  # e.g. {"ok": 12, "error": 1, "skipped_done": 4}
    # the process that runs it now (orchestrator/store/ownership.py): host, pid, since when, and its heartbeat
    owner_host: Mapped[str | None] = mapped_column(String(255))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    owner_since: Mapped[dt.datetime | None]
    heartbeat_at: Mapped[dt.datetime | None]
    # what the run was made under, when its results are not what its commit and device say (dirty checkout, GPUs
    # shared with other nodes, rehearsal: orchestrator/run/conditions.py); NULL for a plain run
    conditions: Mapped[dict[str, Any] | None]


class Device(Base):
    __tablename__ = "devices"

    hardware_key: Mapped[str] = mapped_column(String(255), primary_key=True)
    vendor: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(200))
    arch: Mapped[str] = mapped_column(String(64))
    gpu_type: Mapped[str] = mapped_column(String(64))
    warp_size: Mapped[int] = mapped_column(Integer)
    compute_units: Mapped[int] = mapped_column(Integer)
    memory_bytes: Mapped[int] = mapped_column(BigInteger)
    driver: Mapped[str] = mapped_column(String(100))
    runtime: Mapped[str] = mapped_column(String(100))
    torch: Mapped[str] = mapped_column(String(100))
    triton: Mapped[str] = mapped_column(String(100))
    copy_bandwidth_gbs: Mapped[float | None] = mapped_column(Float)  # measured once per device, then cached
    copy_bandwidth_measured_at: Mapped[dt.datetime | None]
    first_seen: Mapped[dt.datetime]
    last_seen: Mapped[dt.datetime]
    info: Mapped[dict[str, Any]]  # the full DeviceInfo dict as last reported


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_kernel_shape_dtype_hw", "kernel", "shape_key", "dtype", "hardware_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(128), unique=True)
    spec: Mapped[dict[str, Any]]  # JobSpec.to_dict()
    kind: Mapped[str] = mapped_column(String(16))
    kernel: Mapped[str | None] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(200))
    shape: Mapped[list[Any]]
    shape_key: Mapped[str] = mapped_column(String(200))  # "4x4096x2048": JSON cannot be indexed or compared
    dtype: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(100))
    # the latest attempt's outcome ("pending" until the first result)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    node_id: Mapped[str | None] = mapped_column(String(128))
    hardware_key: Mapped[str | None] = mapped_column(ForeignKey("devices.hardware_key"))
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[dt.datetime | None]
    duration_s: Mapped[float | None] = mapped_column(Float)
    details: Mapped[dict[str, Any] | None]
    created_run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    last_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))  # the run of the latest attempt


class RunJob(Base):
    __tablename__ = "run_jobs"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True, index=True)


class JobAttempt(Base):
    __tablename__ = "job_attempts"
    __table_args__ = (UniqueConstraint("job_id", "attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    node_id: Mapped[str | None] = mapped_column(String(128))
    hardware_key: Mapped[str | None] = mapped_column(ForeignKey("devices.hardware_key"), index=True)
    started_at: Mapped[dt.datetime | None]
    duration_s: Mapped[float | None] = mapped_column(Float)
    details: Mapped[dict[str, Any] | None]
    recorded_at: Mapped[dt.datetime]
    # sha256 of the result as sent, without its attempt number: the same result delivered twice is recorded once
    result_digest: Mapped[str] = mapped_column(String(64))


class Measurement(Base):
    __tablename__ = "measurements"
    __table_args__ = (
        UniqueConstraint("job_id", "attempt", "impl", "metric"),
        ForeignKeyConstraint(
            ["job_id", "attempt"], ["job_attempts.job_id", "job_attempts.attempt"], ondelete="CASCADE"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)
    impl: Mapped[str] = mapped_column(String(100))
    metric: Mapped[str] = mapped_column(String(64))
    value: Mapped[float | None] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(32))
    samples: Mapped[list[Any] | None]


class Artifact(Base):
    __tablename__ = "artifacts"
    __table_args__ = (
        ForeignKeyConstraint(
            ["job_id", "attempt"], ["job_attempts.job_id", "job_attempts.attempt"], ondelete="CASCADE"
        ),
        Index("ix_artifacts_job_id_attempt", "job_id", "attempt"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(255))
    path: Mapped[str | None] = mapped_column(Text)
    blob: Mapped[bytes | None]
    size: Mapped[int | None] = mapped_column(BigInteger)


class Node(Base):
    __tablename__ = "nodes"

    node_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    address: Mapped[str | None] = mapped_column(String(255))
    labels: Mapped[dict[str, Any]]
    resources: Mapped[dict[str, Any]]
    alive: Mapped[bool] = mapped_column(Boolean)
    first_seen: Mapped[dt.datetime]
    last_seen: Mapped[dt.datetime]
