"""One bisect: the commits of a range planned into segments of equal job keys, the segments measured in rounds
and judged with the regression rule, each confirmed step explained (the search itself: search.py; the command line:
orchestrator/cli/bisect.py)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.bisect import git as bisect_git
from orchestrator.bisect import search as bisect_search
from orchestrator.bisect.git import BisectError, Commit
from orchestrator.bisect.run import CommitRunner, Planned
from workers.kinds.isa import NAME as ISA
from workers.kinds.micro import NAME as MICRO
from workers.kinds.profile import NAME as PROFILE

if TYPE_CHECKING:
    from rich.console import Console

SIDES = ("baseline", "current")


@dataclass
class Segment:
    """Consecutive commits with the same plan keys (``keys`` None: they could not be planned)."""

    commits: list[Commit]
    keys: frozenset[str] | None
    error: str | None = None
    points: dict = field(default_factory=dict)  # series key -> points (bisect_queries.key_points)


class NeedResults(Exception):
    """``--dry-run``: these segments need runs made elsewhere."""


def segments_of(planned: list[Planned]) -> list[Segment]:
    out: list[Segment] = []
    for p in planned:
        last = out[-1] if out else None
        if last is not None and last.keys == p.keys and (p.keys is not None or last.error == p.error):
            last.commits.append(p.commit)
        else:
            out.append(Segment([p.commit], p.keys, p.error))
    return out


def _commit_of(word: str, repo: Path, url: str) -> str:
    """A run id (digits naming a stored run) is its run's commit; anything else what git resolves."""
    if word.isdigit():
        from orchestrator.store.query import run_queries

        info = run_queries.run_info(url, int(word))
        if info is not None:
            if not info.get("commit") or info["commit"] == "unknown":
                raise BisectError(f"run {word} recorded no commit")
            return bisect_git.resolve(repo, info["commit"])
    return bisect_git.resolve(repo, word)


