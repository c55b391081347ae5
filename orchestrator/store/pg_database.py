"""A PostgreSQL store whose database does not exist yet: create it when the server lets this user, else say how.

``store=postgres`` names a database (``kernelfleet``) that a fresh server does not have.  Before the schema is
created, :func:`ensure_database` connects to the server's maintenance database (``postgres``) and runs
``CREATE DATABASE``; a user without the CREATEDB privilege gets one line with the ``createdb`` command to run.
"""

from __future__ import annotations

import shlex

from workers.errors import UserError

MAINTENANCE_DB = "postgres"


def _missing(exc: BaseException) -> bool:
    return "does not exist" in str(getattr(exc, "orig", exc)) and "database" in str(getattr(exc, "orig", exc))


def createdb_command(url: str) -> str:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    argv = ["createdb"]
    if u.host:
        argv += ["-h", u.host]
    if u.port:
        argv += ["-p", str(u.port)]
    if u.username:
        argv += ["-U", u.username]
    return shlex.join(argv + [u.database or "kernelfleet"])


def ensure_database(url: str) -> bool:
    """For a PostgreSQL URL: create its database if it is missing (True when created).  UserError when it is
    missing and cannot be created here; other connection failures are left to the caller."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import DBAPIError

    from orchestrator.store.errors import describe
    from orchestrator.store.session import create_engine_for, maintenance_engine

    u = make_url(url)
    if u.get_backend_name() != "postgresql" or not u.database:
        return False
    # the store's own connect timeout (the URL's connect_timeout wins), so a server that never answers fails once
    engine = create_engine_for(url)
    try:
        with engine.connect():
            return False
    except DBAPIError as exc:
        if not _missing(exc):
            raise describe(url, exc) from None  # unreachable or refusing: say so now rather than connect again
    finally:
        engine.dispose()
    admin = maintenance_engine(url, MAINTENANCE_DB)
    name = u.database.replace('"', '""')
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        return True
    except DBAPIError as exc:
        if "already exists" in str(exc.orig):  # another process created it meanwhile
            return False
        why = str(exc.orig).strip().splitlines()[0]
        raise UserError(
            f"store: the database {u.database!r} does not exist on {u.host or 'localhost'} and cannot be "
            f"created by this user ({why}); create it with: {createdb_command(url)}"
        ) from None
    finally:
        admin.dispose()
