"""initial schema: runs, devices, jobs, run_jobs, job_attempts, measurements, artifacts, nodes

Revision ID: 0001
Revises:
Create Date: 2026-12-01

Revisions use plain SQLAlchemy types only (no imports from orchestrator.store.models), so an old revision keeps
working after the models change.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "devices",
        sa.Column("hardware_key", sa.String(255), nullable=False),
        sa.Column("vendor", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("arch", sa.String(64), nullable=False),
        sa.Column("gpu_type", sa.String(64), nullable=False),
        sa.Column("warp_size", sa.Integer(), nullable=False),
        sa.Column("compute_units", sa.Integer(), nullable=False),
        sa.Column("memory_bytes", sa.BigInteger(), nullable=False),
        sa.Column("driver", sa.String(100), nullable=False),
        sa.Column("runtime", sa.String(100), nullable=False),
        sa.Column("torch", sa.String(100), nullable=False),
        sa.Column("triton", sa.String(100), nullable=False),
        sa.Column("copy_bandwidth_gbs", sa.Float(), nullable=True),
        sa.Column("copy_bandwidth_measured_at", _utc(), nullable=True),
        sa.Column("first_seen", _utc(), nullable=False),
        sa.Column("last_seen", _utc(), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("hardware_key", name="pk_devices"),
    )
    op.create_table(
        "nodes",
        sa.Column("node_id", sa.String(128), nullable=False),
        sa.Column("address", sa.String(255), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("resources", sa.JSON(), nullable=False),
        sa.Column("alive", sa.Boolean(), nullable=False),
        sa.Column("first_seen", _utc(), nullable=False),
        sa.Column("last_seen", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("node_id", name="pk_nodes"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sweep", sa.String(200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("plan_key", sa.String(128), nullable=False),
        sa.Column("commit", sa.String(64), nullable=True),
        sa.Column("code_hash", sa.String(128), nullable=True),
        sa.Column("user", sa.String(100), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("source_digest", sa.String(128), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", _utc(), nullable=False),
        sa.Column("finished_at", _utc(), nullable=True),
        sa.Column("counts", sa.JSON(), nullable=True),
        sa.CheckConstraint("status IN ('running', 'complete', 'failed', 'interrupted')", name="ck_runs_status"),
        sa.CheckConstraint("source IN ('sweep', 'import')", name="ck_runs_source"),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
    )
    op.create_index("ix_runs_plan_key", "runs", ["plan_key"])
    op.create_index("ix_runs_source_digest", "runs", ["source_digest"])
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("kernel", sa.String(100), nullable=True),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("shape", sa.JSON(), nullable=False),
        sa.Column("shape_key", sa.String(200), nullable=False),
        sa.Column("dtype", sa.String(32), nullable=False),
        sa.Column("target", sa.String(100), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.String(128), nullable=True),
        sa.Column("hardware_key", sa.String(255), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", _utc(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("created_run_id", sa.Integer(), nullable=False),
        sa.Column("last_run_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["hardware_key"], ["devices.hardware_key"], name="fk_jobs_hardware_key_devices"),
        sa.ForeignKeyConstraint(["created_run_id"], ["runs.id"], name="fk_jobs_created_run_id_runs"),
        sa.ForeignKeyConstraint(["last_run_id"], ["runs.id"], name="fk_jobs_last_run_id_runs"),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.UniqueConstraint("key", name="uq_jobs_key"),
    )
    op.create_index("ix_jobs_kernel_shape_dtype_hw", "jobs", ["kernel", "shape_key", "dtype", "hardware_key"])
    op.create_table(
        "run_jobs",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_run_jobs_run_id_runs", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_run_jobs_job_id_jobs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "job_id", name="pk_run_jobs"),
    )
    op.create_index("ix_run_jobs_job_id", "run_jobs", ["job_id"])
    op.create_table(
        "job_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("node_id", sa.String(128), nullable=True),
        sa.Column("hardware_key", sa.String(255), nullable=True),
        sa.Column("started_at", _utc(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("recorded_at", _utc(), nullable=False),
        sa.Column("result_digest", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_job_attempts_job_id_jobs", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_job_attempts_run_id_runs"),
        sa.ForeignKeyConstraint(
            ["hardware_key"], ["devices.hardware_key"], name="fk_job_attempts_hardware_key_devices"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_job_attempts"),
        sa.UniqueConstraint("job_id", "attempt", name="uq_job_attempts_job_id_attempt"),
    )
    op.create_index("ix_job_attempts_run_id", "job_attempts", ["run_id"])
    op.create_index("ix_job_attempts_hardware_key", "job_attempts", ["hardware_key"])
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("impl", sa.String(100), nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("samples", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id", "attempt"],
            ["job_attempts.job_id", "job_attempts.attempt"],
            name="fk_measurements_job_id_attempt_job_attempts",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_measurements"),
        sa.UniqueConstraint("job_id", "attempt", "impl", "metric", name="uq_measurements_job_id_attempt_impl_metric"),
    )
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("blob", sa.LargeBinary(), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id", "attempt"],
            ["job_attempts.job_id", "job_attempts.attempt"],
            name="fk_artifacts_job_id_attempt_job_attempts",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_artifacts"),
    )
    op.create_index("ix_artifacts_job_id_attempt", "artifacts", ["job_id", "attempt"])


def downgrade() -> None:
    op.drop_index("ix_artifacts_job_id_attempt", table_name="artifacts")
    op.drop_table("artifacts")
    op.drop_table("measurements")
    op.drop_index("ix_job_attempts_hardware_key", table_name="job_attempts")
    op.drop_index("ix_job_attempts_run_id", table_name="job_attempts")
    op.drop_table("job_attempts")
    op.drop_index("ix_run_jobs_job_id", table_name="run_jobs")
    op.drop_table("run_jobs")
    op.drop_index("ix_jobs_kernel_shape_dtype_hw", table_name="jobs")
    op.drop_table("jobs")
    op.drop_index("ix_runs_source_digest", table_name="runs")
    op.drop_index("ix_runs_plan_key", table_name="runs")
    op.drop_table("runs")
    op.drop_table("nodes")
    op.drop_table("devices")
