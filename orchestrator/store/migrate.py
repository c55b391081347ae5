"""Schema migrations (Alembic), configured in code so they work from any directory and from an installed package.

Alembic is the only way the schema changes.  ``upgrade(url)`` brings a store to the newest revision (creating a
SQLite file and its folder if needed); opening a store whose revision is not the code's head raises
:class:`SchemaOutOfDate` naming the command that fixes it.  Whether to upgrade automatically is the caller's
decision (the orchestrator does it for the default SQLite file only), never the store's.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect

from orchestrator.store.errors import StoreError, translated
from orchestrator.store.locks import lock
from orchestrator.store.session import create_engine_for, display_url, normalize_url, sqlite_path

VERSION_TABLE = "alembic_version"


class SchemaOutOfDate(StoreError):
    """The store's schema revision is not the one this code needs (empty, older, or newer)."""

    def __init__(self, url: str, current: str | None, head: str | None, message: str):
        super().__init__(message, url)
        self.current = current
        self.head = head


def upgrade_command(url: str) -> str:
    """The command a user runs to bring the store at ``url`` up to date."""
    return f"python -m orchestrator db upgrade --url '{display_url(url)}'"


def migrations_dir() -> Path:
    """The folder holding env.py and versions/ (next to the ``orchestrator`` package, installed or not)."""
    beside = Path(__file__).resolve().parents[2] / "migrations"
    if (beside / "env.py").is_file():
        return beside
    spec = importlib.util.find_spec("migrations")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            if (Path(location) / "env.py").is_file():
                return Path(location)
    raise FileNotFoundError(f"kernelfleet's migrations/ folder (with env.py) is neither at {beside} nor importable")


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("path_separator", "os")
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@lru_cache(maxsize=1)
def head() -> str:
    """The newest revision the code knows."""
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"migrations must have exactly one head, found {heads}: merge them")
    return heads[0]


def _current_on(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def current(url: str) -> str | None:
    """The store's revision; None for an empty database or a SQLite file that does not exist yet."""
    url = normalize_url(url)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return None
    engine = create_engine_for(url)
    try:
        with translated(url), engine.connect() as conn:
            return _current_on(conn)
    finally:
        engine.dispose()


def _migrate(url: str, direction: str, revision: str) -> str | None:
    """One transaction under the schema lock, so two processes migrating a store at once do it once (the second
    finds the first's revision when it gets the lock)."""
    url = normalize_url(url)
    engine = create_engine_for(url)  # creates a SQLite file's folder
    try:
        with translated(url):
            with engine.begin() as conn:
                lock(conn, "schema")
                refused = _not_ours(conn, url)
                if refused is not None:
                    raise refused
                getattr(command, direction)(alembic_config(conn), revision)
            with engine.connect() as conn:
                return _current_on(conn)
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> str | None:
    """Migrate the store at ``url`` forward to ``revision`` (default: head); returns the revision reached."""
    return _migrate(url, "upgrade", revision)


def downgrade(url: str, revision: str) -> str | None:
    """Migrate the store back to ``revision`` (``"base"`` drops every table); returns the revision reached."""
    return _migrate(url, "downgrade", revision)


def check_schema(bind: Engine | Connection, url: str | None = None) -> None:
    """Raise SchemaOutOfDate unless the database behind ``bind`` is at head."""
    url = url or bind.engine.url.render_as_string(hide_password=False)
    if isinstance(bind, Engine):
        path = sqlite_path(url)
        if path is not None and not path.exists():  # do not leave an empty file behind
            raise SchemaOutOfDate(
                url,
                None,
                head(),
                f"The store at {display_url(url)} does not exist yet: a sweep creates and fills it "
                f"(python -m orchestrator +sweep=smoke store.url='{display_url(url)}'), or create it empty with: "
                f"{upgrade_command(url)}",
            )
        with translated(url), bind.connect() as conn:
            check_schema(conn, url)
        return
    found = _current_on(bind)
    wanted = head()
    if found == wanted:
        return
    refused = _not_ours(bind, url)
    if refused is not None:
        raise refused
    fix = upgrade_command(url)
    if found is None:
        message = f"The store at {display_url(url)} is empty. Create its schema with: {fix}"
    else:
        message = (
            f"The store at {display_url(url)} has schema revision {found}; this code needs {wanted}. "
            f"Upgrade it with: {fix}"
        )
    raise SchemaOutOfDate(url, found, wanted, message)


def _not_ours(conn: Connection, url: str) -> SchemaOutOfDate | None:
    """Why the database behind ``conn`` is no store this code may read or migrate, or None: it holds another
    application's tables and no kernelfleet schema (a sweep must not add its tables beside them), or a schema
    revision this code does not know (a newer kernelfleet wrote it: migrating it back or forth would break it)."""
    found = _current_on(conn)
    where = display_url(url)
    if found is None:
        tables = sorted(t for t in inspect(conn).get_table_names() if t != VERSION_TABLE)
        if not tables:
            return None
        shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
        return SchemaOutOfDate(
            url,
            None,
            head(),
            f"The database at {where} holds another application's tables ({shown}) and no kernelfleet schema: "
            "kernelfleet keeps a database of its own; name a new SQLite file or an empty PostgreSQL database "
            "(or schema: ?options=-csearch_path%3DNAME) with store.url, --url or $KERNELFLEET_DB",
        )
    if found in _known_revisions():
        return None
    return SchemaOutOfDate(
        url,
        found,
        head(),
        f"The store at {where} has schema revision {found}, which this code does not know (its newest "
        f"is {head()}): it was written by a newer kernelfleet. Update kernelfleet, or use another store.",
    )


@lru_cache(maxsize=1)
def _known_revisions() -> frozenset[str]:
    return frozenset(s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions())
