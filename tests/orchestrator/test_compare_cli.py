"""`python -m orchestrator compare`: REFs as run ids, commit prefixes and branch names; exit 1 on a confirmed
regression or a correctness loss, 0 otherwise, 2 on a usage error; --json and --markdown with SVG plots.

The data are the rmsnorm results recorded on the H200 (results/h200/2026-11-29-1421-rmsnorm.jsonl.gz), stored
again as other runs would store them: the commit replaced, each replicate with its own seed (so its own job keys),
every time scaled per series by a small fixed jitter, and on the slower commit Triton's repeats 25 % slower.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

from orchestrator.plan.jobs import CodeVersion, job_key
from tests.orchestrator.test_regressions_cli import RECORDED, cli
from workers.spec import JobSpec


def _copy(dst: Path, commit: str, seed: int, *, triton: float = 1.0, jitter: float = 0.0, wrong: bool = False):
    with gzip.open(RECORDED, "rt") as f:
        lines = f.read().splitlines()
    out = []
    code = None
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if i == 0:
            obj["plan"]["commit"] = commit
            obj["plan"]["plan_key"] = f"{commit}-{seed}"
            code = CodeVersion.from_dict(obj["plan"])
        else:
            obj["spec"]["params"]["seed"] = seed
            obj["spec"]["key"] = obj["result"]["key"] = job_key(JobSpec.from_dict(obj["spec"]), code)
            for j, m in enumerate(obj["result"]["measurements"]):
                if m["metric"] == "correct" and wrong and m["impl"] == "triton":
                    m["value"] = 0.0
                if m["metric"] != "time_us":
                    continue
                f = (1.0 + jitter * (1 if (i + j) % 2 else -1)) * (triton if m["impl"] == "triton" else 1.0)
                m["value"] *= f
                m["samples"] = [x * f for x in m["samples"]]
            if wrong and obj["spec"]["kind"] == "correctness":
                obj["result"]["status"] = "incorrect"
        out.append(json.dumps(obj))
    dst.write_text("\n".join(out) + "\n")
    return dst


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_compare_by_commit_and_branch_gates_and_writes_a_report(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "feature")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "slower")
    feat_sha = _git(repo, "rev-parse", "HEAD")
    url = f"sqlite:///{tmp_path}/kf.db"
    files = [
        _copy(tmp_path / "b1.jsonl", base_sha, 1, jitter=0.002),
        _copy(tmp_path / "b2.jsonl", base_sha, 2, jitter=0.004),
        _copy(tmp_path / "c1.jsonl", feat_sha, 1, triton=1.25, jitter=0.003),
        _copy(tmp_path / "c2.jsonl", feat_sha, 2, triton=1.25, jitter=0.005),
    ]
    for f in files:
        p = cli("import", str(f), "--url", url)
        assert p.returncode == 0, p.stderr

    md = tmp_path / "out" / "compare.md"
    p = cli(
        "compare",
        "--baseline",
        "main",
        "--current",
        "feature",
        "--repo",
        str(repo),
        "--url",
        url,
        "--markdown",
        str(md),
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert "feature: commit " + feat_sha[:12] + ", run(s) 3, 4" in p.stdout
    assert "9 confirmed regression(s)" in p.stdout, p.stdout
    text = md.read_text()
    assert text.index("### Summary") < text.index("### Confirmed changes") < text.index("<details>")
    assert "| rmsnorm | h200 | triton | 1.25" in text and "confirmed regression" in text
    plots = sorted((tmp_path / "out" / "compare-plots").glob("*.svg"))
    assert len(plots) == 1 and "](compare-plots/" + plots[0].name + ")" in text
    svg = plots[0].read_text()
    assert svg.startswith("<svg") and svg.count("<circle") >= 2 * 9 * 5

    js = cli("compare", "--baseline", base_sha[:8], "--current", "3,4", "--url", url, "--json")
    assert js.returncode == 1
    report = json.loads(js.stdout)
    assert report["schema"] == "kernelfleet.compare" and report["schema_version"] == 1 and report["exit_code"] == 1
    assert [r["id"] for r in report["baseline"]] == [1, 2] and [r["id"] for r in report["current"]] == [3, 4]
    tri = [r for r in report["series"] if r["impl"] == "triton"]
    assert len(tri) == 9 and all(
        r["verdict"] == "confirmed" and r["ci_low"] > 1.15 and r["ci_high"] < 1.35 for r in tri
    )
    others = [r for r in report["series"] if r["impl"] != "triton"]
    assert others and all(r["verdict"] is None for r in others)

    aa = cli("compare", "--baseline", "1", "--current", "2", "--url", url)
    assert aa.returncode == 0, aa.stdout + aa.stderr


def test_a_correctness_loss_exits_1(tmp_path):
    url = f"sqlite:///{tmp_path}/kf.db"
    for f in (_copy(tmp_path / "b.jsonl", "a" * 40, 1), _copy(tmp_path / "c.jsonl", "c" * 40, 1, wrong=True)):
        assert cli("import", str(f), "--url", url).returncode == 0
    p = cli("compare", "--baseline", "aaaa", "--current", "cccc", "--url", url, "--json")
    assert p.returncode == 1, p.stdout + p.stderr
    report = json.loads(p.stdout)
    assert report["counts"]["correctness_lost"] == 9 and report["counts"]["confirmed_regressions"] == 0


def test_usage_errors_exit_2_in_one_line(tmp_path):
    url = f"sqlite:///{tmp_path}/kf.db"
    assert cli("import", str(RECORDED), "--url", url).returncode == 0
    for args in (
        ["--baseline", "99", "--current", "1"],
        ["--baseline", "1", "--current", "1"],
        ["--baseline", "1", "--current", "no-such-branch"],
        ["--baseline", "1", "--current", "1", "--threshold", "-1"],
        ["--baseline", "1", "--current", "deadbeef"],
    ):
        p = cli("compare", *args, "--url", url)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("error:"), p.stderr
    p = cli("compare", "--current", "1", "--url", url)
    assert p.returncode == 2 and "--baseline" in p.stderr
