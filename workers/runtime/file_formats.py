"""The versions of the plan and results files (JSON lines), and the chain that upgrades an older file as it is read.

A file's first line, its header, says its format (``"format": N``; a header without one is format 1).  A reader
takes a file of any format from 1 to the current one: the upgrade steps of :data:`PLAN` or :data:`RESULTS` rewrite
its header and each of its lines one format at a time, as they are read, so the code past the reader knows the
current format only (asv's ``api_version`` and ``update_to_N``).  A file of a newer format than this code knows is
refused in one line: newer code wrote it, and this checkout must be updated to read it.  ``python -m workers upgrade
PATH...`` rewrites files (every plan and results file under a folder) in the current format.

Changing a format: raise its ``current``, add the step from the previous format to its ``upgrades`` (the step of
format N rewrites a file of format N as format N + 1; tests/workers/test_file_formats.py checks that the chain has
no gap), document the new format line by line in docs/json.md, and test the step on shipped files: results/ holds
the project's measured history, which must keep importing.  Both files are at format 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping


class FormatError(ValueError):
    """A file whose format this code cannot read; the message starts with the file's path."""


@dataclass(frozen=True)
class Upgrade:
    """One step of the chain: a file of format N rewritten as format N + 1."""

    header: Callable[[dict], dict]  # the header line (its ``format`` is set by the chain)
    line: Callable[[dict], dict]  # every other line
    what: str  # what changed, in words (docs/json.md says it at length)


@dataclass(frozen=True)
class FileFormat:
    """A kind of file, the format this code writes, and the steps from each older format."""

    kind: str  # "plan" or "results": the header's ``kernelfleet`` value
    current: int
    upgrades: Mapping[int, Upgrade] = field(default_factory=dict)

    def version(self, path: str | Path, header: dict) -> int:
        """The format ``header`` declares (1 when it declares none); FormatError for a newer or a malformed one."""
        n = header.get("format", 1)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise FormatError(f"{path}: {self.kind} format {n!r} is not a format number (1 to {self.current})")
        if n > self.current:
            raise FormatError(
                f"{path}: {self.kind} format {n} is newer than this code reads (format {self.current} and older): "
                f"a newer kernelfleet wrote it; update this checkout to read it"
            )
        return n

    def reader(self, path: str | Path, header: dict) -> tuple[dict, Callable[[dict], dict]]:
        """``header`` in the current format, and the function that brings each further line of the file there."""
        steps = [self.upgrades[n] for n in range(self.version(path, header), self.current)]
        for step in steps:
            header = step.header(header)
        header = {**header, "format": self.current}

        def line(obj: dict) -> dict:
            for step in steps:
                obj = step.line(obj)
            return obj

        return header, line


PLAN = FileFormat("plan", 1)
RESULTS = FileFormat("results", 1)


def of_header(header: dict) -> FileFormat | None:
    """The format of the file ``header`` heads (by its ``kernelfleet`` value), None for a line that heads none."""
    return {PLAN.kind: PLAN, RESULTS.kind: RESULTS}.get(str(header.get("kernelfleet")))
