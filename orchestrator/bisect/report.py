"""What ``python -m orchestrator bisect`` reports: the search's outcome as a document (its ``--json``, schema
kernelfleet.bisect in docs/json.md) and as lines, and with ``--dry-run`` the commands that make the runs it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console

from orchestrator.bisect import search as bisect_search
from workers.runtime.keys import REPO_ROOT  # this kernelfleet's checkout: it imports the results

if TYPE_CHECKING:
    from orchestrator.bisect.bisector import Bisect


def _step(b: Bisect, lo: int, hi: int) -> dict[str, Any]:
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
        "steps": [_step(b, lo, hi) for lo, hi in out.steps],
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


def print_pending(b: Bisect, console: Console) -> None:
    p = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    p(
        f"{len(b.commits)} commits, {b.planned_commits} planned, {len(b.segments)} with distinct keys "
        f"({sum(s.keys is None for s in b.segments)} could not be planned)"
    )
    from orchestrator.store.session import display_url

    store = display_url(b.url)
    p(f"{len(b.pending_plans)} plan(s) need runs; on a GPU machine, in a clone of {b.repo}:")
    for path, commit, have, need in b.pending_plans:
        # the commit's own workers run its plan; this checkout's orchestrator imports (an older commit's may not
        # know the store's schema); the files are numbered on from the runs the store already holds
        p(f"  git worktree add --detach /tmp/kf-{commit.short} {commit.sha} && cd /tmp/kf-{commit.short}")
        for i in range(have + 1, need + 1):
            out = path.with_name(f"{path.stem}-{i}.jsonl")
            imp = f"(cd {REPO_ROOT} && python -m orchestrator import {out} --url {store})"
            p(f"  python -m workers run {path} --out {out} && {imp}")
    p("then run this bisect again: it continues from the stored results")
