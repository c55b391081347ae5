"""`python -m orchestrator import` + `report --markdown` on the e2e job recorded on the H200
(results/h200/2026-11-30-0456-ltx-e2e.jsonl.gz): the page shows every mode with its step time, its speed-up and the
device's busy time per step from the job's profile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "results" / "h200" / "2026-11-30-0456-ltx-e2e.jsonl.gz"


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
    assert "| model | frames x H x W | dtype | mode | ms/step | vs eager | device busy ms |" in text
    rows = {line.split(" | ")[3]: line.split(" | ") for line in text.splitlines() if line.startswith("| ltx-video")}
    assert set(rows) == {"eager", "triton", "compile", "triton+compile"}
    # step time, speed-up against eager and the profiled device time, as the results file holds them
    assert rows["eager"][4:7] == ["37.2", "1.00x", "30.9"]
    assert rows["triton"][4:7] == ["41.1", "0.91x", "19.6"]
    assert rows["compile"][4:7] == ["21.7", "1.72x", "19.8"]
    assert rows["triton+compile"][4:7] == ["23.8", "1.57x", "18.9"]
    # that job predates the clock log (workers.gpu_clocks): its SM clock column says "not recorded"
    assert "| device busy ms | SM MHz | warm-up s |" in text and {r[7] for r in rows.values()} == {"–"}
