"""The repository's measured history: every file under results/ is an import-ready results file (format 1, one
device per folder), and `python -m orchestrator import results/` rebuilds a store from them: the shards of a plan
as one run, a repeat of a plan as a run of its own, each run dated by when it was measured."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import sqlite3
from pathlib import Path

from rich.console import Console

from orchestrator.interchange.importer import group_runs, import_results, read_file, results_files
from orchestrator.run import conditions as run_conditions
from workers.runtime import runner

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"


def test_every_results_file_is_gzipped_format_1_of_its_folders_device_or_compile_targets():
    files = results_files(RESULTS)
    assert files and all(p.name.endswith(".jsonl.gz") for p in files)
    # nothing else lives there but the manifests of what runs were made under (orchestrator/run/conditions.py)
    assert sorted(p for p in RESULTS.rglob("*.*") if p.name != run_conditions.MANIFEST) == files
    for manifest in RESULTS.rglob(run_conditions.MANIFEST):
        assert any(run_conditions.manifest_conditions(p) for p in results_files(manifest.parent)), manifest
    for path in files:
        with gzip.open(path, "rt") as f:
            assert json.loads(f.readline())["format"] == runner.RESULTS_FORMAT, path
        _, rows = runner.read_results(path)
        if path.parent.name == "isa":  # machine code compiled for several targets: compile targets, no device
            assert rows and all(r.device.extra.get("compile_target") for _, r in rows), path
        else:
            # results/<gpu type>/, or results/<gpu type>-slowed/ for the regression A/A test's slowed runs; a
            # rehearsal node's results (a GPU-type tag, node join --label) count as the type it really was
            real = {r.device.extra.get("rehearsal_of") or r.device.gpu_type for _, r in rows}
            assert rows and real == {path.parent.name.split("-")[0]}, path
        # named by the date it was measured
        first = min(r.started_at for _, r in rows)
        assert path.name.startswith(dt.datetime.fromtimestamp(first, dt.timezone.utc).strftime("%Y-%m-%d")), path


def test_a_file_without_a_format_is_format_1_and_a_newer_format_is_refused(tmp_path):
    src = results_files(RESULTS)[0]
    with gzip.open(src, "rt") as f:
        lines = f.read().splitlines(keepends=True)
    header = json.loads(lines[0])
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(json.dumps({k: v for k, v in header.items() if k != "format"}) + "\n" + "".join(lines[1:]))
    new.write_text(json.dumps({**header, "format": runner.RESULTS_FORMAT + 1}) + "\n" + "".join(lines[1:]))
    assert len(runner.read_results(old)[1]) == len(lines) - 1
    try:
        runner.read_results(new)
    except ValueError as exc:
        assert f"results format {runner.RESULTS_FORMAT + 1}" in str(exc)
    else:
        raise AssertionError("a newer results format was read")


def test_import_of_results_rebuilds_the_measured_history(tmp_path):
    files = results_files(RESULTS)
    expected = group_runs([(str(p), *read_file(str(p))) for p in files])
    db = tmp_path / "history.db"
    console = Console(record=True, width=250)
    assert import_results([str(RESULTS)], f"sqlite:///{db}", console) == 0, console.export_text()
    out = console.export_text()
    assert "error" not in out and f"imported {len(expected)} runs" in out and f"from {len(files)} files" in out
    con = sqlite3.connect(db)
    runs = con.execute("select id, status, source, started_at from runs order by id").fetchall()
    # every run complete, but the fleet's fault rehearsal whose spinning kernel (benchmarks/spin_kernel.py) timed out
    failed = con.execute(
        "select distinct r.run_id from run_jobs r join jobs j on j.id = r.job_id where j.kernel = 'fault_spin'"
    ).fetchall()
    assert len(runs) == len(expected)
    assert {r[1:3] for r in runs if (r[0],) not in failed} == {("complete", "import")}
    # dated by the measurements, in the order measured: the oldest file's date first, never the import's
    dates = [r[3] for r in runs]
    assert dates == sorted(dates) and dates[0].startswith(files[0].name[:10])
    # every job result of every file is stored, repeats of a job as further attempts
    n_rows = sum(len(rows) for run in expected for _, _, rows in run)
    assert con.execute("select count(*) from job_attempts").fetchone()[0] == n_rows
    not_ok = "select j.kernel from job_attempts a join jobs j on j.id = a.job_id where a.status != 'ok'"
    assert {k for (k,) in con.execute(not_ok)} <= {"fault_spin"}
    # a second import adds nothing
    again = Console(record=True, width=250)
    assert import_results([str(RESULTS)], f"sqlite:///{db}", again) == 0
    assert "imported 0 runs" in again.export_text()
    assert con.execute("select count(*) from runs").fetchone()[0] == len(expected)
