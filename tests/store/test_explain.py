"""The explanation of a change (orchestrator/explain.py over explain_queries.side_facts): the two sides' micro,
profile and isa jobs read through the real writer on SQLite and PostgreSQL, and what changed named in words."""

from __future__ import annotations

from orchestrator.__main__ import main
from orchestrator.explain import markdown
from orchestrator.store.query.explain_queries import explanation
from workers.spec import Measurement

SHAPE = [2, 1320, 2048]


def _launch(num_warps: int, occupancy: int, registers: int) -> dict:
    """One compiled launch as workers/isa.py records it in details["launches"] (NVIDIA target)."""
    return {
        "kernel": "_rms_norm_kernel",
        "grid": [2640, 1, 1],
        "num_warps": num_warps,
        "compile_s": 0.4,
        "registers": registers,
        "spill_store_bytes": 0,
        "occupancy_waves": occupancy,
        "load_min_bits": 128,
    }


def _side(writer, factories, commit: str, at: float, *, time_us: float, warps: int, occupancy: int, clones: int):
    """A run of one commit holding the series' micro job, its profile job and its isa job."""
    run_id = writer.start_run("rmsnorm", {}, f"plan-{commit}", commit, "h")
    micro = factories.spec(shape=SHAPE, impls=["triton", "eager"], at=at)
    profile = factories.spec(kind="profile", shape=SHAPE, impls=["triton"], iters=10, at=at)
    isa = factories.spec(kind="isa", shape=SHAPE, impls=["triton"], arch="sm_90", at=at)
    writer.add_jobs(run_id, [micro, profile, isa])
    times = factories.timing("triton", [time_us * (1 + 0.001 * i) for i in range(20)])
    writer.record_result(run_id, factories.result(micro, times, started_at=at))
    rows = [
        {"name": "_rms_norm_kernel", "calls": 10, "total_ns": 10 * time_us * 900, "avg_ns": time_us * 900, "pct": 90},
        {"name": "copy_kernel", "calls": 10 * clones, "total_ns": 1000.0 * clones, "avg_ns": 100.0, "pct": 10},
    ]
    prof = [Measurement("triton", "kernels_per_call", 1.0 + clones, "kernels").to_dict()]
    details = {"profile_rows": {"triton": rows}, "profile_source": {"triton": "torch"}}
    writer.record_result(run_id, factories.result(profile, prof, started_at=at + 1, details=details))
    launches = {"launches": [_launch(warps, occupancy, 32 if warps == 8 else 40)], "arch": "sm_90"}
    writer.record_result(run_id, factories.result(isa, [], started_at=at + 2, details=launches))
    return run_id


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
