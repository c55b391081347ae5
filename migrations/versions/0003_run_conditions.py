"""runs: what a run was made under (conditions): a dirty checkout and its diff's hash, GPUs shared with other
nodes, a rehearsal fleet

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03

A run whose results are not what its commit and device say (orchestrator/run/conditions.py) is left out of
trends, regressions and compare unless asked.  Existing runs get NULL: nothing is known against them (an import
of the shipped results marks the fleet rehearsal's runs from results/h200/conditions.json).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("conditions", sa.JSON(), nullable=True))


def downgrade() -> None:
    # plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35), as 0002 does
    op.drop_column("runs", "conditions")
