"""Plan and run one commit for ``python -m orchestrator bisect``, with that commit's own code.

Each step is the commit's own ``python -m orchestrator`` in a git worktree of it (orchestrator/bisect/git.py): its
planner makes the plan (``dry_run=true``) whose keys group the commits, and its sweep runs the plan on the embedded
Ray instance or on the cluster the overrides name (``cluster.address=...``: a cluster is sent the worktree, so
every node runs that commit), writing to the same store as every other step.  A commit whose plan or run fails is
reported by the last line its command printed; the caller skips it.

A commit older than the store's schema (its ``migrations/versions`` lacks the store's revision) cannot open that store:
its code refuses a store "written by a newer kernelfleet".  Such a commit's sweep writes to a fresh store of its own
schema and to a results file (``results_out=``), and this code imports the file into the bisect's store (the
importer reads every results format since 1, orchestrator/interchange/importer.py).  The imported run keeps the commit,
plan and results; it records the importing machine's view of the run, not the fleet's nodes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator.bisect import git as bisect_git
from orchestrator.bisect.git import Commit


@dataclass
class Planned:
    """One commit's plan: its job keys (None when it could not be planned, ``error`` says why)."""

    commit: Commit
    keys: frozenset[str] | None
    jobs: int = 0
    error: str | None = None


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


class CommitRunner:
    """Runs the commits' own ``python -m orchestrator`` with the bisect's sweep overrides and store."""

    def __init__(self, repo: Path, overrides: list[str], store_url: str, workdir: Path):
        self.repo, self.overrides, self.store_url, self.workdir = repo, overrides, store_url, workdir
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.plans = workdir / "plans"
        self.plans.mkdir(exist_ok=True)
        self._revision: str | None = None  # the store's schema revision, read when first needed
        self._own_stores = 0

    def opens_the_store(self, commit: Commit) -> bool:
        """Whether the commit's code knows the store's schema revision.  A revision ``R`` lives in
        ``migrations/versions/R_<what>.py`` (docs/developer-guide.md, "A store column")."""
        if self._revision is None:
            from orchestrator.store import migrate  # the store's code, loaded by a bisect that runs (not by --help)

            self._revision = migrate.current(self.store_url)
        if self._revision is None:
            return True
        names = bisect_git.tree_names(self.repo, commit.sha, "migrations/versions")
        return any(Path(name).name.startswith(f"{self._revision}_") for name in names)

    def _through_a_file(self, tree: Path, commit: Commit, args: list[str], log: str) -> tuple[int | None, str | None]:
        """Run the sweep ``args`` of a commit that cannot open the store: into a fresh store of its own schema and a
        results file, which is then imported into the store; (the imported run's id, or why there is none)."""
        self._own_stores += 1
        own = self.workdir / "own-stores" / f"{commit.short}-{self._own_stores}"
        own.mkdir(parents=True)
        results = own / "results.jsonl"
        args = [a for a in args if not a.startswith(("store.url=", "rerun=", "summary_json="))]
        code, text = self._orchestrator(
            tree, [*args, f"store.url=sqlite:///{own / 'store.db'}", f"results_out={results}"], log
        )
        if code != 0:
            return None, f"its sweep exited {code}: {last_line(text)}"
        from rich.console import Console

        from orchestrator.interchange import importer
        from orchestrator.store.errors import user_error_line

        try:
            return importer.import_as_run([str(results)], self.store_url, Console(quiet=True)), None
        except Exception as exc:
            # a user error (a results file the store refuses) skips the commit; a bug raises
            line = user_error_line(exc)
            if line is None:
                raise
            return None, f"its results could not be imported into the store: {' '.join(line.split())[:300]}"

    def _orchestrator(self, tree: Path, args: list[str], log: str) -> tuple[int, str]:
        """Run ``python -m orchestrator ARGS`` in ``tree`` (its code first on the path); (exit code, output)."""
        proc = subprocess.run([sys.executable, "-m", "orchestrator", *args], cwd=tree, capture_output=True, text=True)
        (self.logs / log).write_text(proc.stdout + proc.stderr)
        return proc.returncode, proc.stdout + proc.stderr

    def plan_path(self, commit: Commit) -> Path:
        return self.plans / f"plan-{commit.short}.jsonl"

    def plan(self, commit: Commit) -> Planned:
        """The commit's plan of the sweep (its keys); the plan file is kept (``plan_path``) for ``workers run``."""
        out = self.plan_path(commit)
        try:
            with bisect_git.checkout(self.repo, commit.sha, self.workdir) as tree:
                args = [*self.overrides, "dry_run=true", f"plan_out={out}"]
                code, text = self._orchestrator(tree, args, f"plan-{commit.short}.log")
        except bisect_git.BisectError as exc:
            return Planned(commit, None, error=str(exc))
        if code != 0 or not out.is_file():
            return Planned(commit, None, error=f"could not be planned: {last_line(text)}")
        keys = [json.loads(line).get("key") for line in out.read_text().splitlines()[1:] if line.strip()]
        if not keys or not all(keys):
            return Planned(commit, None, error="its plan holds no keyed jobs for the series")
        return Planned(commit, frozenset(keys), jobs=len(keys))

    def run(self, commit: Commit, times: int, rerun: bool) -> str | None:
        """Run the commit's sweep ``times`` times into the store (``rerun``: its jobs already have a result, run
        them again as a new run); None when every run ended with every job good, else why not."""
        try:
            direct = self.opens_the_store(commit)
            with bisect_git.checkout(self.repo, commit.sha, self.workdir) as tree:
                for i in range(times):
                    args = [*self.overrides, f"store.url={self.store_url}"]
                    if rerun or i:
                        args.append("rerun=true")
                    log = f"run-{commit.short}-{i + 1}.log"
                    if not direct:
                        error = self._through_a_file(tree, commit, args, log)[1]
                        if error is not None:
                            return error
                        continue
                    code, text = self._orchestrator(tree, args, log)
                    if code != 0:
                        return f"its sweep exited {code}: {last_line(text)}"
        except bisect_git.BisectError as exc:
            return str(exc)
        return None

    def capture(self, commit: Commit, kinds: list[str]) -> tuple[int | None, str | None]:
        """Run the commit's sweep with ``kinds`` (the series' micro job with its profile and isa jobs) into the
        store: (the id of the run that holds them, or why there is none).  Jobs already stored are not run again;
        the run of their plan is named then."""
        summary = self.workdir / f"summary-{commit.short}.json"
        args = [o for o in self.overrides if not o.startswith("sweep.kinds=")]
        args += [f"sweep.kinds=[{','.join(kinds)}]", f"store.url={self.store_url}", f"summary_json={summary}"]
        try:
            with bisect_git.checkout(self.repo, commit.sha, self.workdir) as tree:
                if not self.opens_the_store(commit):
                    return self._through_a_file(tree, commit, args, f"capture-{commit.short}.log")
                code, text = self._orchestrator(tree, args, f"capture-{commit.short}.log")
        except bisect_git.BisectError as exc:
            return None, str(exc)
        if code != 0 or not summary.is_file():
            return None, f"its capture exited {code}: {last_line(text)}"
        return int(json.loads(summary.read_text())["run"]["id"]), None
