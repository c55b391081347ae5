"""What a REF of ``python -m orchestrator compare`` names: run ids, a commit (or a prefix), or a branch or tag.

Each REF word is, in this order: run ids (``12``, ``12,13``) of runs the store holds; a commit prefix (4 to 40
hex digits) that the runs' commits start with; any other name git resolves in the repository (``git rev-parse``:
a branch, a tag, ``HEAD~1``), whose commit the runs were measured at.  Several words on one side add up.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from orchestrator.store.query.compare_queries import RefError, run_exists, runs_of_commit

_HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")
_IDS = re.compile(r"^\d+(,\d+)*$")


def git_commit_of(name: str, repo: Path | str | None = None) -> str | None:
    """The commit git resolves ``name`` to in ``repo`` (the working directory by default); None when git or the
    repository is missing or the name is unknown."""
    if name.startswith("-"):
        return None
    cmd = ["git"] + (["-C", str(repo)] if repo else []) + ["rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None


def _marked_note(marked: list[int]) -> str:
    if not marked:
        return ""
    return (
        f" (left out marked run(s) {', '.join(map(str, marked))}: uncommitted changes, shared GPU or rehearsal; "
        "--include-marked takes them)"
    )


def _only_marked(word: str, commit: str, marked: list[int]) -> RefError:
    return RefError(
        f"{word!r} is commit {commit[:12]}, whose only stored run(s) {', '.join(map(str, marked))} are marked "
        "(uncommitted changes, a GPU shared with other nodes or a rehearsal: not what the commit says); "
        "name them by id or add --include-marked"
    )


def resolve(
    src, words: Sequence[str], repo: Path | str | None = None, include_marked: bool = False
) -> tuple[list[int], list[str]]:
    """(run ids, how each word was read) for the words of one side; RefError when a word names no run.  A run id
    is taken as named; a commit or branch stands for its runs less those marked by their conditions (unless
    ``include_marked``)."""
    runs: list[int] = []
    notes: list[str] = []
    for word in words:
        word = word.strip()
        if not word:
            continue
        if _IDS.match(word):
            ids = [int(x) for x in word.split(",")]
            if all(run_exists(src, i) for i in ids):
                runs += ids
                notes.append(f"{word}: run(s) {', '.join(map(str, ids))}")
                continue
            if "," in word or not _HEX.match(word):
                missing = next(i for i in ids if not run_exists(src, i))
                raise RefError(f"no run {missing}; list the runs with `python -m orchestrator runs`")
        if _HEX.match(word):
            commit, ids, marked = runs_of_commit(src, word, include_marked)
            if marked and not ids:
                raise _only_marked(word, commit, marked)
            if ids:
                runs += ids
                notes.append(f"{word}: commit {commit[:12]}, run(s) {', '.join(map(str, ids))}{_marked_note(marked)}")
                continue
        sha = git_commit_of(word, repo)
        if sha is None:
            raise RefError(
                f"{word!r} is neither a run id, nor a commit of a stored run, nor a name git resolves"
                + (f" in {repo}" if repo else "")
            )
        commit, ids, marked = runs_of_commit(src, sha, include_marked)
        if marked and not ids:
            raise _only_marked(word, sha, marked)
        if not ids:
            raise RefError(f"{word!r} is commit {sha[:12]}, and the store holds no run measured at it")
        runs += ids
        notes.append(f"{word}: commit {sha[:12]}, run(s) {', '.join(map(str, ids))}{_marked_note(marked)}")
    if not runs:
        raise RefError("an empty REF")
    return list(dict.fromkeys(runs)), notes
