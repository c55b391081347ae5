"""Alembic environment and revisions of the kernelfleet store (see orchestrator/store/migrate.py)."""
