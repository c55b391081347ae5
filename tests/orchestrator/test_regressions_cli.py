"""`python -m orchestrator regressions`: exit 1 only for a confirmed regression, one run against one is
unconfirmed, --json for machines, CPU timings left out unless asked, usage errors exit 2 in one line.

The data are the rmsnorm results recorded on the H200 (results/h200/2026-11-29-1421-rmsnorm.jsonl.gz) and copies
of them as another run would store them: new job keys, every time scaled per series by a small fixed jitter (the
between-run spread), and for a slower commit the Triton implementation's repeats 25 % slower.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

from orchestrator.plan.jobs import CodeVersion, job_key
from workers.spec import DeviceInfo, JobSpec

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "results" / "h200" / "2026-11-29-1421-rmsnorm.jsonl.gz"


def _copy(dst: Path, tag: str, *, triton: float = 1.0, jitter: float = 0.0, cpu: bool = False) -> Path:
    """The recorded run as run ``tag`` would store it: each series' times times (1 +- jitter), Triton's times
    ``triton``; ``cpu``: as measured on a CPU."""
    with gzip.open(RECORDED, "rt") as f:
        lines = f.read().splitlines()
    out = []
    code = None
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if i == 0:
            obj["plan"]["commit"] = tag.ljust(40, "0")[:40]
            obj["plan"]["plan_key"] = tag
            code = CodeVersion.from_dict(obj["plan"])
        else:  # the jobs as the planner keys them on that commit
            obj["spec"]["key"] = obj["result"]["key"] = job_key(JobSpec.from_dict(obj["spec"]), code)
            if cpu and obj["result"].get("device"):
                device = dict(
                    obj["result"]["device"],
                    vendor="cpu",
                    name="x86_64 CPU",
                    gpu_type="cpu",
                    arch="x86_64",
                    runtime="",
                    driver="",
                    torch="2.13.0",
                    triton="3.5.0",
                )
                device.pop("hardware_key", None)
                obj["result"]["device"] = DeviceInfo.from_dict(device).to_dict()
            for j, m in enumerate(obj["result"]["measurements"]):
                if m["metric"] != "time_us":
                    continue
                f = (1.0 + jitter * (1 if (i + j) % 2 else -1)) * (triton if m["impl"] == "triton" else 1.0)
                m["value"] *= f
                m["samples"] = [x * f for x in m["samples"]]
        out.append(json.dumps(obj))
    dst.write_text("\n".join(out) + "\n")
    return dst


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "250"},
    )


def _import(url: str, *files: Path) -> None:
    for f in files:
        p = cli("import", str(f), "--url", url)
        assert p.returncode == 0, p.stderr


def test_one_run_against_one_is_unconfirmed_and_two_per_side_gate(tmp_path):
    url = f"sqlite:///{tmp_path}/kf.db"
    _import(
        url,
        RECORDED,
        _copy(tmp_path / "b2.jsonl", "base2", jitter=0.004),
        _copy(tmp_path / "s1.jsonl", "slow1", triton=1.25, jitter=0.003),
        _copy(tmp_path / "s2.jsonl", "slow2", triton=1.25, jitter=0.005),
    )
    one = cli("regressions", "3", "--baseline", "1", "--url", url)
    assert one.returncode == 0, one.stderr
    rows = [ln for ln in one.stdout.splitlines() if "rmsnorm" in ln]
    assert len(rows) == 9 and all("triton" in ln and "unconfirmed" in ln for ln in rows), one.stdout
    assert "two runs per side" in one.stdout and "0 confirmed" in one.stdout

    two = cli("regressions", "3", "4", "--baseline", "1", "2", "--url", url)
    assert two.returncode == 1 and "Traceback" not in two.stderr, two.stdout + two.stderr
    rows = [ln for ln in two.stdout.splitlines() if "rmsnorm" in ln]
    assert len(rows) == 9 and all("triton" in ln and "regression (" in ln and "x spread" in ln for ln in rows), (
        two.stdout + two.stderr
    )

    js = cli("regressions", "3", "4", "--baseline", "1", "2", "--json", "--url", url)
    assert js.returncode == 1
    report = json.loads(js.stdout)
    assert (report["schema"], report["schema_version"]) == ("kernelfleet.regressions", 1)
    assert report["exit_code"] == 1 and report["baseline_runs"] == [1, 2] and report["runs"] == [3, 4]
    assert {(f["impl"], f["status"], f["device"]) for f in report["flags"]} == {("triton", "confirmed", "gpu")}

    same = cli("regressions", "2", "--baseline", "1", "--url", url)
    assert same.returncode == 0 and "no change of 5% or more" in same.stdout, same.stdout
    aa = cli("regressions", "4", "--baseline", "3", "--json", "--url", url)
    assert aa.returncode == 0 and json.loads(aa.stdout)["flags"] == []

    # the A/A figure (benchmarks/aa_check.py) on the same store: runs 1 and 2 identical, 3 and 4 slowed
    fig = subprocess.run(
        [sys.executable, "benchmarks/aa_check.py", "--url", url, "--runs", "1", "2", "--slowed", "3", "4", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fig.returncode == 0, fig.stderr
    result = json.loads(fig.stdout)
    rows = {r["impl"]: r for r in result["spread"]}
    assert rows["triton"]["series"] == 9 and rows["triton"]["within_2pct"] == 1.0, rows
    assert result["aa"]["A2 vs A1"]["alerts"] == []
    assert {(f["kernel"], f["impl"]) for f in result["slowed"]["confirmed"]} == {("rmsnorm", "triton")}


def test_usage_errors_exit_2_in_one_line(tmp_path):
    url = f"sqlite:///{tmp_path}/kf.db"
    _import(url, RECORDED)
    for args in (["99"], ["1", "--baseline", "99"], ["1", "2"], ["1", "--baseline", "1"], ["1", "--threshold", "-1"]):
        p = cli("regressions", *args, "--url", url)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.startswith("error:")


def test_cpu_timings_are_labelled_and_judged_only_on_request(tmp_path):
    url = f"sqlite:///{tmp_path}/kf.db"
    _import(
        url,
        _copy(tmp_path / "c1.jsonl", "cpu1", cpu=True),
        _copy(tmp_path / "c2.jsonl", "cpu2", cpu=True),
        _copy(tmp_path / "c3.jsonl", "cpu3", cpu=True, triton=1.9, jitter=0.01),
        _copy(tmp_path / "c4.jsonl", "cpu4", cpu=True, triton=1.9, jitter=0.02),
    )
    p = cli("regressions", "3", "4", "--baseline", "1", "2", "--url", url)
    assert p.returncode == 0 and "measured on a CPU not judged" in p.stdout, p.stdout
    asked = cli("regressions", "3", "4", "--baseline", "1", "2", "--include-cpu", "--url", url)
    assert asked.returncode == 1 and "(cpu timings)" in asked.stdout, asked.stdout
