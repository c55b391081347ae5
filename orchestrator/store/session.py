"""Which database the store uses, and how to connect to it.

URL selection (:func:`resolve_url`): an explicit URL (config ``store.url``) wins, then the environment variable
``KERNELFLEET_DB``, then the default SQLite file ``$XDG_DATA_HOME/kernelfleet/kernelfleet.db``
(``~/.local/share/kernelfleet/kernelfleet.db`` when XDG_DATA_HOME is unset).  A value without ``://`` is a path
to a SQLite file.  ``postgresql://`` / ``postgres://`` without a driver mean psycopg 3, the driver kernelfleet
depends on.

Engines: SQLite connections get WAL journaling (the dashboard reads while the driver writes), foreign keys and a
busy timeout; PostgreSQL connections are pre-pinged and give up after ``connect_timeout`` seconds (default
5; the URL's own ``?connect_timeout=N`` wins), so a server that accepts connections but never answers fails in
seconds instead of hanging.  To point PostgreSQL at a schema other than ``public`` add
``?options=-csearch_path%3Dmyschema`` to the URL.  A SQLite URI (``sqlite:///file:PATH?mode=ro&uri=true``) opens
the file read-only.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url

from workers.errors import UserError

ENV_VAR = "KERNELFLEET_DB"
DB_FILENAME = "kernelfleet.db"
SQLITE_BUSY_TIMEOUT_S = 30.0
PG_CONNECT_TIMEOUT_S = 5

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def default_db_path() -> Path:
    """The default SQLite file (its folder is created by the first writer, never by a reader)."""
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".local" / "share"
    return root / "kernelfleet" / DB_FILENAME


def default_url() -> str:
    return sqlite_url_for(default_db_path())


def sqlite_url_for(path: str | os.PathLike[str]) -> str:
    return "sqlite:///" + str(Path(path).expanduser().resolve())


SUPPORTED_BACKENDS = ("sqlite", "postgresql", "postgres")


class BadStoreUrl(UserError, ValueError):
    """A store URL that cannot be used: one line, exit 2 (workers/errors.py)."""


def normalize_url(url: str) -> str:
    """A bare path becomes a SQLite URL; a PostgreSQL URL without a driver gets psycopg (3).  ValueError (naming
    the URL without its password) for a URL that cannot be parsed or names a database other than SQLite or
    PostgreSQL."""
    url = url.strip()
    if not url:
        raise ValueError("empty database URL")
    if "://" not in url:
        return sqlite_url_for(url)
    try:
        parsed = make_url(url)
    except Exception:  # sqlalchemy's ArgumentError, or ValueError for a bad port
        raise BadStoreUrl(
            f"store URL {display_url(url)!r} cannot be parsed; expected sqlite:///PATH or "
            "postgresql://USER@HOST:PORT/DATABASE (or a path to a SQLite file)"
        ) from None
    if parsed.get_backend_name() not in SUPPORTED_BACKENDS:
        raise BadStoreUrl(
            f"store URL {display_url(url)!r}: the store is SQLite or PostgreSQL, not {parsed.get_backend_name()!r}"
        )
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
        return parsed.render_as_string(hide_password=False)
    problem = _driver_problem(parsed.drivername)
    if problem:
        plain = "sqlite:///PATH" if parsed.get_backend_name() == "sqlite" else "postgresql://USER@HOST:PORT/DATABASE"
        raise BadStoreUrl(f"store URL {display_url(url)!r}: {problem}; write {plain} (its standard driver)")
    return url


@functools.lru_cache(maxsize=None)
def _driver_problem(drivername: str) -> str | None:
    """Why the SQLAlchemy driver ``drivername`` (``postgresql+pg8000``) cannot run the store here, or None: no such
    driver, its module is not installed, or it is an asyncio driver (the store's engines are plain)."""
    from sqlalchemy.engine import URL as SaURL

    try:
        dialect = SaURL.create(drivername).get_dialect()
    except Exception:  # sqlalchemy's NoSuchModuleError
        return f"SQLAlchemy has no driver {drivername!r}"
    if getattr(dialect, "is_async", False):
        return f"{drivername!r} is an asyncio driver, which the store cannot use"
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        return f"the driver of {drivername!r} is not installed ({exc})"
    return None


def resolve_url(explicit: str | None) -> str:
    """The store URL: ``explicit`` (config ``store.url``), else $KERNELFLEET_DB, else the default SQLite file."""
    if explicit is not None and str(explicit).strip():
        return normalize_url(str(explicit))
    from_env = os.environ.get(ENV_VAR, "").strip()
    if from_env:
        return normalize_url(from_env)
    return default_url()


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL; None for other backends and for in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        return None
    if database.startswith("file:") and str(parsed.query.get("uri", "")).lower() == "true":
        database = database[len("file:") :]
    return Path(database).expanduser()


_CREDENTIALS = re.compile(r"(//[^/@:]*):[^/@]*@")


def holds_password(text: str) -> bool:
    """Whether ``text`` holds a URL with a password (``scheme://USER:PASSWORD@...``)."""
    return display_url(text) != text


def display_url(url: str | URL | None) -> str:
    """The URL with any password masked (``***``), for messages, logs, stored configs and plan files; a URL without
    a password and a bare path are returned as typed.  A URL that cannot be parsed has whatever stands between
    ``user:`` and ``@`` masked."""
    if url is None:
        return ""
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    text = str(url)
    if "://" not in text:
        return text
    try:
        parsed = make_url(text)
    except Exception:  # unparsable: mask by pattern rather than echo it
        return _CREDENTIALS.sub(r"\1:***@", text)
    return text if parsed.password is None else parsed.render_as_string(hide_password=True)


def public_config(cfg: dict) -> dict:
    """A composed config as it may be stored, printed or written to a plan file: ``store.url`` without its
    password (display_url)."""
    store = cfg.get("store")
    if not isinstance(store, dict) or not isinstance(store.get("url"), str) or not store["url"]:
        return cfg
    return {**cfg, "store": {**store, "url": display_url(store["url"])}}


def _sqlite_on_connect(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def create_engine_for(url: str, create_folder: bool = True) -> Engine:
    """A new engine for ``url`` (bare paths allowed) with the per-backend settings described above; a SQLite
    file's missing folder is created unless ``create_folder`` is False (readers)."""
    url = normalize_url(url)
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is not None and create_folder:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
        event.listen(engine, "connect", _sqlite_on_connect)
        return engine
    return create_engine(url, pool_pre_ping=True, connect_args=pg_connect_args(url))


def pg_connect_args(url: str | URL) -> dict:
    """A PostgreSQL engine's ``connect_args``: give up after PG_CONNECT_TIMEOUT_S unless the URL's own
    ``connect_timeout`` says otherwise (every engine on a server, the writer's and the readers', the same)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
        return {"connect_timeout": PG_CONNECT_TIMEOUT_S}
    return {}


def read_only_engine(url: str) -> Engine:
    """A new engine that can only read the store at ``url``: SQLite opened with ``mode=ro`` and ``query_only``
    (the file must exist), PostgreSQL sessions with ``default_transaction_read_only``.  Its schema is not checked
    here (orchestrator/store/query/access.py does)."""
    import sqlite3

    from sqlalchemy import pool

    url = normalize_url(url)
    if is_sqlite(url):
        path = sqlite_path(url)
        if path is None:
            raise ValueError(f"{url}: an in-memory SQLite database holds no results to read")
        uri = path.resolve().as_uri() + "?mode=ro"
        engine = create_engine(
            "sqlite://",
            poolclass=pool.QueuePool,
            creator=lambda: sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_S, check_same_thread=False),
        )

        @event.listens_for(engine, "connect")
        def _read_only(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA query_only=ON")
            cursor.close()

        return engine
    parsed = make_url(url)
    options = (str(parsed.query.get("options", "")) + " -c default_transaction_read_only=on").strip()
    return create_engine(
        parsed.update_query_dict({"options": options}), pool_pre_ping=True, connect_args=pg_connect_args(url)
    )


def maintenance_engine(url: str, database: str) -> Engine:
    """An autocommit engine on another database of ``url``'s PostgreSQL server (its maintenance database, where
    ``CREATE DATABASE`` runs), with the store's connect timeout unless the URL sets its own."""
    parsed = make_url(url)
    return create_engine(
        parsed.set(database=database, query={}),
        isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": int(parsed.query.get("connect_timeout", PG_CONNECT_TIMEOUT_S))},
    )


def get_engine(url: str) -> Engine:
    """A shared engine per URL, for readers that are called often (the dashboard, the CLI summary)."""
    url = normalize_url(url)
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = create_engine_for(url, create_folder=False)
        return engine


def dispose_engines() -> None:
    """Close every shared engine (tests, and before a process forks)."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.dispose()
