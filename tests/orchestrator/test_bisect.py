"""python -m orchestrator bisect: a throwaway repository whose commits slow a plugin kernel down at known commits
(tests/support/bisect_history.py) is bisected through the embedded Ray, each commit planned and run with its own
code; the search itself on a long history; and the one-line errors of a bisect that cannot start."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from orchestrator.__main__ import main
from orchestrator.bisect import search as bisect_search
from tests.support import bisect_history as hist

REPO = Path(__file__).resolve().parents[2]


def _search_on_levels(levels: list[float], failing: set[int] = frozenset()):
    """The search over segments whose measured level is ``levels[i]`` (a step: a level change); the rounds that
    measured something and the segments measured."""
    measured: set[int] = set()

    def measure(segments):
        new = [i for i in segments if i not in measured]
        measured.update(new)
        return {i for i in new if i in failing}, bool(new)

    return bisect_search.search(len(levels), measure, lambda a, b: levels[a] != levels[b]), measured


def test_long_history_needs_few_rounds_and_finds_the_commit():
    # 32 commits, 4 of them change the kernel: 5 segments of equal keys; the third change slows it down
    commits_per_segment = [7, 6, 8, 5, 6]
    assert sum(commits_per_segment) == 32
    levels = [1.0, 1.0, 1.0, 2.0, 2.0]
    out, measured = _search_on_levels(levels)
    assert out.steps == [(2, 3)]
    assert out.rounds <= math.ceil(math.log2(5)) + 1
    assert len(measured) < 5  # not every segment was measured


def test_search_reports_every_step_and_skips_segments_that_fail():
    out, _ = _search_on_levels([1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 4.0], failing={3})
    assert out.steps == [(1, 2), (5, 6)]
    assert 3 in out.skipped
    out, _ = _search_on_levels([1.0, 1.0, 1.0, 1.0])
    assert out.changed is False and out.steps == []


def test_search_with_a_failed_end_reports_nothing():
    out, _ = _search_on_levels([1.0, 2.0, 2.0], failing={2})
    assert out.changed is None and out.steps == []


def test_a_folder_without_history_is_one_line(tmp_path, capsys):
    code = main(
        ["bisect", "--good", "HEAD~1", "--bad", "HEAD", "--kernel", "rmsnorm", "--impl", "triton"]
        + ["--repo", str(tmp_path), "--url", f"sqlite:///{tmp_path}/s.db", "+sweep=smoke"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "not a git repository with history" in err


def test_good_must_be_an_ancestor_of_bad(tmp_path, capsys):
    repo = tmp_path / "repo"
    shas = hist.make_repo(repo, [("docs", {"README.md": "+more\n"})])
    code = main(
        ["bisect", "--good", shas[1], "--bad", shas[0], "--kernel", "probe", "--impl", "slow"]
        + ["--repo", str(repo), "--url", f"sqlite:///{tmp_path}/s.db", "+sweep=kernels"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "is not an ancestor of the bad commit" in err


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 4 plans and 6 sweeps: 3-4 min on an idle 2-core machine, 10+ on a loaded one
def test_bisect_finds_both_steps_and_explains_them_through_the_embedded_ray(tmp_path, monkeypatch, capsys):
    """Commit 1 slows the probe from 1 to 3 ms a call and clones its input three times instead of once, commit 4
    slows it to 9 ms; commit 2 cannot be imported (skipped), commit 3 restores commit 1's code (its keys: commit 1
    needs no run of its own).  The sweep profiles too, so each step is explained from the runs that measured it."""
    repo = tmp_path / "repo"
    shas = hist.make_repo(
        repo,
        [
            ("probe sleeps 3 ms, clones 3 times", {"kernels/bisect_probe.py": hist.probe(0.003, clones=3)}),
            ("probe broken", {"kernels/bisect_probe.py": "this is not python\n"}),
            ("probe fixed", {"kernels/bisect_probe.py": hist.probe(0.003, clones=3)}),
            ("probe sleeps 9 ms", {"kernels/bisect_probe.py": hist.probe(0.009, clones=3)}),
        ],
    )
    hist.host_only(monkeypatch)
    monkeypatch.setenv("KERNELFLEET_PLUGINS", hist.PLUGIN)
    monkeypatch.setenv("KERNELFLEET_MEASURE_CEILING", "0")
    url = f"sqlite:///{tmp_path}/store.db"
    sweep = ["+sweep=kernels", "sweep.kinds=[micro,profile]", "sweep.kernel_time=false", "sweep.graph=false"]
    code = main(
        ["bisect", "--good", shas[0], "--bad", shas[4], "--kernel", "probe", "--impl", "slow", "--explain"]
        + ["--shape", "64", "--dtype", "fp32", "--repo", str(repo), "--url", url, "--json", *sweep, "sweep.rep_ms=100"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)  # --json: the document alone on stdout, the progress on stderr
    assert [s["commit"] for s in doc["steps"]] == [shas[1], shas[4]]
    assert all(s["status"] == "confirmed" and s["direction"] == "regression" for s in doc["steps"])
    first, second = doc["steps"]
    assert first["candidates"] == [shas[1]]
    assert 2.0 < first["change"] + 1 < 4.0 and first["ci_low"] <= first["change"] + 1 <= first["ci_high"]
    assert 2.0 < second["change"] + 1 < 4.0
    assert [s["commit"] for s in doc["skipped"]] == [shas[2]] and "planned" in doc["skipped"][0]["why"]
    # segments {0}, {1}, {2} skipped, {3} (commit 1's keys), {4}: three measured, two runs each
    assert doc["runs"] == 6 and doc["rounds"] <= 3
    assert doc["planned_commits"] == 4  # commit 3's tree is commit 1's: one plan serves both
    assert doc["commits_reusing_keys"] == 1 and [s["commits"] for s in doc["segments"]][1] == [shas[1]]
    assert not any(r["commit"] == shas[1] for r in _runs(url))  # commit 3's runs stand for commit 1
    # the explanation of the first step names the injected change (three clones a call instead of one) from the
    # profiles its measured runs hold: no capture of its own
    why = first["explanation"]
    assert any("launches per call 1 → 3" in line for line in why["changes"]), why
    assert why["baseline_runs"] == first["baseline_runs"] and why["current_runs"] == first["current_runs"]
    assert "capturing" not in err and "probe 64 fp32 slow changed 2 times" in err


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 6 plans: 2 min on an idle 2-core machine, 6+ on a loaded one
def test_a_32_commit_history_is_five_segments_and_dry_run_writes_their_end_plans(tmp_path, monkeypatch, capsys):
    """32 commits, 4 of which change the probe's module and one another kernel's: 6 plans (the docs commits share
    their tree), 5 segments of equal keys; --dry-run writes the two ends' plans, made by those commits' own code,
    and what to run."""
    changes = {7: 0.002, 13: 0.003, 20: 0.004, 26: 0.005}  # commit number -> the probe's new delay
    commits = [
        (f"probe sleeps {changes[i]} s", {"kernels/bisect_probe.py": hist.probe(changes[i])})
        if i in changes
        else (f"docs {i}", {"README.md": f"+line {i}\n"})
        for i in range(1, 32)
    ]
    # commit 3 changes another kernel's module: a plan of its own, the probe's keys of the commit before it
    commits[2] = ("a comment in rmsnorm", {"kernels/rmsnorm.py": "+# a comment\n"})
    repo = tmp_path / "repo"
    shas = hist.make_repo(repo, commits)
    hist.host_only(monkeypatch)
    monkeypatch.setenv("KERNELFLEET_PLUGINS", hist.PLUGIN)
    plans = tmp_path / "plans"
    plans.mkdir()
    code = main(
        ["bisect", "--good", shas[0], "--bad", shas[31], "--kernel", "probe", "--impl", "slow", "--shape", "64"]
        + ["--repo", str(repo), "--url", f"sqlite:///{tmp_path}/s.db", "--dry-run", str(plans), "+sweep=kernels"]
    )
    out = capsys.readouterr().out
    assert code == 3, out
    assert "32 commits, 6 planned, 5 with distinct keys (0 could not be planned)" in out
    written = sorted(plans.glob("*.jsonl"))
    assert sorted(p.name for p in written) == sorted(f"plan-{s[:10]}.jsonl" for s in (shas[0], shas[26]))
    for path in written:
        header = json.loads(path.read_text().splitlines()[0])
        assert header["commit"].startswith(path.stem.split("-")[1])  # planned by that commit's own code
        run2 = f"python -m workers run {path} --out {plans}/{path.stem}-2.jsonl"
        # this checkout's orchestrator imports: an older commit's, in its worktree, may refuse the store's schema
        assert f"{run2} && (cd {REPO} && python -m orchestrator import {plans}/{path.stem}-2.jsonl --url" in out


def _runs(url: str) -> list[dict]:
    from orchestrator.store.query import run_queries

    return run_queries.list_runs(url, 100)


def test_a_commit_knows_the_store_when_its_migrations_hold_the_stores_revision(tmp_path):
    """A commit whose migrations/versions lacks the store's revision cannot open the store (its code refuses a
    store "written by a newer kernelfleet"); bisect then runs it into a store of its own (next test)."""
    from orchestrator.bisect.git import Commit
    from orchestrator.bisect.run import CommitRunner
    from orchestrator.store import migrate

    repo = tmp_path / "repo"
    shas = hist.make_repo(repo, [])
    newest = sorted((repo / "migrations" / "versions").glob(f"{migrate.head()}_*.py"))
    assert len(newest) == 1
    hist.git(repo, "rm", "--quiet", str(newest[0].relative_to(repo)))
    hist.git(repo, "commit", "--quiet", "-m", "a commit from before the newest migration")
    older = hist.git(repo, "rev-parse", "HEAD")
    url = f"sqlite:///{tmp_path}/store.db"
    migrate.upgrade(url)
    runner = CommitRunner(repo, [], url, tmp_path / "work")
    assert runner.opens_the_store(Commit(shas[0], "base"))
    assert not runner.opens_the_store(Commit(older, "older"))
    # an empty store is opened by any commit (its own code creates the schema)
    assert CommitRunner(repo, [], f"sqlite:///{tmp_path}/new.db", tmp_path / "w2").opens_the_store(Commit(older, "o"))


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_commit_that_cannot_open_the_store_is_run_into_its_own_and_imported(tmp_path, monkeypatch):
    """The commit's sweep writes to a fresh store of its own schema and a results file; the file is imported into
    the bisect's store, where its run holds the commit and the series' points (one run: bisect asks for the runs a
    segment needs one at a time through the same path)."""
    from orchestrator.bisect.git import Commit
    from orchestrator.bisect.run import CommitRunner
    from orchestrator.store import migrate
    from orchestrator.store.query import bisect_queries

    repo = tmp_path / "repo"
    shas = hist.make_repo(repo, [])
    hist.host_only(monkeypatch)
    monkeypatch.setenv("KERNELFLEET_PLUGINS", hist.PLUGIN)
    monkeypatch.setenv("KERNELFLEET_MEASURE_CEILING", "0")
    url = f"sqlite:///{tmp_path}/store.db"
    migrate.upgrade(url)
    sweep = ["+sweep=kernels", "sweep.kernels=[probe]", "sweep.kinds=[micro]", "sweep.shapes=[[64]]"]
    runner = CommitRunner(repo, [*sweep, "sweep.dtypes=[fp32]", "sweep.graph=false", "sweep.rep_ms=50"], url, tmp_path)
    monkeypatch.setattr(CommitRunner, "opens_the_store", lambda self, commit: False)
    commit = Commit(shas[0], "base")
    planned = runner.plan(commit)
    assert planned.keys, planned.error
    assert runner.run(commit, 1, rerun=False) is None
    (run,) = _runs(url)
    assert run["commit"] == shas[0], run
    series = bisect_queries.key_points(url, "time_us", "probe", "slow", planned.keys)
    assert series and all([p["run_id"] for p in points] == [run["id"]] for points in series.values()), series
