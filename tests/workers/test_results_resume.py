"""`python -m workers run --resume` after a results file whose last line was cut off (issue 21, point 4): the
partial line is removed first (and said so), so the file stays readable and the cut job runs again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from workers.runtime import runner

REPO = Path(__file__).resolve().parents[2]


def test_cut_partial_line_removes_only_an_unfinished_last_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert runner.cut_partial_line(path) == 0 and path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": ')
    assert runner.cut_partial_line(path) == 6 and path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    path.write_bytes(b'{"a"')
    assert runner.cut_partial_line(path) == 4 and path.read_bytes() == b""


def test_a_cut_off_last_line_is_an_error_when_read(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"kernelfleet": "results", "plan": {}}\n{"spec": {"kind": "mi')
    with pytest.raises(ValueError, match=r"r.jsonl:2: the last line is cut off"):
        runner.read_results(path)


def test_resume_after_a_cut_off_line_truncates_it_and_runs_the_job_again(tmp_path):
    plan, out = tmp_path / "plan.jsonl", tmp_path / "results.jsonl"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "+sweep=smoke",
            "dry_run=true",
            f"plan_out={plan}",
            "sweep.kernels=[rmsnorm]",
            "sweep.shapes=[[1,8,64]]",
            "sweep.dtypes=[bf16]",
            "sweep.kinds=[correctness]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    header, specs = runner.read_plan(plan)
    # a results file as an interrupted `workers run` leaves it: the header, then half of the job's line
    complete = tmp_path / "complete.jsonl"
    w = subprocess.run(
        [sys.executable, "-m", "workers", "run", str(plan), "--out", str(complete)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert w.returncode == 0, w.stdout + w.stderr
    lines = complete.read_bytes().splitlines(keepends=True)
    assert len(lines) == 1 + len(specs) == 2
    out.write_bytes(lines[0] + lines[1][: len(lines[1]) // 2])
    r = subprocess.run(
        [sys.executable, "-m", "workers", "run", str(plan), "--out", str(out), "--resume"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    said = " ".join(r.stderr.split())  # rich wraps long lines
    assert "its last line was cut off" in said and "removed it" in said
    assert "1 jobs in" in said and "0 done earlier, 1 to run" in said
    _, rows = runner.read_results(out)  # readable again, with the job run once more
    assert [s.key for s, _ in rows] == [s.key for s in specs]
    assert out.read_bytes().startswith(lines[0]) and out.read_bytes().endswith(b"\n")
