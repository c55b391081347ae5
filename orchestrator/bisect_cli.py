"""python -m orchestrator bisect: the commit(s) between a good and a bad commit where a series changed.

    python -m orchestrator bisect --good GOOD --bad BAD --kernel rmsnorm --shape 2x1320x2048 --dtype bf16 \\
        --impl triton +sweep=rmsnorm target=h200 [sweep overrides...]

The commits from GOOD to BAD (first parents) are planned each with its own code (orchestrator/bisect_run.py);
consecutive commits whose plans have the same keys form a segment, measured once (the store's results under those
keys are reused, whoever measured them).  The search (orchestrator/bisect_search.py) measures segments in rounds and
judges two segments with the regression rule against the between-run spread of the segments' replicate runs
(``--runs`` per segment, one more a side while the spread is unknown, up to ``--max-runs``).  It reports every
confirmed step: the first commit of its segment, the change with its 95 % interval, and the runs it took.

Exit codes: 0 the search ended (steps found or none), 1 an end could not be measured, 2 a usage error, 3 with
``--dry-run DIR``: plans written for ``python -m workers run``; import their results and run the command again.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from orchestrator import arg_types, bisect_git, bisect_search
from orchestrator.bisect_git import BisectError, Commit
from orchestrator.bisect_run import CommitRunner, Planned

EXIT_DONE, EXIT_UNMEASURED, EXIT_USAGE, EXIT_PLANS_WRITTEN = 0, 1, 2, 3
SCHEMA, SCHEMA_VERSION = "kernelfleet.bisect", 1
SIDES = ("baseline", "current")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the commit(s) between a good and a bad commit where a series changed, planning each commit "
        "with its own code and running only what its job keys have not measured yet",
    )
    p.add_argument("--good", required=True, help="a commit (or branch, tag) or a run id measured at the good commit")
    p.add_argument("--bad", required=True, help="a commit or a run id measured at the bad commit")
    p.add_argument("--kernel", required=True, help="the series' kernel")
    p.add_argument("--impl", required=True, help="the series' implementation (triton, eager, compile...)")
    p.add_argument("--shape", help="the series' shape, e.g. 2x1320x2048 (needed when the sweep has several)")
    p.add_argument("--dtype", help="the series' dtype (needed when the sweep has several)")
    p.add_argument("--device", help="part of the series' hardware key, e.g. h200 (needed when several measured it)")
    p.add_argument("--metric", default="time_us", help="the reading judged: time_us (default), kernel_time_us...")
    p.add_argument("--threshold", type=float, default=0.05, help="smallest relative change that counts (0.05)")
    p.add_argument("--runs", type=arg_types.count, default=2, help="runs per segment (2: the between-run spread)")
    p.add_argument("--max-runs", type=arg_types.count, default=4, help="runs per segment at most (4)")
    p.add_argument("--all-parents", action="store_true", help="walk every commit, not only first parents")
    p.add_argument("--repo", default=".", help="the git repository (default: the current folder)")
    p.add_argument(
        "--explain",
        action="store_true",
        help="for each step, capture both sides' profile (and, for triton, machine code) and say what changed",
    )
    p.add_argument("--dry-run", metavar="DIR", help="write the plans that need runs to DIR instead of running them")
    p.add_argument("--json", action="store_true", help="print the result as JSON (schema kernelfleet.bisect)")
    p.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")
    p.add_argument("overrides", nargs="*", help="the sweep: +sweep=NAME and overrides, as for a sweep")


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
        self.pending_plans: list[tuple[Path, Commit, int]] = []  # --dry-run: (plan, its commit, runs it needs)

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

        seg.points = key_points(self.url, self.args.metric, self.args.kernel, self.args.impl, seg.keys or ())
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
                self.pending_plans.append((self._export_plan(seg), seg.commits[0], need - have))
                continue
            c = seg.commits[0]
            self.console.print(f"running {c.short} x{need - have} ({len(seg.commits)} commit(s) share its keys)")
            error = self.runner.run(c, need - have, rerun=have > 0)
            ran = True
            self.ran.add(c.sha)
            self.runs_made += need - have
            if error is None and self.refresh(seg) < need:
                error = "its runs stored no good point of the series"
            if error:
                seg.error = error
                failed.add(i)
                self.console.print(f"skipping {c.short}: {error}", markup=False)
        if self.pending_plans:
            raise NeedResults()
        return failed, ran

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
        kinds = ["micro", "profile"] + (["isa"] if self.args.impl == "triton" else [])
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


def step_dict(b: Bisect, lo: int, hi: int) -> dict[str, Any]:
    f = b.flags.get((lo, hi)) or {}
    between = [c for s in b.segments[lo + 1 : hi] for c in s.commits]  # skipped segments: candidates too
    first = b.segments[hi].commits[0]
    return {
        "commit": first.sha,
        "subject": first.subject,
        "candidates": [c.sha for c in between] + [first.sha],
        "good_side": b.segments[lo].commits[-1].sha,
        **{k: f.get(k) for k in ("status", "direction", "change", "reference_median", "current_median", "reason")},
        **{k: f.get(k) for k in ("ci_low", "ci_high", "ci_basis", "noise", "noise_dof", "hardware_key")},
        "baseline_runs": f.get("reference_runs"),
        "current_runs": [c["run_id"] for c in f.get("compared") or []],
    }


def document(b: Bisect, out: bisect_search.Outcome) -> dict[str, Any]:
    # commits measured without a run of their own: another commit's runs (or stored results) had their keys
    reused = sum(1 for s in b.segments if s.points and s.error is None for c in s.commits if c.sha not in b.ran)
    return {
        "commits": len(b.commits),
        "good": b.commits[0].sha,
        "bad": b.commits[-1].sha,
        "series": {k: getattr(b.args, k) for k in ("kernel", "shape", "dtype", "impl", "device", "metric")},
        "planned_commits": b.planned_commits,
        "segments": [
            {
                "commits": [c.sha for c in s.commits],
                "measured_runs": len(s.points.get(b.series_of(s), [])) if s.points else 0,
                "skipped": s.error,
            }
            for s in b.segments
        ],
        "changed": out.changed,
        "steps": [step_dict(b, lo, hi) for lo, hi in out.steps],
        "drifts": [
            {"from": b.segments[lo].commits[-1].sha, "to": b.segments[hi].commits[0].sha} for lo, hi in out.drifts
        ],
        "rounds": out.rounds,
        "runs": b.runs_made,
        "commits_reusing_keys": reused,
        "skipped": [{"commit": c.sha, "why": s.error} for s in b.segments if s.error for c in s.commits],
    }


def print_document(doc: dict[str, Any], console: Console) -> None:
    p = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    s = doc["series"]
    name = " ".join(str(s[k]) for k in ("kernel", "shape", "dtype", "impl") if s[k])
    p(
        f"bisect {doc['good'][:10]}..{doc['bad'][:10]}: {doc['commits']} commits, {doc['planned_commits']} planned, "
        f"{len(doc['segments'])} with distinct keys; {doc['rounds']} round(s), {doc['runs']} run(s); "
        f"{doc['commits_reusing_keys']} commit(s) needed no run of their own (equal keys)"
    )
    for sk in doc["skipped"]:
        p(f"skipped {sk['commit'][:10]}: {sk['why']}")
    if doc["changed"] is None:
        p(f"{name} ({s['metric']}): the good or the bad commit could not be measured")
    elif not doc["changed"]:
        p(f"{name} ({s['metric']}): no change confirmed between the good and the bad commit")
    if len(doc["steps"]) > 1:
        p(f"{name} changed {len(doc['steps'])} times:")
    for st in doc["steps"]:
        ci = f" (95 % interval {st['ci_low'] - 1:+.1%} to {st['ci_high'] - 1:+.1%})" if st.get("ci_low") else ""
        who = f"first bad commit {st['commit'][:10]} {st['subject'][:70]}"
        if len(st["candidates"]) > 1:
            who = f"one of {', '.join(c[:10] for c in st['candidates'])} (skipped commits between)"
        p(
            f"{name} ({s['metric']}): {st['change']:+.1%} {st['direction']}{ci}, "
            f"{st['reference_median']:.2f} -> {st['current_median']:.2f}: {who}; {st['reason']}"
        )
        why = st.get("explanation") or {}
        if why.get("error"):
            p(f"  no explanation: {why['error']}")
        for line in why.get("changes") or []:
            p(f"  why: {line}")
    for d in doc["drifts"]:
        p(f"{name}: changed between {d['from'][:10]} and {d['to'][:10]}, spread over commits (no single step)")


def run(args: argparse.Namespace, console: Console) -> int:
    if arg_types.bad_threshold(args.threshold):
        return EXIT_USAGE
    if args.dry_run and not Path(args.dry_run).is_dir():
        print(f"error: --dry-run {args.dry_run}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    from orchestrator.store_access import open_writer

    writer, url = open_writer(args.url, console)  # the steps' sweeps write to it: created now when it is new
    writer.close()
    try:
        with tempfile.TemporaryDirectory(prefix="kf-bisect-") as workdir:
            b = Bisect(args, url, console, Path(workdir))
            b.plan_all()
            try:
                out = b.search()
            except NeedResults:
                return _print_pending(b, console)
            doc = document(b, out)
            if args.explain and not args.dry_run:
                for st, (lo, hi) in zip(doc["steps"], out.steps):
                    st["explanation"] = b.explain_step(lo, hi)
    except BisectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **doc}, sort_keys=True, default=str))
    else:
        print_document(doc, console)
    return EXIT_UNMEASURED if doc["changed"] is None else EXIT_DONE


def _print_pending(b: Bisect, console: Console) -> int:
    p = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    p(
        f"{len(b.commits)} commits, {b.planned_commits} planned, {len(b.segments)} with distinct keys "
        f"({sum(s.keys is None for s in b.segments)} could not be planned)"
    )
    from orchestrator.store.session import display_url

    store = display_url(b.url)
    p(f"{len(b.pending_plans)} plan(s) need runs; on a GPU machine, in a clone of {b.repo}:")
    for path, commit, runs in b.pending_plans:
        p(f"  git worktree add --detach /tmp/kf-{commit.short} {commit.sha} && cd /tmp/kf-{commit.short}")
        for i in range(1, runs + 1):
            out = path.with_name(f"{path.stem}-{i}.jsonl")
            p(f"  python -m workers run {path} --out {out} && python -m orchestrator import {out} --url {store}")
    p("then run this bisect again: it continues from the stored results")
    return EXIT_PLANS_WRITTEN
