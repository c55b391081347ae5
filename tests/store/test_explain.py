"""The explanation of a change (orchestrator/stats/explain.py over explain_queries.side_facts): the two sides' micro,
profile and isa jobs read through the real writer on SQLite and PostgreSQL, and what changed named in words."""

from __future__ import annotations

from orchestrator.__main__ import main
from orchestrator.stats.explain import markdown
from orchestrator.store.query.explain_queries import explanation
from tests.support.regression_sides import SHAPE
from tests.support.regression_sides import side as _side


def test_the_explanation_names_the_launch_config_occupancy_and_kernels(writer, store_url, factories, tmp_path):
    base = _side(writer, factories, "aaaa1111", 1_800_000_000.0, time_us=10.0, warps=8, occupancy=8, clones=1)
    cur = _side(writer, factories, "bbbb2222", 1_800_000_100.0, time_us=13.0, warps=4, occupancy=4, clones=3)
    doc = explanation(store_url, [base], [cur], "rmsnorm", "2x1320x2048", "bf16", "triton")
    assert abs(doc["change"] - 0.3) < 0.01
    lines = "\n".join(doc["changes"])
    assert "launch config num_warps 8 → 4" in lines
    assert "occupancy (waves/SIMD) 8 → 4" in lines and "registers per thread 32 → 40" in lines
    assert "kernel copy_kernel: launches per call 1 → 3" in lines
    assert "kernel _rms_norm_kernel: 9.00 → 11.70 µs a call (+30%)" in lines
    assert not any("profile" in m or "machine code" in m for m in doc["missing"])
    md = markdown("rmsnorm 2x1320x2048 bf16 triton", doc)
    assert "| `copy_kernel` | 0.10 | 0.30 | 1 → 3 |" in md and "num_warps 8 → 4" in md
    out = tmp_path / "why.md"
    code = main(
        ["explain", "--baseline", str(base), "--current", str(cur), "--kernel", "rmsnorm", "--shape", "2x1320x2048"]
        + ["--dtype", "bf16", "--impl", "triton", "--url", store_url, "--markdown", str(out)]
    )
    assert code == 0 and out.read_text() == md


def test_a_side_without_captures_says_what_is_missing(writer, store_url, factories):
    run_id = writer.start_run("rmsnorm", {}, "plan-x", "cccc3333", "h")
    micro = factories.spec(shape=SHAPE, impls=["triton"])
    writer.add_jobs(run_id, [micro])
    writer.record_result(run_id, factories.result(micro, factories.timing("triton", [10.0, 10.1, 10.2])))
    other = _side(writer, factories, "dddd4444", 1_800_000_200.0, time_us=12.0, warps=8, occupancy=8, clones=1)
    doc = explanation(store_url, [run_id], [other], "rmsnorm", "2x1320x2048", "bf16", "triton")
    assert doc["changes"] == []
    assert any(m.startswith("profile") for m in doc["missing"]) and any("machine code" in m for m in doc["missing"])


def test_an_unknown_run_is_one_line(store_url, capsys):
    code = main(
        ["explain", "--baseline", "998", "--current", "999", "--kernel", "rmsnorm", "--shape", "2x1320x2048"]
        + ["--dtype", "bf16", "--impl", "triton", "--url", store_url]
    )
    assert code == 2 and "no run 998" in capsys.readouterr().err
