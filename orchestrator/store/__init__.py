"""The results store: SQLAlchemy models, URL/engine handling, Alembic migrations, the driver's writer and the
read API.

  session.py         which database (resolve_url) and how to connect (WAL + foreign keys on SQLite)
  models.py          the tables
  migrate.py         upgrade/current/head, SchemaOutOfDate
  writer.py          StoreWriter: the driver is the only writer
  queries.py         read API for the CLI summary and the dashboard (the dashboard imports only that)
  regression_rule.py the regression rule (large AND significant) on plain numbers
"""
from orchestrator.store.migrate import SchemaOutOfDate, current, head, upgrade, upgrade_command
from orchestrator.store.session import default_url, display_url, normalize_url, resolve_url
from orchestrator.store.writer import StoreWriter

__all__ = [
    "SchemaOutOfDate",
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
