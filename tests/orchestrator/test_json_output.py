"""--json on `runs` and `report`: versioned documents (docs/json.md) that a machine reads back."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from orchestrator.cli import commands as cli
from orchestrator.interchange.importer import import_results
from orchestrator.reports import run_json
from orchestrator.store import session
from tests.orchestrator.test_regressions_cli import RECORDED


@pytest.fixture
def store(tmp_path):
    url = session.sqlite_url_for(tmp_path / "kf.db")
    assert import_results([str(RECORDED)], url, Console(file=io.StringIO())) == 0
    yield url
    session.dispose_engines()


def _json(capsys, *argv) -> dict:
    assert cli.main(list(argv), Console(file=io.StringIO())) == 0
    return json.loads(capsys.readouterr().out)


def test_runs_json(store, capsys):
    doc = _json(capsys, "runs", "--json", "--url", store)
    assert doc["schema"] == "kernelfleet.runs" and doc["schema_version"] == 1
    (run,) = doc["runs"]
    assert run["id"] == 1 and run["sweep"] == "rmsnorm" and run["commit"].startswith("4125131b")
    assert run["devices"] == ["NVIDIA H200"] and run["n_jobs"] == 18 and run["started_at"].startswith("2026-11-29")


def test_report_json_and_the_summary_file(store, capsys, tmp_path):
    doc = _json(capsys, "report", "--json", "--url", store)
    assert doc["schema"] == "kernelfleet.report" and doc["schema_version"] == 1
    assert doc["run"]["id"] == 1 and doc["measured"]["devices"] == ["NVIDIA H200"]
    micro = [r for r in doc["results"] if r["kind"] == "micro"]
    timed = [r for r in micro if r["median_us"] is not None]
    assert len(micro) == 9 * 6 and len(timed) == 9 * 5 and all(r["median_us"] > 0 for r in timed)
    assert {r["impl"] for r in timed} == {"triton", "eager", "compile", "compile_max", "F.rms_norm"}
    assert {r["impl"] for r in micro} - {r["impl"] for r in timed} == {"liger"}, "planned, not installed there"
    run_json.write(store, 1, tmp_path / "out" / "summary.json")
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == doc
    assert cli.main(["report", "7", "--json", "--url", store], Console(file=io.StringIO())) == 2
    assert capsys.readouterr().err.startswith("error: no run 7")


def test_regressions_json_is_a_versioned_document(store, capsys):
    assert cli.main(["regressions", "--json", "--url", store], Console(file=io.StringIO())) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "kernelfleet.regressions" and doc["schema_version"] == 1
    assert doc["exit_code"] == 0 and doc["metric"] == "time_us" and doc["baseline_runs"] == []
    assert doc["series"] == 0 and doc["flags"] == [], "one run: no history to judge it against"
    for key in ("runs", "cpu_series"):
        assert key in doc
