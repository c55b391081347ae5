"""The one exception the store raises for a store that cannot be used as asked, and the translation of database
errors into it.

:class:`StoreError` carries a one-line message that names the store (password masked) and what to do; a CLI
prints it and exits 2.  Its subclasses are :class:`orchestrator.store.migrate.SchemaOutOfDate` (the schema is
not the code's) and :class:`orchestrator.store.ownership.RunHeld` (another live process runs the plan).

:func:`translated` turns what a driver raises when the store itself is the problem (a path that is a directory
or not a SQLite file, a read-only database, a server that refuses or never answers, a locked database) into a
StoreError.  Errors that point at a bug (integrity, programming errors) pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import exc as sa_exc

from workers import errors as worker_errors
from workers.errors import UserError


class StoreError(UserError, RuntimeError):
    """The store cannot be used as asked; ``str()`` is one line naming the store and what to do."""

    def __init__(self, message: str, url: str | None = None):
        super().__init__(" ".join(str(message).split()))
        self.url = url


def _where(url: str) -> str:
    from orchestrator.store.session import display_url

    return display_url(url)


def _first_line(error: BaseException) -> str:
    orig = getattr(error, "orig", None) or error
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


# (words in the driver's message, what the user reads after "the store URL"): first match wins
_SQLITE_FAULTS = (
    (
        ("not a database", "malformed"),
        "is not a SQLite database ({detail}): name a kernelfleet store file, or a new path to create one",
    ),
    (("readonly", "read-only"), "is read-only ({detail}): make the file and its folder writable, or use another store"),
    (("unable to open",), "cannot be opened ({detail}): check that its folder exists and is writable"),
    (("locked", "busy"), "stayed locked by another process ({detail}); try again when it is done"),
)
_SERVER_FAULTS = (
    (
        ("timeout", "timed out"),
        "did not answer in time ({detail}): check that its server is up and reachable, or "
        "raise connect_timeout in the URL",
    ),
    (("read-only", "permission denied"), "refuses writes ({detail}): use a role that may write, or another store"),
)


def describe(url: str, error: BaseException) -> StoreError:
    """A StoreError for ``error``, raised while using the store at ``url``."""
    from orchestrator.store.session import is_sqlite, sqlite_path

    detail = _first_line(error)
    low = detail.lower()
    path = sqlite_path(url) if is_sqlite(url) else None
    if path is not None and path.is_dir():
        return StoreError(
            f"the store {_where(url)} is a directory, not a SQLite file: name a file in it (e.g. "
            f"{Path(path) / 'kernelfleet.db'}) with store.url, --url or $KERNELFLEET_DB",
            url,
        )
    for words, what in _SQLITE_FAULTS if is_sqlite(url) else _SERVER_FAULTS:
        if any(word in low for word in words):
            return StoreError(f"the store {_where(url)} {what.format(detail=detail)}", url)
    return StoreError(f"cannot use the store {_where(url)}: {detail}", url)


# what a broken or unreachable store raises; other errors (integrity, data, programming) stay bugs to see, except
# a refused write (a read-only transaction, a role without the privilege)
_STORE_FAULTS = (sa_exc.OperationalError, sa_exc.InterfaceError)


def is_store_fault(error: BaseException) -> bool:
    if isinstance(error, _STORE_FAULTS):
        return True
    if "read-only" in str(error).lower() or "permission denied" in str(error).lower():
        return True
    # sqlite3.DatabaseError "file is not a database" arrives as a bare DatabaseError
    return type(error) is sa_exc.DatabaseError


@contextmanager
def translated(url: str) -> Iterator[None]:
    """Turn a store fault raised inside the block into a StoreError about ``url``."""
    try:
        yield
    except StoreError:
        raise
    except sa_exc.DBAPIError as error:
        if is_store_fault(error):
            raise describe(url, error) from None
        raise
    except IsADirectoryError as error:
        raise describe(url, error) from None


# sqlite3 / psycopg messages that mean the store itself is unusable as given, and what to do about it
_STORE_HINTS = (
    (
        "readonly database",
        "the store is read-only: make the file and its folder writable, or use another store (store.url=... / --url)",
    ),
    (
        "unable to open database file",
        "cannot open the store file: is the path a directory, or is its folder missing or not writable?",
    ),
    (
        "file is not a database",
        "the file is not a SQLite database: point store.url (or --url) at a kernelfleet store or a new file",
    ),
    ("database disk image is malformed", "the SQLite file is damaged: restore it from a copy or use a new file"),
    ("disk i/o error", "the store's disk failed to read or write"),
    ("database or disk is full", "the store's disk is full"),
)


def store_message(exc: BaseException) -> str | None:
    """One line for a SQLAlchemy database error that the user's store setup caused; None for anything else."""
    if not type(exc).__module__.startswith("sqlalchemy"):
        return None
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    low = first.lower()
    for needle, hint in _STORE_HINTS:
        if needle in low:
            return f"store: {first}: {hint}"
    if type(exc).__name__ == "OperationalError":  # connection refused, unknown host, authentication, timeout
        return f"store: cannot use the database: {first}"
    return None


def user_error_line(exc: BaseException) -> str | None:
    """The one line for a user-caused failure, or None when ``exc`` is not one (a bug: let it trace back)."""
    return worker_errors.describe(exc) or store_message(exc)
