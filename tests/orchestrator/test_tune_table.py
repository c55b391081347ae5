"""``tune table``: the margin rule (a clear winner moves the row, a tie within noise keeps the current choice), the
table writer (its diff applies, the patched module imports with the new rows, records round-trip) and the command's
usage errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from kernels import registry
from kernels.rows import RowLaunch
from orchestrator.cli import commands as cli
from orchestrator.interchange.importer import import_results
from orchestrator.plan.jobs import code_version, job_key, plan_key
from orchestrator.reports import tune_table
from workers.runtime import runner
from workers.spec import STATUS_OK, DeviceInfo, JobResult, JobSpec, Measurement

REPO = Path(__file__).resolve().parents[2]
CURRENT = "triton[num_warps=4,rows_per_program=1]"
FASTER = "triton[num_warps=8,rows_per_program=1]"
SAME = "triton[num_warps=2,rows_per_program=1]"
SLOWER = "triton[num_warps=16,rows_per_program=1]"


def _repeats(level: float, seed: int, n: int = 60, cv: float = 0.003) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(level * (1 + cv * rng.standard_normal(n)))


def _point(level: float, seed: int) -> dict:
    samples = _repeats(level, seed)
    return {"time_us": float(np.median(samples)), "time_us_samples": samples, "correct": 1.0}


def _job(levels: dict[str, float], runs: int = 2, seed: int = 0, run_shift=(1.0, 1.004, 0.997)) -> dict:
    """Each candidate at its level, once per run; each run shifts every level a little (between-run noise)."""
    return {
        impl: [_point(level * run_shift[r], seed + 97 * r + i) for r in range(runs)]
        for i, (impl, level) in enumerate(levels.items())
    }


def test_a_clear_winner_is_beyond_noise_and_moves_the_bucket():
    jobs = [
        _job({CURRENT: 20.0, FASTER: 17.0, SAME: 20.1, SLOWER: 24.0}, seed=0),
        _job({CURRENT: 40.0, FASTER: 34.5, SAME: 40.2, SLOWER: 47.0}, seed=5),
    ]
    spread = tune_table.pooled_spread(jobs, "time_us")
    assert spread[0] is not None and spread[1] >= 4
    judged = [tune_table.judge_job(j, CURRENT, spread, shape=[1, s, 2048], dtype="bf16") for s, j in enumerate(jobs)]
    for j in judged:
        assert j.winner == FASTER and j.beyond_noise and j.margin > 0.1, j.reason
        assert FASTER in j.faster and SLOWER in j.slower and SAME not in j.faster | j.slower
    choice = tune_table.choose_bucket("rmsnorm", "block=2048", "bf16", judged)
    assert choice.changed and choice.choice == FASTER and choice.margin == pytest.approx(0.166, abs=0.01)


def test_a_tie_within_noise_keeps_the_current_choice():
    jobs = [_job({CURRENT: 20.0, SAME: 19.8, SLOWER: 24.0}, seed=s) for s in (0, 9)]
    spread = tune_table.pooled_spread(jobs, "time_us")
    judged = [tune_table.judge_job(j, CURRENT, spread) for j in jobs]
    for j in judged:
        assert j.winner == SAME and not j.beyond_noise and j.reason.startswith("within noise"), j.reason
    choice = tune_table.choose_bucket("rmsnorm", "block=2048", "bf16", judged)
    assert not choice.changed and choice.choice == CURRENT


def test_one_run_cannot_measure_the_spread_so_even_a_large_margin_keeps_the_current_choice():
    job = _job({CURRENT: 20.0, FASTER: 15.0}, runs=1)
    spread = tune_table.pooled_spread([job], "time_us")
    assert spread == (None, 0)
    j = tune_table.judge_job(job, CURRENT, spread)
    assert j.winner == FASTER and not j.beyond_noise and "spread unknown" in j.reason


def test_a_candidate_slower_at_one_shape_of_the_bucket_is_not_proposed():
    jobs = [
        _job({CURRENT: 20.0, FASTER: 17.0}, seed=1),
        _job({CURRENT: 40.0, FASTER: 46.0}, seed=2),  # slower beyond noise here
        _job({CURRENT: 30.0, FASTER: 29.9, SAME: 30.0}, seed=3),
    ]
    spread = tune_table.pooled_spread(jobs, "time_us")
    judged = [tune_table.judge_job(j, CURRENT, spread) for j in jobs]
    assert FASTER in judged[1].slower
    assert not tune_table.choose_bucket("rmsnorm", "block=2048", "bf16", judged).changed


def test_an_incorrect_candidate_never_wins():
    job = _job({CURRENT: 20.0, FASTER: 10.0}, seed=4)
    for p in job[FASTER]:
        p["correct"] = 0.0
    j = tune_table.judge_job(job, CURRENT, (0.004, 30))
    assert j.winner == CURRENT and not j.beyond_noise


# ---------------------------------------------------------------------------------------------- table writer


def _patched_records(tmp_path: Path, module: str, table: str, diff: str) -> str:
    """Apply ``diff`` to a copy of kernels/ and print the patched module's table records in a fresh process."""
    shutil.copytree(REPO / "kernels", tmp_path / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    patch = tmp_path / "change.diff"
    patch.write_text(diff)
    applied = subprocess.run(["git", "apply", str(patch)], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TRITON_INTERPRET": "1"}
    code = f"import {module} as m; print(m.{table}.records())"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_the_writer_diff_applies_and_the_module_imports_with_the_new_rows(tmp_path):
    entry = registry.get("rmsnorm")
    choices = {
        "block=2048": {"num_warps": 8, "rows_per_program": 2},
        "block=4096": {"num_warps": 16, "rows_per_program": 1},
    }
    source = "docs/perf/tune-h200.md, run 7 (2026-12-02, NVIDIA H200, abc1234)"
    row = tune_table.proposed_row(entry, "sm_90", choices, source)
    assert row == RowLaunch(warps=((2048, 8), (4096, 16)), rows=((2048, 2),), measured=True, source=source)
    path, module = tune_table.table_location(entry.tune.table)
    old = path.read_text()
    new = tune_table.formatted(tune_table.rewrite_rows(old, entry.tune.table, "sm_90", row), path)
    head = "LAUNCH = LaunchTable("
    assert new.split(head)[0] == old.split(head)[0]  # the lines before the table stay as they were
    diff = tune_table.unified(old, new, path)
    assert diff.startswith("--- a/kernels/rmsnorm.py\n+++ b/kernels/rmsnorm.py\n")
    records = _patched_records(tmp_path, module, "LAUNCH", diff)
    assert "'warps': ((2048, 8), (4096, 16)), 'rows': ((2048, 2),)" in records and source in records


def test_the_writer_adds_rows_to_a_table_that_has_none(tmp_path):
    entry = registry.get("rope")
    assert "gfx950" not in entry.tune.table.rows
    row = tune_table.proposed_row(entry, "gfx950", {"block=2048": {"block_s": 2, "block_h": 1, "num_warps": 4}}, "s")
    path, module = tune_table.table_location(entry.tune.table)
    old = path.read_text()
    diff = tune_table.unified(
        old, tune_table.formatted(tune_table.rewrite_rows(old, entry.tune.table, "gfx950", row), path), path
    )
    records = _patched_records(tmp_path, module, "ROPE_LAUNCH", diff)
    assert "'arch': 'gfx950'" in records and "'tiles': (('block=2048', (2, 1, 4)),)" in records


def test_records_round_trip_through_with_records():
    for name in ("rmsnorm", "adaln_layer_norm", "rope_rotate_half"):
        table = registry.get(name).launch_table
        again = table.with_records(table.records())
        assert again.rows == table.rows and again.records() == table.records()


def test_a_tables_choice_is_what_the_kernel_then_launches():
    """The rows the writer proposes are what the tune's ``current`` reads back (same table semantics)."""
    entry = registry.get("rmsnorm")
    row = tune_table.proposed_row(entry, "sm_90", {"block=2048": {"num_warps": 8, "rows_per_program": 2}}, "s")
    from kernels.launch_table import LaunchTable
    from kernels.rows import _row_launch_config

    table = LaunchTable("rmsnorm-test", RowLaunch(), {"sm_90": row})
    knobs = _row_launch_config(2048, "sm_90", table)
    assert (knobs.rows_per_program, knobs.num_warps) == (2, 8)


# ---------------------------------------------------------------------------------------------------- command


def _store_with_tune_runs(tmp_path: Path, gpu_type: str = "h200", kernels: tuple[str, ...] = ("rmsnorm",)) -> str:
    """Two runs of one plan (each kernel at two shapes of one bucket) with repeats drawn around set levels."""
    code = code_version()
    shapes = [[1, 1024, 2048], [2, 1024, 2048]]
    specs = []
    for kernel, shape in ((k, s) for k in kernels for s in shapes):
        spec = JobSpec(
            kind="tune",
            kernel=kernel,
            shape=shape,
            dtype="bf16",
            impls=[CURRENT, FASTER, SAME],
            target=gpu_type,
            params={
                "rep_ms": 100.0,
                "tune": {"arch": "sm_90", "bucket": "block=2048", "current": CURRENT, "dropped": {}},
            },
        )
        spec.key = job_key(spec, code)
        specs.append(spec)
    header = {"sweep": "tune", "config": {}, "plan_key": plan_key(specs), **code.to_dict(specs)}
    device = DeviceInfo(
        "nvidia", "NVIDIA H200", "sm_90", 32, gpu_type=gpu_type, runtime="cuda 12.8", torch="2.9", triton="3.5"
    )
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    for r in range(2):
        out = tmp_path / f"results-{r}.jsonl"
        with open(out, "w") as f:
            f.write(runner.results_header(header))
            for i, spec in enumerate(specs):
                ms = []
                for k, (impl, level) in enumerate({CURRENT: 20.0, FASTER: 17.0, SAME: 20.1}.items()):
                    samples = _repeats(level * (i % 2 + 1) * (1.0, 1.004)[r], seed=100 * r + 10 * i + k)
                    ms += [
                        Measurement(impl, "time_us", float(np.median(samples)), "us", samples),
                        Measurement(impl, "correct", 1.0),
                    ]
                knobs = {
                    n: {"num_warps": int(n.split("=")[1].split(",")[0]), "rows_per_program": 1} for n in spec.impls
                }
                details = {
                    "tune": {
                        "current": CURRENT,
                        "candidates": knobs,
                        "dropped": {},
                        "bucket": "block=2048",
                        "knobs": ["num_warps", "rows_per_program"],
                        "arch": "sm_90",
                    }
                }
                result = JobResult(
                    spec.key, STATUS_OK, ms, device=device, started_at=1.8e9 + r, duration_s=1.0, details=details
                )
                f.write(_line(spec, result))
        with open(tmp_path / "import.log", "a") as log:
            assert import_results([str(out)], url, Console(file=log)) == 0
    return url


def _line(spec, result) -> str:
    import json

    return json.dumps({"spec": spec.to_dict(), "result": result.to_dict()}, sort_keys=True) + "\n"


def test_tune_table_reads_two_runs_and_proposes_the_winner(tmp_path):
    url = _store_with_tune_runs(tmp_path)
    result = tune_table.build(url, "h200")
    k = result["kernels"]["rmsnorm"]
    assert sorted(k["runs"]) == [1, 2] and k["spread"][1] >= 4
    (bucket,) = k["buckets"]
    assert bucket.changed and bucket.choice == FASTER
    assert dict(k["row"].warps)[2048] == 8 and k["row"].measured and "runs 1, 2" in k["row"].source
    assert '"sm_90": RowLaunch(' in k["new"] and "+" in k["diff"]


def test_tune_table_prints_and_exits_0(tmp_path, capsys):
    url = _store_with_tune_runs(tmp_path)
    console = Console(width=200, file=open(tmp_path / "out.txt", "w"))
    assert cli.main(["tune", "table", "--gpu-type", "h200", "--url", url], console) == 0
    console.file.close()
    text = (tmp_path / "out.txt").read_text()
    assert FASTER in text and "--- a/kernels/rmsnorm.py" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--gpu-type", "mi355x"], "no tune run measured on GPU type 'mi355x'"),
        (["--gpu-type", "h200", "--kernel", "nope"], "unknown kernel 'nope'"),
        (["--gpu-type", "h200", "--run", "9"], "run 9 holds no tune results"),
        (["--gpu-type", "cpu"], "--include-cpu"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    url = _store_with_tune_runs(tmp_path)
    console = Console(file=open(tmp_path / "out.txt", "w"))
    assert cli.main(["tune", "table", *argv, "--url", url], console) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_a_tune_runs_summary_lists_its_jobs_and_points_to_tune_table(tmp_path):
    from orchestrator.reports import summary as report

    url = _store_with_tune_runs(tmp_path)
    out = tmp_path / "summary.txt"
    with open(out, "w") as f:
        report.print_run_summary(Console(file=f, width=250), url, 1, "run 1 · tune")
    text = out.read_text()
    assert "launch candidates (tune)" in text and "no measurements" not in text
    assert FASTER in text and "python -m orchestrator tune table --gpu-type h200" in text


def test_write_applies_the_change_to_the_kernel_module(tmp_path, monkeypatch):
    url = _store_with_tune_runs(tmp_path)
    copy = tmp_path / "rmsnorm.py"
    copy.write_text((REPO / "kernels" / "rmsnorm.py").read_text())
    monkeypatch.setattr(tune_table, "table_location", lambda table: (copy, "kernels.rmsnorm"))
    before = copy.read_text()
    with open(tmp_path / "out.txt", "w") as f:
        assert cli.main(["tune", "table", "--gpu-type", "h200", "--url", url, "--write"], Console(file=f)) == 0
    after = copy.read_text()
    assert after != before and "wrote" in (tmp_path / "out.txt").read_text()
    # the content, whatever the layout (ruff formats the written table where it is installed, in its version's way)
    flat = " ".join(after.replace("(", "( ").split())
    assert '"sm_90": RowLaunch( measured=True,' in flat and "warps=( ( 2048, 8)," in flat
    assert "docs/perf/tune-h200.md, runs 1, 2" in after
    compile(after, str(copy), "exec")


def test_write_keeps_every_changed_table_of_a_module(tmp_path, monkeypatch):
    # adaln and adaln_layer_norm keep their tables in one module: the second table's change is made on the text the
    # first one's left, so both are written
    url = _store_with_tune_runs(tmp_path, kernels=("adaln", "adaln_layer_norm"))
    copy = tmp_path / "adaln.py"
    copy.write_text((REPO / "kernels" / "adaln.py").read_text())
    monkeypatch.setattr(tune_table, "table_location", lambda table: (copy, "kernels.adaln"))
    with open(tmp_path / "out.txt", "w") as f:
        assert cli.main(["tune", "table", "--gpu-type", "h200", "--url", url, "--write"], Console(file=f)) == 0
    after = copy.read_text()
    assert (tmp_path / "out.txt").read_text().count("wrote") == 1
    for name in ("ADALN_LAUNCH", "ADALN_LAYER_NORM_LAUNCH"):
        table = after.split(f"{name} = LaunchTable(", 1)[1].split("\n)\n", 1)[0]
        assert "docs/perf/tune-h200.md, runs 1, 2" in table and "(2048, 8)" in table, (name, table)
    compile(after, str(copy), "exec")


def test_trends_and_regressions_read_the_candidates_as_series(tmp_path):
    from orchestrator.store.query import regression_queries, series_queries, view_queries

    url = _store_with_tune_runs(tmp_path)
    points = series_queries.trend_points(url, "rmsnorm", impl=FASTER)
    assert len(points) == 4 and {p["impl"] for p in points} == {FASTER}  # two shapes, two runs
    assert {p["run_id"] for p in points} == {1, 2}
    assert series_queries.trend_points(url, "rmsnorm") == []  # every implementation: the micro jobs' (none here)
    assert FASTER in view_queries.micro_choices(url, "rmsnorm")["impls"]
    report = regression_queries.regression_report(url, 2, baseline_run_ids=1, include_improvements=True)
    assert report["series"] == 6  # three candidates at two shapes, each judged against run 1
