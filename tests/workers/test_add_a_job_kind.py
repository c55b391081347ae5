"""The developer guide's "A job kind" recipe, followed: one module declaring the kind (and, here, running it too),
no other file touched.

The module is written to a temporary folder that ``workers.kinds`` scans through ``KERNELFLEET_KINDS``, as if it were
``workers/kinds/checksum.py``; the kind's jobs are then validated and planned, run through Ray in the sandbox child
(which finds the kind through the same variable), stored, reported, exported, written to the JSON summary and read
by the query modules the dashboard uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestrator.config import compose as config
from orchestrator.config import validate
from orchestrator.plan import jobs as planner
from orchestrator.run import schedule
from orchestrator.store.query import result_queries, run_queries
from workers import kinds, metrics

REPO = Path(__file__).resolve().parents[2]

KIND_MODULE = '''
"""The ``checksum`` job kind: each implementation's output summed, and its verdict against the reference's sum."""

from workers.kinds import JobKind

NAME = "checksum"

KIND = JobKind(
    name=NAME,
    module="workers.kinds.checksum",  # runs here too: run() below imports torch only when a job runs
    description="each implementation's output summed, against the reference's sum",
    shared_metrics=("correct",),
    params=("seed", "timeout_s"),
)


def run(spec, device):
    import torch

    from kernels import registry
    from workers.spec import STATUS_OK, JobResult, Measurement

    entry = registry.get(spec.kernel)
    gen = torch.Generator().manual_seed(spec.params.get("seed") or 0)
    inputs = entry.make_inputs(tuple(spec.shape), registry.dtype_of(spec.dtype), device, gen)
    ref = float(entry.reference(inputs).sum())
    sums = {}
    for impl in spec.impls:
        out = entry.impls[impl].make()(**inputs)
        sums[impl] = float(out.double().sum())
    ok = {impl: abs(s - ref) <= 1e-2 * max(abs(ref), 1.0) for impl, s in sums.items()}
    return JobResult(
        spec.key,
        STATUS_OK,
        measurements=[Measurement(impl, "correct", float(ok[impl])) for impl in spec.impls],
        details={"sums": sums, "reference": ref},
    )
'''

GRID = ["sweep.kernels=[rmsnorm]", "sweep.shapes=[[1,8,64]]", "sweep.dtypes=[fp32]", "sweep.impls=[triton,eager]"]


@pytest.fixture
def checksum_kind(tmp_path, monkeypatch):
    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "checksum.py").write_text(textwrap.dedent(KIND_MODULE))
    monkeypatch.setenv(kinds.PATH_ENV, str(folder))
    monkeypatch.setattr(kinds, "_DECLARED", None)  # found again, with the new kind
    monkeypatch.setattr(kinds, "__path__", list(kinds.__path__))
    yield folder
    sys.modules.pop("workers.kinds.checksum", None)


def test_a_kind_module_is_all_a_new_job_kind_takes(checksum_kind, tmp_path):
    assert "workers.kinds.checksum" in kinds.kind_modules() and "checksum" in kinds.names()
    kind = kinds.kind_of("checksum")
    assert kind.per_kernel and not kind.timed and "checksum" in metrics.get("correct").kinds
    assert metrics.get("correct").kind == "correctness"  # the verdict the store reads stays the correctness job's

    cfg = config.to_plain(config.compose(["+sweep=smoke", "sweep.kinds=[checksum]", *GRID]))
    validate.validate(cfg)
    specs = planner.plan(cfg)
    assert [(s.kind, s.kernel, s.shape, s.dtype) for s in specs] == [("checksum", "rmsnorm", [1, 8, 64], "fp32")]
    assert specs[0].params == {"seed": cfg["sweep"]["seed"], "timeout_s": cfg["sweep"]["timeout_s"]}
    assert schedule.needs_gpu(specs[0]) and not schedule.takes_whole_node(specs[0])

    db, summary = tmp_path / "kf.db", tmp_path / "run.json"
    url = f"sqlite:///{db}"
    env = {**os.environ, kinds.PATH_ENV: str(checksum_kind), "COLUMNS": "200"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    p = cli(
        "+sweep=smoke", "sweep.kinds=[checksum]", "sweep.seed=0", *GRID, f"store.url={url}", f"summary_json={summary}"
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "1 jobs, 0 done earlier, 1 to run" in p.stdout and "run 1: complete" in p.stdout, p.stdout[-3000:]

    # stored, and read back by the query modules the dashboard's pages use
    info = run_queries.run_info(url, 1)
    assert info["status"] == "complete" and info["job_counts"] == {"ok": 1}
    rows = list(result_queries.iter_measurements(url, run_id=1))
    assert {(r["kind"], r["kernel"], r["impl"], r["metric"], r["value"]) for r in rows} == {
        ("checksum", "rmsnorm", "triton", "correct", 1.0),
        ("checksum", "rmsnorm", "eager", "correct", 1.0),
    }

    # the JSON summary and the report name the run; the export holds the kind's measurements
    doc = json.loads(summary.read_text())
    assert doc["run"]["id"] == 1 and doc["run"]["status"] == "complete"
    r = cli("report", "1", "--url", url)
    assert r.returncode == 0 and "run 1" in r.stdout, r.stdout + r.stderr
    out = tmp_path / "export.jsonl"
    e = cli("export", "--format", "jsonl", "--run", "1", "--url", url, "--out", str(out))
    assert e.returncode == 0, e.stdout + e.stderr
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(x["kind"], x["impl"], x["metric"]) for x in exported} == {
        ("checksum", "triton", "correct"),
        ("checksum", "eager", "correct"),
    }
