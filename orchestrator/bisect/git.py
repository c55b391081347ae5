"""The git side of ``python -m orchestrator bisect``: the commits between a good and a bad commit, which of them hold
the same planning code, and a checkout of one commit to plan and run it from.

A commit's plan is made by its own code: the sweep configurations (``conf/``), the planner (``orchestrator/``) and
the code a job runs (``kernels/``, ``workers/``).  Two commits whose trees of those four folders are the same object
in git plan the same jobs with the same keys, so only one of them is planned (:func:`code_tree`); commits whose
trees differ are planned, and the plan keys then tell which of them still run the same code.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from workers.errors import UserError

PLANNING_FOLDERS = ("conf", "orchestrator", "kernels", "workers")  # what a commit's plan is made from


class BisectError(UserError, ValueError):
    """A bisect that cannot start (no repository, no history, unknown commits): one line, exit 2."""


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def _git(repo: Path, *args: str, timeout: float = 60) -> str:
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise BisectError("git is not installed here: bisect walks a repository's history with git") from None
    except subprocess.TimeoutExpired:
        raise BisectError(f"git {' '.join(args[:2])} in {repo} did not answer in {timeout:g} s") from None
    if out.returncode != 0:
        raise subprocess.CalledProcessError(out.returncode, args, out.stdout, out.stderr)
    return out.stdout


def repository(path: Path | str) -> Path:
    """The top folder of the git repository at ``path``, with history; BisectError otherwise (a copy of the code
    without ``.git``, as a Ray working_dir or an unpacked archive is, cannot be bisected)."""
    try:
        top = Path(_git(Path(path), "rev-parse", "--show-toplevel").strip())
    except (subprocess.CalledProcessError, NotADirectoryError, OSError):
        raise BisectError(
            f"{path} is not a git repository with history: bisect needs the project's .git "
            "(clone it, or give --repo PATH of a clone)"
        ) from None
    return top


def resolve(repo: Path, name: str) -> str:
    """The full commit ``name`` (a sha, a prefix, a branch, ``HEAD~3``) names in ``repo``."""
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        shallow = _git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"
        more = " (a shallow clone: fetch more history, `git fetch --deepen=N`)" if shallow else ""
        raise BisectError(f"{name!r} is not a commit of {repo}{more}") from None


def history(repo: Path, good: str, bad: str, first_parent: bool = True) -> list[Commit]:
    """The good commit, then every commit after it up to the bad one, oldest first (first parents only by
    default: a merged branch counts as its merge commit)."""
    if good == bad:
        raise BisectError(f"the good and the bad commit are the same ({good[:10]})")
    try:
        _git(repo, "merge-base", "--is-ancestor", good, bad)
    except subprocess.CalledProcessError:
        raise BisectError(f"the good commit {good[:10]} is not an ancestor of the bad commit {bad[:10]}") from None
    args = ["log", "--reverse", "--format=%H%x00%s"] + (["--first-parent"] if first_parent else [])
    lines = _git(repo, *args, f"{good}..{bad}").splitlines()
    after = [Commit(*line.split("\x00", 1)) for line in lines if line]
    if not after or after[-1].sha != bad:
        raise BisectError(f"the bad commit {bad[:10]} is not on the first-parent line after {good[:10]}")
    subject = _git(repo, "log", "-1", "--format=%s", good).strip()
    return [Commit(good, subject), *after]


def code_tree(repo: Path, sha: str) -> str:
    """The git tree ids of the planning folders at ``sha``: equal for two commits when their plans must be equal."""
    parts = []
    for folder in PLANNING_FOLDERS:
        try:
            parts.append(_git(repo, "rev-parse", f"{sha}:{folder}").strip())
        except subprocess.CalledProcessError:
            parts.append("-")
    return ",".join(parts)


def tree_names(repo: Path, sha: str, folder: str) -> list[str]:
    """The paths of the files under ``folder`` at ``sha`` (none when the folder does not exist there)."""
    try:
        return _git(repo, "ls-tree", "-r", "--name-only", sha, "--", folder).split()
    except subprocess.CalledProcessError:
        return []


@contextlib.contextmanager
def checkout(repo: Path, sha: str, parent: Path | None = None) -> Iterator[Path]:
    """A detached git worktree of ``sha`` for the duration of the block, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=f"kf-bisect-{sha[:10]}-", dir=parent))
    path = base / "tree"
    try:
        _git(repo, "worktree", "add", "--detach", "--quiet", str(path), sha, timeout=300)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(base, ignore_errors=True)
        raise BisectError(f"cannot check out {sha[:10]}: {(exc.stderr or '').strip()[:200]}") from None
    try:
        yield path
    finally:
        with contextlib.suppress(subprocess.CalledProcessError, BisectError):
            _git(repo, "worktree", "remove", "--force", str(path), timeout=300)
        shutil.rmtree(base, ignore_errors=True)
        with contextlib.suppress(subprocess.CalledProcessError, BisectError):
            _git(repo, "worktree", "prune")
