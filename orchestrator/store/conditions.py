"""What a run was made under, when its results are not what its commit and device say (``runs.conditions``).

A plain run has no conditions (NULL).  A marked run holds a dict of these keys (every one optional):

  dirty         the checkout had uncommitted changes: the commit the run records is not the code that ran
  diff_sha256   a hash of those changes (``git diff HEAD`` and the untracked files), so two runs of one dirty tree
                can be told from two of different ones
  shared_gpu    the GPU was shared with other nodes of the fleet (several nodes on one host), whose jobs may have
                run at the same time: its timings are not one job per GPU
  rehearsal     made in a fleet rehearsal (nodes standing in for other hardware, faults injected, scaling runs)
  note          free text: what else a reader should know

Such a run is shown with its marks on every page and in ``runs``, and is left out of trends, ``regressions`` and
``compare`` unless asked (``--include-marked``; the dashboard's "marked runs" switch)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement

from orchestrator.store.models import Run

FLAGS = ("dirty", "shared_gpu", "rehearsal")
KEYS = (*FLAGS, "diff_sha256", "note")
NOTE_MAX = 500

# the words a page, a table or a report says for each flag
WORDS = {"dirty": "uncommitted changes", "shared_gpu": "GPU shared with other nodes", "rehearsal": "fleet rehearsal"}


def checked(conditions: Any, where: str = "conditions") -> dict[str, Any] | None:
    """``conditions`` as the store keeps it: None when nothing is marked, else a dict of known keys (ValueError
    naming ``where`` and the key otherwise)."""
    if conditions is None:
        return None
    if not isinstance(conditions, Mapping):
        raise ValueError(f"{where}: expected an object of {', '.join(KEYS)}, got {conditions!r:.60}")
    unknown = sorted(set(conditions) - set(KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}; known: {', '.join(KEYS)}")
    out: dict[str, Any] = {}
    for flag in FLAGS:
        value = conditions.get(flag)
        if value not in (None, True, False):
            raise ValueError(f"{where}.{flag}: expected true or false, got {value!r:.60}")
        if value:
            out[flag] = True
    for text_key, limit in (("diff_sha256", 64), ("note", NOTE_MAX)):
        value = conditions.get(text_key)
        if value is None or value == "":
            continue
        if not isinstance(value, str) or len(value) > limit:
            raise ValueError(f"{where}.{text_key}: expected a string of at most {limit} characters")
        out[text_key] = value
    return out if is_marked(out) else None  # a note alone marks nothing


def merged(*parts: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The conditions of several sources together (a flag set by any is set; notes joined)."""
    out: dict[str, Any] = {}
    notes = []
    for part in parts:
        for key, value in (part or {}).items():
            if key == "note":
                if value and value not in notes:
                    notes.append(value)
            elif value:
                out[key] = value
    if notes:
        out["note"] = "; ".join(notes)[:NOTE_MAX]
    return checked(out)


def is_marked(conditions: Mapping[str, Any] | None) -> bool:
    return bool(conditions) and any(conditions.get(f) for f in FLAGS)


def describe(conditions: Mapping[str, Any] | None, note: bool = True) -> str:
    """One line for a table cell: "uncommitted changes (diff 1a2b3c4d); GPU shared with other nodes", then the note
    (unless ``note`` is False), or ""."""
    if not conditions:
        return ""
    words = []
    for flag in FLAGS:
        if conditions.get(flag):
            word = WORDS[flag]
            if flag == "dirty" and conditions.get("diff_sha256"):
                word += f" (diff {conditions['diff_sha256'][:8]})"
            words.append(word)
    if note and conditions.get("note"):
        words.append(conditions["note"])
    return "; ".join(words)


def plain_runs() -> ColumnElement[bool]:
    """The SQL condition of a run that no condition marks (what trends, regressions and compare read by default)."""
    return Run.conditions.is_(None)
