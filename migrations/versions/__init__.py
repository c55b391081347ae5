"""Alembic revisions of the kernelfleet store, oldest first (0001_initial, ...)."""
