"""Where ``export --out`` writes: never a half-written file at the path, never a file replaced unasked.

The output is written beside its path under a temporary name (``.NAME.partial-PID``: hidden, and named for what it
is) and renamed into place only once complete, so a command that is interrupted (Ctrl-C, SIGTERM, even kill -9)
leaves at the path what was there before, and never a partial file that looks finished.  Ctrl-C and SIGTERM also
remove the temporary file; after kill -9 only that hidden ``.partial`` file stays.  An existing file (or folder) is
replaced only with ``force`` (``--force``): without it the command says so and stops before reading the store.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from workers.errors import UserError

EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(SystemExit):
    """SIGTERM while the output is written: unwinds (removing the temporary file) and exits 143."""


def check(path: str | os.PathLike[str], force: bool, folder: bool = False) -> Path:
    """``path`` as a Path, or UserError (one line) when it cannot be written as asked: an existing file or folder
    without ``force``, a file where a folder is wanted or the other way round, a missing parent folder."""
    out = Path(path)
    what = "folder" if folder else "file"
    if out.is_dir() != folder and out.exists():
        raise UserError(f"--out {out}: is a {'file' if folder else 'folder'}; name a {what} to write")
    if out.exists() and not (folder and not any(out.iterdir())) and not force:
        raise UserError(
            f"--out {out}: the {what} exists and export does not overwrite it; add --force to replace it, "
            "or name another path"
        )
    if not out.absolute().parent.is_dir():
        raise UserError(f"--out {out}: its folder {out.absolute().parent} does not exist")
    return out


@contextlib.contextmanager
def replaced(path: Path, folder: bool = False) -> Iterator[Path]:
    """The temporary path to write (a file, or with ``folder`` a folder this creates); when the block ends normally
    it replaces ``path``, else it is removed and ``path`` is left as it was."""
    tmp = path.absolute().parent / f".{path.name}.partial-{os.getpid()}"
    if folder:
        tmp.mkdir()
    previous = _on_sigterm()
    try:
        yield tmp
        if folder and path.exists():
            old = tmp.with_name(f".{path.name}.old-{os.getpid()}")
            path.rename(old)
            tmp.rename(path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _on_sigterm():
    """Make SIGTERM unwind through ``replaced`` (Python's default ends the process where it stands); the handler
    it replaced, or None where signals cannot be handled (not the main thread)."""

    def stop(signum, frame) -> None:
        print("export: stopped by SIGTERM; the output was not written", file=sys.stderr)
        raise Terminated(EXIT_TERMINATED)

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: signals stay as they are
        return None
