"""runs: the process that holds a run (owner_host, owner_pid, owner_since) and its heartbeat (heartbeat_at)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

A second sweep of the same plan resumes a run still marked running only when its owner is gone (no heartbeat
for a while, or a dead process on the owner's host); see orchestrator/store/ownership.py.  Existing runs get
NULLs: they have no owner to wait for.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("owner_host", "owner_pid", "owner_since", "heartbeat_at")


def upgrade() -> None:
    op.add_column("runs", sa.Column("owner_host", sa.String(255), nullable=True))
    op.add_column("runs", sa.Column("owner_pid", sa.Integer(), nullable=True))
    op.add_column("runs", sa.Column("owner_since", sa.DateTime(timezone=True), nullable=True))
    op.add_column("runs", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): a batch copy of runs would trip the foreign keys of jobs
    for name in reversed(COLUMNS):
        op.drop_column("runs", name)
