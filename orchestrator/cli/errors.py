"""The orchestrator's user errors at the command line: one line that names what to fix, exit code 2, never a traceback.

:class:`workers.errors.UserError` (shared with ``python -m workers``) and the file errors workers.errors.describe
names, plus the database errors that mean the user's store setup is the problem (a path that is not a database, a
read-only file, a server that cannot be used): orchestrator/store/errors.py's ``user_error_line`` is that one policy.
Every entry point of ``python -m orchestrator`` wraps its work in :func:`exit_on_user_error`: these are the only
errors shown as one line; any other exception (a ValueError or an OSError from a bug included) keeps its traceback.
Code that finds a mistake of the user's raises :class:`workers.errors.UserError`, a subclass of it
(:class:`UsageError` here, ConfigError, BadStoreUrl, ...), never a plain ValueError.
"""

from __future__ import annotations

from collections.abc import Callable

from workers import errors as worker_errors
from workers.errors import UserError


class UsageError(UserError, ValueError):
    """A mistake on the command line that no more specific type names (an option that needs another, a run the
    store does not hold, an output path that cannot be written): one line, exit code 2.  A ValueError too, for
    callers that catch those."""


def exit_on_user_error(fn: Callable[[], int]) -> int:
    """Run ``fn``; a user error prints ``<prefix>: <line>`` on stderr and returns 2."""
    from orchestrator.store.errors import user_error_line  # the store package: imported once there is work to run

    return worker_errors.exit_on_user_error(fn, user_error_line)
