"""`python -m orchestrator import` + `report --markdown` on e2e jobs recorded on the H200
(results/h200/2026-11-30-0456-ltx-e2e.jsonl.gz, results/h200/2026-12-01-1647-ltx-e2e.jsonl.gz): the page shows every
mode with its step time, its speed-up, the host's time per step and the device's busy time per step from the job's
profile, the device floor (GEMM + attention) and each injected mode against the fastest torch.compile mode of its
own kind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "results" / "h200" / "2026-11-30-0456-ltx-e2e.jsonl.gz"
WITH_HOST = REPO / "results" / "h200" / "2026-12-01-1647-ltx-e2e.jsonl.gz"


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "250", **__import__("os").environ},
    )


def test_e2e_page_shows_each_mode_with_device_busy_time(tmp_path):
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    imp = cli("import", str(RECORDED), "--url", url)
    assert imp.returncode == 0, imp.stdout + imp.stderr
    page = tmp_path / "e2e.md"
    rep = cli("report", "--url", url, "--markdown", str(page))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    text = page.read_text()
    assert "| model | shape | dtype | mode | ms/step | vs eager | host ms | device busy ms |" in text
    rows = {line.split(" | ")[3]: line.split(" | ") for line in text.splitlines() if line.startswith("| ltx-video")}
    assert set(rows) == {"eager", "triton", "compile", "triton+compile"}
    # step time, speed-up against eager and the profiled device time, as the results file holds them; that job
    # predates the host-time probe and the clock log (workers.device.clocks): host ms and SM clock say "not recorded"
    assert rows["eager"][4:8] == ["37.2", "1.00x", "–", "30.9"]
    assert rows["triton"][4:8] == ["41.1", "0.91x", "–", "19.6"]
    assert rows["compile"][4:8] == ["21.7", "1.72x", "–", "19.8"]
    assert rows["triton+compile"][4:8] == ["23.8", "1.57x", "–", "18.9"]
    assert "| device busy ms | floor ms | rest ms | over floor ms | SM MHz | warm-up s |" in text
    assert {r[11] for r in rows.values()} == {"–"}


def test_e2e_page_shows_host_time_beside_device_time(tmp_path):
    """A host-bound mode reads as such: plain `triton` needs 35.1 ms of host time a step for 17.1 ms of device time;
    its CUDA-graph mode, 1.2 ms."""
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    assert cli("import", str(WITH_HOST), "--url", url).returncode == 0
    page = tmp_path / "e2e.md"
    rep = cli("report", "--url", url, "--markdown", str(page))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    rows = {l.split(" | ")[3]: l.split(" | ") for l in page.read_text().splitlines() if l.startswith("| ltx-video")}
    assert rows["triton"][4:8] == ["35.5", "1.19x", "35.1", "17.1"]
    assert rows["triton+graph"][4:8] == ["18.9", "2.23x", "1.2", "17.6"]


def test_e2e_page_sets_each_injected_mode_against_its_own_kinds_anchor_and_shows_the_floor(tmp_path):
    """Host A's seed-setting job: graphs against graphs (compile+graph 21.29 against triton+graph 18.87: 1.129x),
    plain calls against plain calls (compile 21.72 against triton+compile 19.65: 1.105x), never across; each mode's
    GEMM + attention floor from its profile and its distance from it."""
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    assert cli("import", str(WITH_HOST), "--url", url).returncode == 0
    page = tmp_path / "e2e.md"
    rep = cli("report", "--url", url, "--markdown", str(page))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    text = page.read_text()
    rows = {l.split(" | ")[3]: l.split(" | ") for l in text.splitlines() if l.startswith("| ltx-video")}
    assert rows["triton+graph"][8:11] == ["15.27", "2.31", "3.59"]  # floor, rest, over floor
    assert rows["compile+graph"][8:11] == ["15.98", "3.93", "5.32"]
    head = "| shape | kind | anchor (fastest torch.compile) | anchor ms/step | injected mode | ms/step |"
    anchors = text[text.index(head) :].split("\n\n")[0].splitlines()[2:]
    assert anchors == [
        "| 25x480x704 | CUDA graphs | compile+graph | 21.29 | triton+graph | 18.87 | 1.129x |",
        "| 25x480x704 | CUDA graphs | compile+graph | 21.29 | triton+compile+graph | 19.01 | 1.120x |",
        "| 25x480x704 | plain calls | compile | 21.72 | triton | 35.52 | 0.612x |",
        "| 25x480x704 | plain calls | compile | 21.72 | triton+compile | 19.65 | 1.105x |",
        "| 25x480x704 | plain calls | compile | 21.72 | triton+compile-max | 26.18 | 0.830x |",
    ]
    assert "- floor ms: the device's GEMM + attention time per step" in text
    # the terminal summary shows the same table
    assert "end to end against torch.compile, kind against kind" in rep.stdout and "1.129x" in rep.stdout


def test_e2e_status_and_notes_say_which_modes_did_not_run_and_why():
    from orchestrator.reports.e2e import e2e_notes
    from orchestrator.reports.summary import e2e_status

    why = "torch.compile's reduce-overhead mode replays CUDA graphs; runs on a CUDA GPU"
    rows = [
        {"job_id": 1, "shape": [9, 64, 96], "mode": "eager", "ms_per_step": 5.0, "status": "ok", "correct": 1.0},
        {"job_id": 1, "shape": [9, 64, 96], "mode": "compile-ro", "ms_per_step": None, "status": "ok", "not_run": why},
        {"job_id": 1, "shape": [9, 64, 96], "mode": "compile", "ms_per_step": None, "status": "incorrect",
         "mode_error": "RuntimeError: boom"},
    ]  # fmt: skip
    assert [e2e_status(r) for r in rows] == ["ok", "not run", "error"]
    assert e2e_notes(rows) == [f"not run: compile-ro: {why}"]  # no profile: no floor note; no compile mode: no anchor
