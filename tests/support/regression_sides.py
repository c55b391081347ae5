"""Test-only: the two sides of a regression as the store holds them, through the real writer: a run of one commit with
the series' micro job, its profile job (per-kernel rows) and its isa job (compiled launches), in the shapes
workers/jobs/micro.py, workers/jobs/profile.py and workers/jobs/isa.py record (tests/store/test_explain.py, the
Regression page's test)."""

from __future__ import annotations

from workers.spec import Measurement

SHAPE = [2, 1320, 2048]


def _launch(num_warps: int, occupancy: int, registers: int) -> dict:
    """One compiled launch as workers/jobs/isa.py records it in details["launches"] (NVIDIA target)."""
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


def side(writer, factories, commit: str, at: float, *, time_us: float, warps: int, occupancy: int, clones: int):
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
