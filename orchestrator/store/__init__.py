"""The results store: SQLAlchemy models, URL/engine handling, Alembic migrations, the driver's writer and the
read API.

  session.py         which database (resolve_url) and how to connect (WAL + foreign keys on SQLite, timeouts): the one
                     module that makes engines (read-write, read-only, a server's maintenance database)
  open.py            a store opened for writing by a sweep, an import or bisect: created, or its schema checked
  pg_database.py     a PostgreSQL store whose database does not exist yet: created where the server lets this user
  errors.py          StoreError: a store that cannot be used as asked, in one line (directory, read-only, ...)
  locks.py           the schema/claim locks that serialise writers (BEGIN IMMEDIATE, advisory locks)
  models.py          the tables
  migrate.py         upgrade/current/head, SchemaOutOfDate
  ownership.py       who holds a run (owner and heartbeat), RunHeld, and when a run may be resumed
  checks.py          what the store accepts: typed fields, column lengths, text without NUL
  conditions.py      a run's conditions: how they are stored and described, and the plain-run filter
  writer.py          StoreWriter: the driver is the only writer
  query/             the read API by topic (runs, results, series, regressions, trends, dashboard views, compare);
                     the dashboard imports nothing else from the orchestrator

The statistics the readers apply (the regression rule) are in orchestrator/stats/.
"""

from orchestrator.store.errors import StoreError
from orchestrator.store.migrate import SchemaOutOfDate, current, head, upgrade, upgrade_command
from orchestrator.store.ownership import RunHeld
from orchestrator.store.session import default_url, display_url, normalize_url, resolve_url
from orchestrator.store.writer import StoreWriter

__all__ = [
    "RunHeld",
    "SchemaOutOfDate",
    "StoreError",
    "StoreWriter",
    "current",
    "default_url",
    "display_url",
    "head",
    "normalize_url",
    "resolve_url",
    "upgrade",
    "upgrade_command",
]
