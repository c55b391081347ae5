"""Alembic revisions of the kernelfleet store, oldest first: ``0001_initial`` (every table), ``0002_run_owner`` (the
process that holds a run, and its heartbeat).  docs/developer-guide.md says how to add one."""
