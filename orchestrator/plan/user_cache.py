"""Files kernelfleet keeps for the user between commands (the CPU price's calibration, the tune compile filter's
verdicts), under ``$XDG_CACHE_HOME/kernelfleet``, else ``~/.cache/kernelfleet``.

Each is one JSON document: read whole (None when it is absent or unreadable: the caller computes it again) and
written whole, then renamed, so a reader never sees half a file; where nothing can be written only the saving is
lost."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def path(name: str) -> Path:
    """Where the file ``name`` is kept."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "kernelfleet" / name


def read(file: Path) -> Any | None:
    """The document kept in ``file``, or None."""
    try:
        return json.loads(file.read_text())
    except (OSError, ValueError):
        return None


def write(file: Path, document: Any) -> None:
    """Keep ``document`` in ``file`` (see the module docstring)."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, sort_keys=True)
        os.replace(tmp, file)
    except OSError:
        pass
