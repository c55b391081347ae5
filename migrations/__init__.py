"""Alembic environment and revisions of the kernelfleet store (see orchestrator/store/migrate.py).

``env`` (the environment: where the connection comes from, the models' metadata), ``versions/`` (the revisions),
``alembic.ini`` (for the ``alembic`` command itself; docs/developer-guide.md, "A store column")."""
