"""A rehearsal GPU type (node join --label gpu=...) is marked on the Overview and the Runs and fleet page, from the
shipped real-host results (target=all on an H200 host with a rehearsal node, results/h200) and a fleet snapshot."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from dashboard import pages
from orchestrator.interchange.importer import import_results
from orchestrator.store import session
from orchestrator.store.query import access, run_queries
from orchestrator.store.writer import StoreWriter

REPO = Path(__file__).resolve().parents[2]
TARGET_ALL = sorted((REPO / "results" / "h200").glob("*-fleet-rmsnorm-target-all.jsonl.gz"))


def test_the_rehearsal_gpu_type_is_marked_on_the_overview_and_the_fleet_page(tmp_path):
    assert TARGET_ALL, "results/h200 holds the fleet's target=all run"
    url = session.sqlite_url_for(tmp_path / "kf.db")
    assert import_results([str(TARGET_ALL[0])], url, Console(file=io.StringIO())) == 0
    StoreWriter(url).record_nodes(
        [
            {"node_id": "a" * 56, "alive": True, "labels": {"kernelfleet.io/gpu": "h200"}, "resources": {"GPU": 1}},
            {
                "node_id": "b" * 56,
                "alive": True,
                "labels": {"kernelfleet.io/gpu": "rehearsal", "kernelfleet.io/rehearsal-of": "h200"},
                "resources": {"GPU": 1},
            },
        ]
    )
    src = access.open_read_only(url)
    try:
        assert run_queries.rehearsal_gpu_types(src) == {"rehearsal": "h200"}
        overview = pages.build(src, "/", {"impl": "triton"}, url)
        assert {r["gpu_type"] for r in overview.table("cells").rows} == {"h200", "rehearsal"}
        assert any("rehearsal is a GPU-type tag of a rehearsal node, really h200" in n for n in overview.notes)
        axis = overview.figures[0].figure.layout.xaxis
        assert "rehearsal, really h200" in " ".join(axis.ticktext) and list(axis.tickvals) == ["h200", "rehearsal"]
        fleet = {r["node_id"][0]: r for r in pages.build(src, "/runs", {}, url).table("nodes").rows}
        assert fleet["a"]["gpu_type"] == "h200" and fleet["b"]["gpu_type"] == "rehearsal (rehearsal; really h200)"
        assert {n["node_id"][0]: n["rehearsal_of"] for n in run_queries.nodes(src)} == {"a": None, "b": "h200"}
    finally:
        session.dispose_engines()
