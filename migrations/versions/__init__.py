"""Alembic revisions of the kernelfleet store, oldest first: ``0001_initial`` (every table), ``0002_run_owner`` (the
process that holds a run, and its heartbeat), ``0003_run_conditions`` (what a run was made under: uncommitted
changes, a shared GPU, a rehearsal).  docs/developer-guide.md says how to add one."""
