"""A wrong result never looks right (issue 46, point 4): a sweep with a planted incorrect Triton implementation
(tests/support/wrong_kernel.py), and every surface — the sweep's summary, report (compact, wide, Markdown), each
dashboard page, compare and export — marks it as incorrect, never draws it as a speed-up, and shows the failing
check (the job's stored error) one line or one table away."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from dashboard import pages
from orchestrator.cli import commands as cli
from orchestrator.store import session
from orchestrator.store.query import access
from tests.store import results_files as rf

REPO = Path(__file__).resolve().parents[2]
CHECK = "triton: case random: rel_err 0.3"  # the start of the error the correctness job stores for the planted result
pytestmark = pytest.mark.xdist_group("incorrect_marked")


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = cli.main(list(args), Console(file=out, width=250, soft_wrap=True))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("planted")
    url = session.sqlite_url_for(folder / "kf.db")
    out = folder / "wrong.jsonl"
    env = {
        **os.environ,
        "KERNELFLEET_PLUGINS": "tests.support.wrong_kernel",
        "KERNELFLEET_WRONG": "rmsnorm:triton:0.3",
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    env.pop(session.ENV_VAR, None)
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "+sweep=smoke", "sweep.kernels=[rmsnorm]", "sweep.shapes=[[1,16,256]]"]
        + ["sweep.dtypes=[fp32]", "sweep.seed=0", f"store.url={url}", f"results_out={out}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 1 and "run 1 · smoke" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]
    # the baseline: the same jobs measured correct an hour earlier at another commit (the file edited, re-imported)
    objs = [json.loads(line) for line in out.read_text().splitlines()]
    objs[0]["plan"]["commit"] = "b" * 40
    for obj in objs[1:]:
        result = obj["result"]
        result.update(status="ok", error=None, started_at=result["started_at"] - 3600)
        for m in result["measurements"]:
            if m["metric"] == "correct":
                m["value"] = 1.0
    rc, _, err = rf.run_import(str(rf.write(folder / "baseline.jsonl", objs)), "--url", url)
    assert rc == 0, err
    yield {"url": url, "stdout": proc.stdout, "folder": folder}
    session.dispose_engines()


def _row(text: str, impl: str) -> str:
    return next(line for line in text.splitlines() if f" {impl} " in line and "rmsnorm" in line)


def test_the_sweep_summary_and_report_mark_it_and_say_why(planted):
    for text in (planted["stdout"], _cli("report", "1", "--url", planted["url"])[1]):
        assert "NO" in _row(text, "triton") and "incorrect" in _row(text, "triton")
        assert " yes " in _row(text, "eager") and " ok " in _row(text, "eager"), "eager passed: not 'incorrect'"
        assert "x" not in _row(text, "triton").split("NO")[0].split()[-1], "no speed-up for it"
        assert f"incorrect: triton in correctness rmsnorm 1x16x256 fp32: {CHECK}" in text
    rc, wide, _ = _cli("report", "1", "--wide", "--url", planted["url"])
    assert rc == 0 and " micro " in _row(wide, "triton") and "NO" in _row(wide, "triton")
    table_rows = [line for line in wide.splitlines() if line.startswith("│") and " triton " in line]
    assert len(table_rows) == 1, "one row per implementation, not per job kind"
    page = planted["folder"] / "run.md"
    _cli("report", "1", "--markdown", str(page), "--url", planted["url"])
    text = page.read_text()
    assert "| micro | rmsnorm | 1x16x256 | fp32 | triton |" in text and "| NO | incorrect |" in text
    assert f"incorrect: triton in correctness rmsnorm 1x16x256 fp32: {CHECK}" in text


def _runs(url: str) -> str:
    """Each run (id, status, device, conditions) and run 1's jobs: what an assertion on the pages prints when a run
    is missing from one."""
    return _cli("runs", "--json", "--url", url)[1] + _cli("report", "1", "--wide", "--url", url)[1]


def test_every_page_marks_it(planted):
    url = planted["url"]
    src = access.open_read_only(url)
    overview = pages.build(src, "/", {"impl": "triton"}, url)
    (cell,) = overview.table("cells").rows
    assert cell["correct"] is False and cell["speedup_vs_eager"] is None
    labels = [t for trace in overview.figures[0].figure.data for r in trace.text for t in r]
    assert "✗ incorrect" in labels
    fastest = pages.build(src, "/", {"view": "fastest"}, url).table("fastest").rows[0]
    assert "triton (incorrect)" in fastest["left_out"]

    trends = pages.build(src, "/trends", {"kernel": "rmsnorm", "impl": "triton", "shape": ""}, url)
    points = trends.table("points").rows
    seen = [(p["run_id"], p["impl"], p["hardware_key"], p["correct"]) for p in points]
    assert {p["correct"] for p in points if p["run_id"] == 1} == {False}, (seen, trends.notes, _runs(url))
    assert all(p["speedup_vs_eager"] is None for p in points if p["run_id"] == 1)
    assert any(t.name and t.name.startswith("incorrect:") for t in trends.figures[0].figure.data)
    assert any("failed correctness" in n for n in trends.notes)

    bandwidth = pages.build(src, "/bandwidth", {"kernel": "rmsnorm"}, url)
    assert any(r["impl"] == "triton" and r["correct"] is False for r in bandwidth.tables[0].rows)

    runs = pages.build(src, "/runs", {"run": "1"}, url)
    failed = runs.table("failed").rows
    # the correctness job names the failing input case; the micro job's own check (the random inputs) does not
    assert failed and all(r["status"] == "incorrect" for r in failed)
    assert {r["kind"] for r in failed} == {"correctness", "micro"}
    assert all(r["error"].startswith(CHECK if r["kind"] == "correctness" else "triton: rel_err 0.3") for r in failed)

    compare = pages.build(src, "/compare", {"baseline": "run:2", "current": "run:1", "cpu": "1"}, url)
    rows = [r for r in compare.table("series").rows if r["impl"] == "triton"]
    assert rows and all(r["correct_baseline"] is True and r["correct_current"] is False for r in rows)


def test_compare_and_export_mark_it(planted):
    url = planted["url"]
    rc, out, _ = _cli("compare", "--baseline", "2", "--current", "1", "--include-cpu", "--json", "--url", url)
    report = json.loads(out)
    assert rc == 1 and report["counts"]["correctness_lost"] >= 1
    lost = [r for r in report["series"] if r["impl"] == "triton"]
    assert lost and all(r["correct_current"] is False for r in lost)
    md = planted["folder"] / "compare.md"
    _cli("compare", "--baseline", "2", "--current", "1", "--include-cpu", "--markdown", str(md), "--url", url)
    assert "correctness lost" in md.read_text().lower()

    rc, out, _ = _cli("export", "--run", "1", "--url", url)
    rows = list(csv.DictReader(io.StringIO(out)))
    times = {r["impl"]: r for r in rows if r["metric"] == "time_us" and r["kind"] == "micro"}
    assert times["triton"]["correct"] == "False" and times["eager"]["correct"] == "True"
