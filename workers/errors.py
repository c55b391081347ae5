"""User errors at the command line: one line that names what to fix, exit code 2, never a traceback.

Code that finds a mistake of the user's raises :class:`UserError` (or a subclass, such as the orchestrator's
ConfigError) with the line to show; the orchestrator imports it from here, the one module both sides share.
``python -m workers run`` wraps its work in :func:`exit_on_user_error`, which also turns the few library exceptions
that are always the user's to fix (a file that is missing, unreadable or a directory, a truncated ``.gz``) into
such a line.  The orchestrator's CLI passes its own ``describe`` (orchestrator/cli/errors.py: these, and a store that is
not a database or is read-only).  Anything else is a bug and keeps its traceback.
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
    return None


def exit_on_user_error(fn: Callable[[], int], describe: Callable[[BaseException], str | None] = describe) -> int:
    """Run ``fn``; a user error (one ``describe`` gives a line for) prints ``<prefix>: <line>`` on stderr and
    returns 2."""
    try:
        return fn()
    except Exception as exc:
        line = describe(exc)
        if line is None:
            raise
        print(f"{getattr(exc, 'prefix', 'error')}: {line}", file=sys.stderr)
        return EXIT_USER_ERROR
