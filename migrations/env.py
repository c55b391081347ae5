"""Alembic environment of the kernelfleet store.

Where the connection comes from, in order:
  1. ``config.attributes["connection"]``: an open SQLAlchemy connection (orchestrator/store/migrate.py does this);
  2. ``-x url=...`` on the alembic command line, or ``sqlalchemy.url`` in the config;
  3. the store's usual choice (orchestrator.store.session.resolve_url): $KERNELFLEET_DB, else the default file.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import Connection

from orchestrator.store.models import Base, UTCDateTime
from orchestrator.store.session import create_engine_for, resolve_url

config = context.config
target_metadata = Base.metadata


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    """Autogenerate writes the store's own column types as plain SQLAlchemy types (revisions stay standalone)."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure_options() -> dict[str, Any]:
    return {
        "target_metadata": target_metadata,
        "compare_type": True,
        "render_item": _render_item,
    }


def _url() -> str:
    x_args = context.get_x_argument(as_dictionary=True)
    return resolve_url(x_args.get("url") or config.get_main_option("sqlalchemy.url"))


def _run_on(connection: Connection) -> None:
    context.configure(
        connection=connection, render_as_batch=connection.dialect.name == "sqlite", **_configure_options()
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """``alembic upgrade head --sql``: write the SQL instead of running it."""
    context.configure(url=_url(), literal_binds=True, dialect_opts={"paramstyle": "named"}, **_configure_options())
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_on(connection)
        return
    engine = create_engine_for(_url())
    try:
        with engine.connect() as conn:
            _run_on(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
