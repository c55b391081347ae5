"""`python -m orchestrator regressions`: a slowdown that is large and significant is flagged, noise is not.

The data are the rmsnorm results recorded on the H200 (docs/perf/h200-2026-11-29/results-rmsnorm.jsonl) and a copy
of them as a later commit would produce, with the Triton implementation's repeats made 25 % slower.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from orchestrator.plan import CodeVersion, job_key
from workers.spec import JobSpec

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "docs" / "perf" / "h200-2026-11-29" / "results-rmsnorm.jsonl"


def _slower_copy(dst: Path, factor: float) -> None:
    lines = RECORDED.read_text().splitlines()
    out = []
    code = None
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if i == 0:
            obj["plan"]["commit"] = "0" * 40  # "the next commit"
            obj["plan"]["plan_key"] = "slower"
            code = CodeVersion(obj["plan"]["commit"], obj["plan"]["kernels_hash"])
        else:  # the jobs as the planner keys them on that commit
            obj["spec"]["key"] = obj["result"]["key"] = job_key(JobSpec.from_dict(obj["spec"]), code)
            for m in obj["result"]["measurements"]:
                if m["impl"] == "triton" and m["metric"] == "time_us":
                    m["value"] *= factor
                    m["samples"] = [x * factor for x in m["samples"]]
        out.append(json.dumps(obj))
    dst.write_text("\n".join(out) + "\n")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"COLUMNS": "250", **__import__("os").environ})


def test_a_real_slowdown_is_flagged_against_the_baseline_run(tmp_path):
    url = f"sqlite:///{tmp_path}/kf.db"
    slower = tmp_path / "slower.jsonl"
    _slower_copy(slower, 1.25)
    assert cli("import", str(RECORDED), "--url", url).returncode == 0
    assert cli("import", str(slower), "--url", url).returncode == 0
    p = cli("regressions", "2", "--baseline", "1", "--url", url)
    assert p.returncode == 0, p.stderr
    flagged = [ln for ln in p.stdout.splitlines() if "rmsnorm" in ln]
    assert len(flagged) == 9 and all("triton" in ln and "+25.0% (regression)" in ln for ln in flagged), p.stdout
    # the same data against itself: nothing to flag
    same = cli("regressions", "1", "--baseline", "1", "--url", url)
    assert same.returncode == 0 and "no change of 5% or more" in same.stdout
