"""The dashboard's end-to-end page names, per job, each injected mode's anchor of its own kind (CUDA graphs against
CUDA graphs, plain calls against plain calls) and each mode's floor, over the H200's recorded seed-setting job
(results/h200/2026-12-01-1647-ltx-e2e.jsonl.gz)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from dashboard import pages
from orchestrator.interchange.importer import import_results
from orchestrator.store import session
from orchestrator.store.query import access

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "results" / "h200" / "2026-12-01-1647-ltx-e2e.jsonl.gz"


def test_e2e_page_shows_each_injected_mode_beside_its_kinds_anchor(tmp_path):
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    assert import_results([str(RECORDED)], url, Console(file=io.StringIO())) == 0
    session.dispose_engines()
    engine = access.open_read_only(url)
    try:
        view = pages.build(engine, "/e2e", {}, url)
    finally:
        engine.dispose()
    rows = view.table("anchors").rows
    assert [(r["kind_label"], r["anchor"], r["mode"]) for r in rows] == [
        ("CUDA graphs", "compile+graph", "triton+graph"),
        ("CUDA graphs", "compile+graph", "triton+compile+graph"),
        ("plain calls", "compile", "triton"),
        ("plain calls", "compile", "triton+compile"),
        ("plain calls", "compile", "triton+compile-max"),
    ]
    # speed-up = the anchor's ms per step over the mode's (docs/perf/ltx-e2e-h200.md, host A)
    ms = {"compile+graph": 21.29, "compile": 21.72, "triton+graph": 18.87, "triton+compile+graph": 19.01}
    ms |= {"triton": 35.52, "triton+compile": 19.65, "triton+compile-max": 26.18}
    for r in rows:
        assert r["speedup"] == pytest.approx(ms[r["anchor"]] / ms[r["mode"]], abs=1e-3), r
    modes = {r["mode"]: r for r in view.table("modes").rows}
    assert modes["triton+graph"]["floor_ms"] == pytest.approx(12.5024 + 2.7713, abs=1e-3)  # GEMM + attention
    assert modes["triton+graph"]["over_floor_ms"] == pytest.approx(18.87 - 15.27, abs=0.01)
    assert any("Floor = the device's GEMM + attention" in n for n in view.notes)


def test_e2e_trend_draws_one_series_per_setting_and_the_page_reconciles_the_kernels(tmp_path):
    """25-frame and 121-frame jobs (results/h200, 2026-12-02) never share a line: each series is one setting and
    mode, named so in the legend; the reconciliation table sets each injected mode's measured speed-up over its
    base beside the one its kernels' micro results (the H200 kernels sweep of 2026-12-01) predict."""
    h200 = REPO / "results" / "h200"
    files = [
        "2026-12-02-0430-ltx-e2e.jsonl.gz",
        "2026-12-02-0437-ltx-e2e-121.jsonl.gz",
        "2026-12-01-1441-kernels-aa-2.jsonl.gz",
    ]
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    for f in files:  # one plan per file: each is imported as a run of its own
        assert import_results([str(h200 / f)], url, Console(file=io.StringIO())) == 0
    session.dispose_engines()
    engine = access.open_read_only(url)
    try:
        view = pages.build(engine, "/e2e", {"job": ""}, url)
    finally:
        engine.dispose()
    assert view.params["model"] == "ltx-video"
    trend = next(f.figure for f in view.figures if f.name == "e2e-trend")
    names = [t.name for t in trend.data]
    settings = {n.split(" · ")[0] for n in names}
    assert settings == {"ltx-video 25x480x704 bf16 30 steps", "ltx-video 121x480x704 bf16 30 steps"}
    for t in trend.data:  # every point of a series is of the series' setting
        setting = t.name.split(" · ")[0]
        assert all(setting in h for h in t.hovertext), t.name
    assert (
        "ltx-video 25x480x704 bf16 30 steps · eager" in names and "ltx-video 121x480x704 bf16 30 steps · eager" in names
    )
    recon = view.table("reconciliation").rows
    assert {(r["mode"], r["base"]) for r in recon} >= {("triton", "eager"), ("triton+compile", "compile")}
    for r in recon:
        assert r["measured_speedup"] == pytest.approx(r["base_ms"] / r["ms"], rel=1e-3)  # the table rounds
        assert r["predicted_ms"] == pytest.approx(r["base_ms"] - r["replaced_ms"] + r["ours_ms"], abs=0.02)
