"""The versions of the plan and results files (workers/runtime/file_formats.py): a newer format is refused in one line
(exit 2, nothing run, written or stored), an older one is upgraded through the chain as it is read, and
`python -m workers upgrade` rewrites files in the current format.

The chain is exercised on the project's own measured history (results/, format 1) with a format 2 whose step
records that it ran: the shipped files must import through any upgrade a later format brings."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.interchange.importer import import_results, read_file, results_files
from workers.__main__ import main as workers_main
from workers.errors import UserError
from workers.runtime import file_formats, runner
from workers.runtime.file_formats import FileFormat, Upgrade

REPO = Path(__file__).resolve().parents[2]
SHIPPED = results_files(REPO / "results")[:3]  # a few of the 93 files behind docs/perf/


def _lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt") if path.name.endswith(".gz") else open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _plan_from(results: Path, plan: Path, fmt) -> None:
    """The plan file a shipped results file was run from (its header's plan, its specs), of format ``fmt``."""
    header, *rows = _lines(results)
    head = {**header["plan"], "kernelfleet": "plan", "format": fmt}
    plan.write_text("\n".join(json.dumps(x) for x in [head, *(r["spec"] for r in rows)]) + "\n")


def _seen_step(seen: list[str]) -> Upgrade:
    """A step to format 2 that marks the header and counts the lines it was given."""
    return Upgrade(
        header=lambda h: {**h, "upgraded": True},
        line=lambda obj: seen.append("line") or obj,
        what="(test) marks the header",
    )


@pytest.mark.parametrize("kind", [file_formats.PLAN, file_formats.RESULTS])
def test_every_older_format_has_its_step(kind):
    assert set(kind.upgrades) == set(range(1, kind.current))
    assert runner.PLAN_FORMAT == file_formats.PLAN.current and runner.RESULTS_FORMAT == file_formats.RESULTS.current


def test_workers_run_refuses_a_plan_of_a_newer_format_in_one_line(tmp_path, capsys):
    plan, out = tmp_path / "plan.jsonl", tmp_path / "out.jsonl"
    _plan_from(SHIPPED[0], plan, 99)
    assert workers_main(["run", str(plan), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "plan format 99 is newer than this code reads (format 1" in err, err
    assert not out.exists()


@pytest.mark.parametrize("bad", ["2", 0, True, None])
def test_a_format_that_is_no_number_is_refused(tmp_path, bad):
    plan = tmp_path / "plan.jsonl"
    _plan_from(SHIPPED[0], plan, bad)
    with pytest.raises(UserError, match=r"plan format .* is not a format number \(1 to 1\)"):
        runner.read_plan(plan)


def test_import_refuses_results_of_a_newer_format_in_one_line_and_stores_nothing(tmp_path, capsys):
    header, *rows = _lines(SHIPPED[0])
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join(json.dumps(x) for x in [{**header, "format": 7}, *rows]) + "\n")
    db = tmp_path / "s.db"
    assert import_results([str(newer)], f"sqlite:///{db}", Console(record=True)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "newer.jsonl:1: results format 7 is newer than this code reads" in err
    if db.exists():  # the store may have been created; it holds no run
        assert sqlite3.connect(db).execute("select count(*) from runs").fetchone()[0] == 0


def test_shipped_results_import_through_the_upgrade_chain(tmp_path, monkeypatch):
    seen: list[str] = []
    monkeypatch.setattr(file_formats, "RESULTS", FileFormat("results", 2, {1: _seen_step(seen)}))
    n_rows = 0
    for path in SHIPPED:
        plan, rows = read_file(str(path))
        assert rows and plan == _lines(path)[0]["plan"]
        n_rows += len(rows)
        header, rows_again = runner.read_results(path)
        assert header["format"] == 2 and header["upgraded"] and len(rows_again) == len(rows)
    assert len(seen) == 2 * n_rows  # every line of every file went through the step, in both readers
    folder = tmp_path / "results"
    folder.mkdir()
    for path in SHIPPED:
        shutil.copy(path, folder / path.name)
    console = Console(record=True, width=200)
    db = tmp_path / "s.db"
    assert import_results([str(folder)], f"sqlite:///{db}", console) == 0, console.export_text()
    assert sqlite3.connect(db).execute("select count(*) from job_attempts").fetchone()[0] == n_rows


def test_workers_upgrade_rewrites_older_files_and_leaves_current_ones(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    for path in SHIPPED:
        shutil.copy(path, folder / path.name)
    plan = folder / "plan.jsonl"
    _plan_from(SHIPPED[0], plan, 1)
    # today's formats: every file is current, nothing is rewritten
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert workers_main(["upgrade", str(folder)]) == 0
    assert f"0 of {len(before)} files upgraded" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    # a format 2 of both: every file rewritten (still gzipped where it was), read back the same
    seen: list[str] = []
    monkeypatch.setattr(file_formats, "RESULTS", FileFormat("results", 2, {1: _seen_step(seen)}))
    monkeypatch.setattr(file_formats, "PLAN", FileFormat("plan", 2, {1: _seen_step(seen)}))
    assert workers_main(["upgrade", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"{len(before)} of {len(before)} files upgraded" in out and "results format 1 -> 2" in out
    assert sorted(p.name for p in folder.iterdir()) == sorted(before)  # nothing left beside them
    for path in SHIPPED:
        header, *rows = _lines(folder / path.name)
        assert header["format"] == 2 and header["upgraded"] and rows == _lines(path)[1:]
        assert read_file(str(folder / path.name))[1]  # and it imports
    header, specs = runner.read_plan(plan)
    assert header["format"] == 2 and len(specs) == len(_lines(SHIPPED[0])) - 1
    seen.clear()
    assert workers_main(["upgrade", str(folder)]) == 0 and not seen  # current now: not read through the chain again


def test_workers_upgrade_refuses_a_newer_file_before_rewriting_any(tmp_path, capsys):
    older, newer = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl"
    shutil.copy(SHIPPED[0], older)
    header, *rows = _lines(SHIPPED[0])
    newer.write_text("\n".join(json.dumps(x) for x in [{**header, "format": 5}, *rows]) + "\n")
    assert workers_main(["upgrade", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "b.jsonl: results format 5 is newer" in err
    assert workers_main(["upgrade", str(tmp_path / "missing")]) == 2
    (tmp_path / "c.jsonl").write_text("")  # an empty file is no plan or results file either
    newer.unlink()
    assert workers_main(["upgrade", str(tmp_path)]) == 2
    assert "c.jsonl: no plan or results header" in capsys.readouterr().err
