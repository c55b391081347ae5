"""The orchestrator's user errors at the command line: one line that names what to fix, exit code 2, never a traceback.

:class:`workers.errors.UserError` (shared with ``python -m workers``) and the file errors workers.errors.describe
names, plus the database errors that mean the user's store setup is the problem (a path that is not a database, a
read-only file, a server that cannot be used).  Every entry point of ``python -m orchestrator`` wraps its work in
:func:`exit_on_user_error`: these are the only errors shown as one line; any other exception (a ValueError or an
OSError from a bug included) keeps its traceback.  Code that finds a mistake of the user's raises
:class:`workers.errors.UserError`, a subclass of it (:class:`UsageError` here, ConfigError, BadStoreUrl, ...), never a
plain ValueError.
"""

from __future__ import annotations

from collections.abc import Callable

from workers import errors as worker_errors
from workers.errors import UserError


class UsageError(UserError, ValueError):
    """A mistake on the command line that no more specific type names (an option that needs another, a run the
    store does not hold, an output path that cannot be written): one line, exit code 2.  A ValueError too, for
    callers that catch those."""


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


def describe(exc: BaseException) -> str | None:
    """The one line for a user-caused failure, or None when ``exc`` is not one (a bug: let it trace back)."""
    return worker_errors.describe(exc) or store_message(exc)


def exit_on_user_error(fn: Callable[[], int]) -> int:
    """Run ``fn``; a user error prints ``<prefix>: <line>`` on stderr and returns 2."""
    return worker_errors.exit_on_user_error(fn, describe)
