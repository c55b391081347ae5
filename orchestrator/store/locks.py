"""Serialise the store's writers where a check and the write that follows it must not interleave.

SQLite: the transaction starts with ``BEGIN IMMEDIATE`` (the database's single write lock, held until commit; a
second writer waits up to the busy timeout).  PostgreSQL: a transaction-scoped advisory lock on a name, within
the current schema (so test schemas and separate stores in one database do not wait on each other).

Used for: creating/upgrading the schema (two processes opening a fresh store at once), claiming a run (two
sweeps of one plan), and every write transaction of the driver on SQLite (a read-then-write transaction that
began as a reader cannot upgrade to a writer in WAL mode once another process has written).
"""

from __future__ import annotations

from sqlalchemy import Connection, text


def lock(conn: Connection, name: str) -> None:
    """Take the lock ``name`` for the rest of ``conn``'s transaction; call it before any other statement."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        raw = conn.connection.dbapi_connection
        if not raw.in_transaction:  # the driver opens transactions lazily: none is open yet
            conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif dialect == "postgresql":
        conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtext(coalesce(current_schema(), '') || ':' || :name))"),
            {"name": name},
        )
