"""What a run was made under (runs.conditions): a dirty checkout, a GPU shared with other nodes, a rehearsal.
Recorded by sweeps and imports, shown by `runs`, left out of `compare` by commit unless asked (issue 46, point 3)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.cli import commands as cli
from orchestrator.interchange.importer import results_files
from orchestrator.run import conditions as run_conditions
from orchestrator.run.schedule import NodeView
from orchestrator.store import conditions
from orchestrator.store.query import run_queries
from tests.store import results_files as rf

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = cli.main(list(args), Console(file=out, width=300, soft_wrap=True))
    return rc, out.getvalue(), err.getvalue()


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_tree_state_marks_uncommitted_changes_to_the_code_jobs_run(tmp_path):
    root = tmp_path / "repo"
    (root / "kernels").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "kernels" / "k.py").write_text("A = 1\n")
    (root / "docs" / "d.md").write_text("doc\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    assert run_conditions.tree_state(root) is None
    (root / "docs" / "d.md").write_text("changed\n")
    assert run_conditions.tree_state(root) is None, "a docs change measures nothing differently"
    (root / "kernels" / "k.py").write_text("A = 2\n")
    one = run_conditions.tree_state(root)
    assert one["dirty"] is True and len(one["diff_sha256"]) == 64
    (root / "kernels" / "new.py").write_text("B = 1\n")  # an uncommitted kernel
    two = run_conditions.tree_state(root)
    assert two["dirty"] and two["diff_sha256"] != one["diff_sha256"]
    assert run_conditions.tree_state(tmp_path / "not-a-repo") is None


def test_fleet_conditions_shared_host_and_rehearsal():
    def node(host: str, labels=None, gpus=1):
        return NodeView(f"n-{host}-{len(labels or {})}", True, labels or {}, {"GPU": gpus, f"node:{host}": 1.0})

    assert run_conditions.fleet_conditions([node("10.0.0.1"), node("10.0.0.2")]) is None
    shared = run_conditions.fleet_conditions([node("10.0.0.1"), node("10.0.0.1", {"x": "y"})])
    assert shared["shared_gpu"] and "2 GPU nodes on one host" in shared["note"]
    rehearsing = run_conditions.fleet_conditions(
        [node("10.0.0.1"), node("10.0.0.2", {"kernelfleet.io/rehearsal-of": "h200", "kernelfleet.io/gpu": "r"})]
    )
    assert rehearsing["rehearsal"] and not rehearsing.get("shared_gpu")
    assert run_conditions.fleet_conditions([node("10.0.0.1"), node("10.0.0.1", gpus=0)]) is None, "a CPU head"


def test_conditions_are_checked():
    assert conditions.checked({"note": "only a note"}) is None
    assert conditions.checked({"dirty": False}) is None
    with pytest.raises(ValueError, match="unknown key"):
        conditions.checked({"shared": True})
    with pytest.raises(ValueError, match="shared_gpu"):
        conditions.checked({"shared_gpu": "yes"})
    assert conditions.describe({"dirty": True, "diff_sha256": "ab" * 32}) == "uncommitted changes (diff abababab)"


def test_an_import_marks_runs_from_the_header_and_the_folder_manifest(store_url, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    rf.write(folder / "2026-01-01-plain.jsonl", rf.lines("a" * 40))
    rehearsal = rf.lines("b" * 40)
    rf.write(folder / "2026-01-02-fleet-scaling.jsonl", rehearsal)
    dirty = rf.lines("c" * 40)
    dirty[0]["plan"]["conditions"] = {"dirty": True, "diff_sha256": "d" * 64}
    rf.write(folder / "2026-01-03-dirty.jsonl", dirty)
    (folder / "conditions.json").write_text(
        json.dumps({"files": {"*-fleet-*": {"shared_gpu": True, "rehearsal": True, "note": "two nodes, one GPU"}}})
    )
    rc, out, err = rf.run_import(str(folder), "--url", store_url)
    assert rc == 0, err
    by_commit = {r["commit"][0]: r for r in run_queries.list_runs(store_url)}
    assert by_commit["a"]["conditions"] is None and by_commit["a"]["marked"] == ""
    assert by_commit["b"]["conditions"] == {"shared_gpu": True, "rehearsal": True, "note": "two nodes, one GPU"}
    assert by_commit["c"]["conditions"] == {"dirty": True, "diff_sha256": "d" * 64}
    rc, out, _ = _cli("runs", "--url", store_url)
    assert (
        rc == 0
        and "GPU shared with other nodes; fleet rehearsal" in out
        and "uncommitted changes (diff dddddddd)" in out
    )
    rc, out, _ = _cli("runs", "--json", "--url", store_url)
    assert {r["commit"][0]: r["conditions"] for r in json.loads(out)["runs"]}["c"]["dirty"] is True

    # compare: a commit stands for its plain runs; one whose runs are all marked says so, --include-marked takes them
    rc, _, err = _cli("compare", "--baseline", "a" * 8, "--current", "b" * 8, "--url", store_url)
    assert rc == 2 and "are marked" in err and "--include-marked" in err
    rc, out, err = _cli(
        "compare", "--baseline", "a" * 8, "--current", "b" * 8, "--include-marked", "--json", "--url", store_url
    )
    assert rc in (0, 1), err
    report = json.loads(out)
    assert report["current"][0]["marked"].startswith("GPU shared with other nodes")
    run_b = by_commit["b"]["id"]
    rc, out, err = _cli("compare", "--baseline", "a" * 8, "--current", str(run_b), "--json", "--url", store_url)
    assert rc in (0, 1), "a run named by id is taken as asked"


def test_a_bad_manifest_stops_the_import(store_url, tmp_path):
    rf.write(tmp_path / "r.jsonl", rf.lines("a" * 40))
    (tmp_path / "conditions.json").write_text(json.dumps({"files": {"*": {"shared": True}}}))
    rc, _, err = rf.run_import(str(tmp_path), "--url", store_url)
    assert rc == 2 and "unknown key(s) shared" in err
    assert rf.counts(store_url)["runs"] == 0


def test_the_shipped_fleet_results_are_marked():
    """results/h200/conditions.json marks every fleet rehearsal file (docs/perf/fleet.md) and nothing else."""
    folder = REPO / "results" / "h200"
    for path in results_files(folder):
        marks = run_conditions.manifest_conditions(path)
        if "-fleet-" in path.name:
            assert marks and marks["rehearsal"] and marks["dirty"], path.name
        else:
            assert marks is None, path.name


def test_compare_of_sides_with_no_series_in_common_says_nothing_was_compared(store_url, tmp_path):
    """Sides with no series measured on both (a reading neither side took): the Markdown does not say "No confirmed
    regression"."""
    rf.write(tmp_path / "a.jsonl", rf.lines("a" * 40))
    rf.write(tmp_path / "b.jsonl", rf.lines("b" * 40))
    for name in ("a.jsonl", "b.jsonl"):
        assert rf.run_import(str(tmp_path / name), "--url", store_url)[0] == 0
    md = tmp_path / "compare.md"
    rc, _, err = _cli(
        "compare",
        "--baseline",
        "1",
        "--current",
        "2",
        "--include-cpu",
        "--metric",
        "graph_time_us",
        "--markdown",
        str(md),
        "--url",
        store_url,
    )
    assert rc == 0, err
    text = md.read_text()
    assert "Nothing compared" in text and "No confirmed regression" not in text
