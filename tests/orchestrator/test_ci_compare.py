"""docs/ci.md's plain-shell steps (.ci/compare-pr) end to end on the CPU: a sweep twice per side through the real
CLI (local Ray, Triton's interpreter), then `compare --include-cpu`, its Markdown, plots and JSON.

Both sides are this checkout (a CPU test cannot build another commit's sweep cheaply); the plan is the smoke sweep
cut to one kernel, shape and dtype (two jobs a run), run through `python -m workers run` (RUNNER=workers: no Ray
start per run) to keep four runs short on a 2-core machine.  Two runs a side of one shape give
the rule too few degrees of freedom to confirm anything, so the expected exit status is 0 whatever the CPU's noise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.devices import CPU_ONLY_ENV

REPO = Path(__file__).resolve().parents[2]
TINY = "+sweep=smoke sweep.kernels=[rmsnorm] sweep.shapes=[[1,16,256]] sweep.dtypes=[fp32]"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # four plans run and imported: 3-4 min on an idle 2-core machine, 12+ on a loaded one
def test_the_shell_steps_sweep_twice_per_side_and_compare(tmp_path):
    out = tmp_path / "out"
    env = {
        **os.environ,
        **CPU_ONLY_ENV,  # the CPU's steps on any host (on a GPU the smoke sweep times more implementations)
        "BASE_DIR": str(REPO),
        "HEAD_DIR": str(REPO),
        "SWEEP": TINY,
        "OUT_DIR": str(out),
        "COMPARE_ARGS": "--include-cpu",
        "RUNNER": "workers",
        "PYTHON": sys.executable,
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
    }
    env.pop("KERNELFLEET_DB", None)
    p = subprocess.run(
        ["bash", str(REPO / ".ci" / "compare-pr")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "baseline runs 2,1, current runs 4,3" in p.stderr, p.stderr[-2000:]
    report = json.loads((out / "compare.json").read_text())
    assert report["exit_code"] == 0 and report["schema"] == "kernelfleet.compare"
    assert sorted(r["id"] for r in report["baseline"]) == [1, 2] and sorted(r["id"] for r in report["current"]) == [
        3,
        4,
    ]
    rows = {r["impl"]: r for r in report["series"]}
    assert set(rows) == {"triton", "eager"} and all(
        r["device"] == "cpu" and r["state"] == "both" for r in rows.values()
    )
    assert all(len(r["baseline_points"]) == 2 and len(r["current_points"]) == 2 for r in rows.values())
    assert all(r["correct_baseline"] is True and r["correct_current"] is True for r in rows.values())
    md = (out / "compare.md").read_text()
    assert "### Summary per kernel × GPU type" in md and "<details>" in md
    (plot,) = (out / "compare-plots").glob("*.svg")
    assert f"](compare-plots/{plot.name})" in md