class Bisect:
    def __init__(self, args: argparse.Namespace, url: str, console: Console, workdir: Path):
        self.args, self.url, self.console = args, url, console
        self.repo = bisect_git.repository(args.repo)
        good, bad = _commit_of(args.good, self.repo, url), _commit_of(args.bad, self.repo, url)
        self.commits = bisect_git.history(self.repo, good, bad, first_parent=not args.all_parents)
        self.overrides = list(args.overrides)
        if not any(o.startswith("sweep.kernels=") for o in self.overrides):
            self.overrides.append(f"sweep.kernels=[{args.kernel}]")
        if not any(o.startswith("sweep.kinds=") for o in self.overrides):
            self.overrides.append("sweep.kinds=[micro]")
        self.runner = CommitRunner(self.repo, self.overrides, url, workdir)
        self.runs_made = 0
        self.ran: set[str] = set()  # commits whose sweep ran
        self.flags: dict[tuple[int, int], dict | None] = {}
        # --dry-run: (plan, its commit, runs the store holds, runs it needs)
        self.pending_plans: list[tuple[Path, Commit, int, int]] = []

    def plan_all(self) -> list[Segment]:
        """Plan one commit per distinct tree of the planning folders; the others share its plan."""
        by_tree: dict[str, Planned] = {}
        planned = []
        for i, c in enumerate(self.commits):
            tree = bisect_git.code_tree(self.repo, c.sha)
            if tree not in by_tree:
                self.console.print(f"planning {c.short} ({i + 1}/{len(self.commits)}) {c.subject[:60]}", markup=False)
                by_tree[tree] = self.runner.plan(c)
            p = by_tree[tree]
            planned.append(Planned(c, p.keys, p.jobs, p.error))
        self.planned_commits = len(by_tree)
        self.segments = segments_of(planned)
        return self.segments

    # ------------------------------------------------------------------ measurements and verdicts
    def series_of(self, seg: Segment) -> tuple | None:
        a = self.args
        keys = [
            k
            for k in seg.points
            if (a.shape is None or k[1] == a.shape)
            and (a.dtype is None or k[2] == a.dtype)
            and (a.device is None or a.device in str(k[4]))
        ]
        if len(keys) > 1:
            raise BisectError(
                f"the sweep measures {len(keys)} series of {a.kernel} {a.impl}: name one with --shape, --dtype "
                f"or --device ({', '.join(f'{k[1]} {k[2]} {k[4]}' for k in keys[:4])})"
            )
        return keys[0] if keys else None

    def refresh(self, seg: Segment) -> int:
        from orchestrator.store.query.bisect_queries import key_points

        a = self.args
        seg.points = key_points(self.url, a.metric, a.kernel, a.impl, seg.keys or (), include_marked=a.include_marked)
        series = self.series_of(seg)
        return len(seg.points[series]) if series else 0

    def measure(self, indices, want: int | None = None) -> tuple[set[int], bool]:
        failed, ran = set(), False
        for i in indices:
            seg = self.segments[i]
            have, need = self.refresh(seg), want or self.args.runs
            if have >= need:
                continue
            if self.args.dry_run:
                self.pending_plans.append((self._export_plan(seg), seg.commits[0], have, need))
                continue
            c = seg.commits[0]
            self.console.print(f"running {c.short} x{need - have} ({len(seg.commits)} commit(s) share its keys)")
            error = self.runner.run(c, need - have, rerun=have > 0)
            ran = True
            self.ran.add(c.sha)
            self.runs_made += need - have
            if error is None and self.refresh(seg) < need:
                error = self._why_no_points(seg)
            if error:
                seg.error = error
                failed.add(i)
                self.console.print(f"skipping {c.short}: {error}", markup=False)
        if self.pending_plans:
            raise NeedResults()
        return failed, ran

    def _why_no_points(self, seg: Segment) -> str:
        """Why a segment whose sweeps ended well has too few points: its runs are marked (on a cluster of several
        GPU nodes on one host, say) and left out, or its jobs measured nothing good of the series."""
        from orchestrator.store.query.bisect_queries import marked_left_out

        a = self.args
        marks = None if a.include_marked else marked_left_out(self.url, a.metric, a.kernel, a.impl, seg.keys or ())
        if marks:
            return f"its runs are marked ({marks}) and left out; --include-marked judges them"
        return "its runs stored no good point of the series"

    def _export_plan(self, seg: Segment) -> Path:
        out = Path(self.args.dry_run) / self.runner.plan_path(seg.commits[0]).name
        out.write_text(self.runner.plan_path(seg.commits[0]).read_text())
        return out

    def flag(self, a: int, b: int) -> dict | None:
        from orchestrator.stats.regression_rule import MIN_DOF, UNCONFIRMED
        from orchestrator.store.query.bisect_queries import judge_segments, pooled_spread

        # each set of keys once: two segments with the same keys (a revert) hold the same runs
        measured = list({s.keys: s.points for s in self.segments if s.points}.values())
        series = self.series_of(self.segments[b]) or self.series_of(self.segments[a])
        ref, cur = self.segments[a].points.get(series, []), self.segments[b].points.get(series, [])
        spread = pooled_spread(measured)
        f = judge_segments(series, ref, cur, spread, metric=self.args.metric, threshold=self.args.threshold)
        more = min(len(ref), len(cur)) + 1
        if f and f["status"] == UNCONFIRMED and (f["noise_dof"] or 0) < MIN_DOF and more <= self.args.max_runs:
            self.console.print(f"the between-run spread is unknown ({f['noise_dof']} dof): one more run a side")
            failed, _ = self.measure([a, b], want=more)
            self.rounds_extra += 1
            return None if failed else self.flag(a, b)
        if f is not None:
            from orchestrator.store.query.compare_queries import ratio_interval

            f["ci_low"], f["ci_high"], f["ci_basis"] = ratio_interval(ref, cur, spread)
        return f

    def judge(self, a: int, b: int) -> bool:
        from orchestrator.stats.regression_rule import CONFIRMED

        if (a, b) not in self.flags:
            self.flags[(a, b)] = self.flag(a, b)
        f = self.flags[(a, b)]
        return bool(f and f["status"] == CONFIRMED)

    def explain_step(self, lo: int, hi: int) -> dict[str, Any]:
        """Both sides' profile (and isa, for a Triton implementation) compared: those their measured runs hold (a
        sweep with ``sweep.kinds=[micro,profile,...]``), else captured with their own code."""
        from orchestrator.store.query.explain_queries import explanation

        series = self.series_of(self.segments[hi])
        kinds = [MICRO, PROFILE] + ([ISA] if self.args.impl == "triton" else [])
        f = self.flags.get((lo, hi)) or {}
        runs = [f.get("reference_runs") or [], [c["run_id"] for c in f.get("compared") or []]]
        doc = explanation(self.url, runs[0], runs[1], *series[:4])
        if any(not doc[side].get("profile") or (len(kinds) > 2 and not doc[side].get("isa")) for side in SIDES):
            runs = []
            for seg in (self.segments[lo], self.segments[hi]):
                self.console.print(f"capturing {', '.join(kinds)} at {seg.commits[0].short}")
                run_id, error = self.runner.capture(seg.commits[0], kinds)
                if error:
                    return {"error": f"{seg.commits[0].short}: {error}"}
                runs.append([run_id])
            doc = explanation(self.url, runs[0], runs[1], *series[:4])
        return {"baseline_runs": runs[0], "current_runs": runs[1], "changes": doc["changes"], "missing": doc["missing"]}

    def search(self) -> bisect_search.Outcome:
        self.rounds_extra = 0
        skipped = {i for i, s in enumerate(self.segments) if s.keys is None}
        out = bisect_search.search(len(self.segments), self.measure, self.judge, skipped)
        out.rounds += self.rounds_extra
        return out
