"""User errors at the command line: one line that names what to fix, exit code 2, never a traceback.

Code that finds a mistake of the user's raises :class:`UserError` (or a subclass, such as the orchestrator's
ConfigError) with the line to show.  Each CLI entry point (``python -m orchestrator`` and its subcommands,
``python -m workers run``) wraps its work in :func:`exit_on_user_error`, which also turns the few library
exceptions that are always the user's to fix (a file that is missing, unreadable or a directory, a truncated
``.gz``, a store that is not a database or is read-only) into such a line.  Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import gzip
import sys
import zlib
from typing import Callable

EXIT_USER_ERROR = 2


class UserError(Exception):
    """A mistake the user can fix; str() is the one line shown, after ``prefix``."""

    prefix = "error"


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


def _store_message(exc: BaseException) -> str | None:
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
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, (EOFError, gzip.BadGzipFile, zlib.error)):
        return f"a compressed file is truncated or damaged ({exc}); copy it again or use the uncompressed file"
    if isinstance(exc, IsADirectoryError):
        return f"{exc.filename}: is a directory, not a file"
    if isinstance(exc, FileNotFoundError):
        return f"{exc.filename}: no such file or directory"
    if isinstance(exc, PermissionError):
        return f"{exc.filename}: permission denied"
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return _store_message(exc)


def exit_on_user_error(fn: Callable[[], int]) -> int:
    """Run ``fn``; a user error prints ``<prefix>: <line>`` on stderr and returns 2."""
    try:
        return fn()
    except Exception as exc:
        line = describe(exc)
        if line is None:
            raise
        print(f"{getattr(exc, 'prefix', 'error')}: {line}", file=sys.stderr)
        return EXIT_USER_ERROR
