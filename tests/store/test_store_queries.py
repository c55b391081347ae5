"""The read API on SQLite and PostgreSQL (orchestrator/store/query/), on hand-made results."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from orchestrator.store import session
from orchestrator.store.models import Job
from orchestrator.store.query import result_queries, run_queries
from workers.spec import Measurement

SHAPE_A, SHAPE_B = [4, 1024, 2048], [1, 77, 4096]
IMPLS = ["eager", "compile", "compile_max", "triton"]


def _row(rows, shape, impl, kind="micro"):
    (found,) = [r for r in rows if r["shape"] == shape and r["impl"] == impl and r["kind"] == kind]
    return found


@pytest.fixture
def summary_run(writer, factories):
    """One run: shape A all correct; shape B with compile_max and triton failing correctness; one job erroring."""
    run_id = writer.start_run("rmsnorm", {}, "plan", "c1", "h1")
    micro_a = factories.spec(shape=SHAPE_A, impls=IMPLS)
    micro_b = factories.spec(shape=SHAPE_B, impls=IMPLS)
    check_a = factories.spec(kind="correctness", shape=SHAPE_A, impls=IMPLS)
    check_b = factories.spec(kind="correctness", shape=SHAPE_B, impls=IMPLS)
    broken = factories.spec(shape=[3, 5], impls=["eager", "triton"])
    pending = factories.spec(shape=[6, 5], impls=["eager", "triton"])
    writer.add_jobs(run_id, [micro_a, micro_b, check_a, check_b, broken, pending])
    hw = writer.record_device(factories.device())
    writer.set_copy_bandwidth(hw, 4000.0)
    timings = (
        factories.timing("eager", [99.0, 100.0, 101.0], gbs=1500.0)
        + factories.timing("compile", [79.0, 80.0, 81.0], gbs=1875.0)
        + factories.timing("compile_max", [59.0, 60.0, 61.0], gbs=2500.0)
        + factories.timing("triton", [49.0, 50.0, 51.0], gbs=3000.0)
    )
    kernel_time = [
        Measurement("triton", "kernel_time_us", 40.0, "us", [39.0, 40.0, 41.0]).to_dict(),
        Measurement("triton", "kernel_gbs", 3750.0, "GB/s").to_dict(),
    ]
    writer.record_result(run_id, factories.result(micro_a, timings + kernel_time))
    writer.record_result(run_id, factories.result(micro_b, timings))
    writer.record_result(run_id, factories.result(check_a, factories.verdicts({i: True for i in IMPLS})))
    writer.record_result(
        run_id,
        factories.result(
            check_b,
            factories.verdicts({"eager": True, "compile": True, "compile_max": False, "triton": False}),
            status="incorrect",
        ),
    )
    writer.record_result(
        run_id, factories.result(broken, status="error", error="ValueError: odd row length", no_device=True)
    )
    return run_id


def test_run_summary_speedups_and_ceiling(store_url, summary_run):
    rows = run_queries.run_summary(store_url, summary_run)
    triton = _row(rows, SHAPE_A, "triton")
    assert triton["median_us"] == 50.0 and triton["iqr_us"] == 2.0 and triton["gbs"] == 3000.0
    assert triton["speedup_vs_eager"] == pytest.approx(2.0)
    assert triton["speedup_vs_compile"] == pytest.approx(1.2) and triton["compile_baseline"] == "compile_max"
    assert triton["pct_of_ceiling"] == pytest.approx(75.0) and triton["copy_bandwidth_gbs"] == 4000.0
    assert triton["kernel_time_us"] == 40.0 and triton["kernel_pct_of_ceiling"] == pytest.approx(93.75)
    assert triton["correct"] is True and triton["status"] == "ok" and triton["gpu_type"] == "h200"
    eager = _row(rows, SHAPE_A, "eager")
    assert eager["kernel_time_us"] is None and eager["kernel_pct_of_ceiling"] is None  # not measured: not made up
    assert _row(rows, SHAPE_B, "triton")["kernel_time_us"] is None
    latest = {(tuple(r["shape"]), r["impl"]): r for r in result_queries.latest_results(store_url, "rmsnorm")}
    assert latest[(tuple(SHAPE_A), "triton")]["kernel_pct_of_ceiling"] == pytest.approx(93.75)
    assert latest[(tuple(SHAPE_A), "triton")]["kernel_gbs"] == 3750.0
    assert eager["speedup_vs_eager"] == pytest.approx(1.0)
    assert eager["speedup_vs_compile"] == pytest.approx(0.6)
    assert [r["impl"] for r in rows if r["shape"] == SHAPE_A and r["kind"] == "micro"] == IMPLS


def test_run_summary_never_shows_a_speedup_for_an_incorrect_impl(store_url, summary_run):
    rows = run_queries.run_summary(store_url, summary_run)
    triton = _row(rows, SHAPE_B, "triton")
    assert triton["correct"] is False
    assert triton["median_us"] == 50.0, "the time is still shown"
    assert triton["speedup_vs_eager"] is None and triton["speedup_vs_compile"] is None
    compile_ = _row(rows, SHAPE_B, "compile")
    assert compile_["compile_baseline"] == "compile", "an incorrect compile_max is no baseline"
    assert compile_["speedup_vs_compile"] == pytest.approx(1.0)
    assert compile_["speedup_vs_eager"] == pytest.approx(100.0 / 80.0)
    check = _row(rows, SHAPE_B, "triton", kind="correctness")
    assert check["correct"] is False and check["rel_err"] == 0.5 and check["status"] == "incorrect"
    assert check["median_us"] is None and check["speedup_vs_eager"] is None


def test_micro_job_own_correct_metric_wins(writer, store_url, factories):
    run_id = writer.start_run("s", {}, "p", "c", "h")
    spec = factories.spec(impls=["eager", "triton"])
    writer.add_jobs(run_id, [spec])
    measurements = (
        factories.timing("eager", [10.0, 10.0, 10.0])
        + factories.timing("triton", [5.0, 5.0, 5.0])
        + [Measurement("triton", "correct", 0.0).to_dict()]
    )
    writer.record_result(run_id, factories.result(spec, measurements))
    triton = _row(run_queries.run_summary(store_url, run_id), SHAPE_A, "triton")
    assert triton["correct"] is False and triton["speedup_vs_eager"] is None


def test_run_summary_failed_and_pending_jobs(store_url, summary_run):
    rows = run_queries.run_summary(store_url, summary_run)
    broken = [r for r in rows if r["shape"] == [3, 5]]
    assert [(r["impl"], r["status"], r["error"], r["median_us"]) for r in broken] == [
        ("eager", "error", "ValueError: odd row length", None),
        ("triton", "error", "ValueError: odd row length", None),
    ]
    assert {r["status"] for r in rows if r["shape"] == [6, 5]} == {"pending"}
    with pytest.raises(KeyError):
        run_queries.run_summary(store_url, summary_run + 1000)


def test_resumed_run_shows_jobs_done_earlier(writer, store_url, factories):
    first = writer.start_run("s", {}, "p", "c", "h")
    spec = factories.spec(impls=["eager", "triton"])
    writer.add_jobs(first, [spec])
    writer.record_result(
        first,
        factories.result(
            spec, factories.timing("eager", [8.0, 8.0, 8.0]) + factories.timing("triton", [4.0, 4.0, 4.0])
        ),
    )
    second = writer.start_run("s", {}, "p", "c", "h")
    writer.add_jobs(second, [spec])
    rows = run_queries.run_summary(store_url, second)
    assert [(r["impl"], r["median_us"], r["speedup_vs_eager"]) for r in rows] == [
        ("eager", 8.0, 1.0),
        ("triton", 4.0, 2.0),
    ]
    assert run_queries.run_info(store_url, second)["job_counts"] == {"done_before": 1}


def test_list_runs_and_run_info(writer, store_url, summary_run):
    later = writer.start_run("rope", {"x": 1}, "plan-2", "c2", "h2")
    runs = run_queries.list_runs(store_url)
    assert [r["id"] for r in runs] == [later, summary_run]
    assert [r["n_jobs"] for r in runs] == [0, 6]
    assert run_queries.list_runs(store_url, limit=1)[0]["id"] == later
    info = run_queries.run_info(store_url, summary_run)
    assert info["job_counts"] == {"error": 1, "incorrect": 1, "ok": 3, "pending": 1}
    assert run_queries.run_info(store_url, 12345) is None


def _record_point(writer, factories, impl_samples, started_at, device=None, commit="c", shape=SHAPE_A):
    run_id = writer.start_run("rmsnorm", {}, f"plan-{started_at}", commit, "h")
    spec = factories.spec(shape=shape, impls=list(impl_samples), code=commit, at=started_at)
    writer.add_jobs(run_id, [spec])
    measurements = [m for impl, samples in impl_samples.items() for m in factories.timing(impl, samples)]
    writer.record_result(run_id, factories.result(spec, measurements, started_at=started_at, device=device))
    return run_id


def test_history_newest_last_per_device(writer, store_url, factories):
    mi355x = factories.device("mi355x")
    r1 = _record_point(writer, factories, {"triton": [3.0, 3.0, 3.0]}, 1_800_000_300.0, commit="c3")
    r2 = _record_point(writer, factories, {"triton": [1.0, 1.0, 1.0]}, 1_800_000_100.0, commit="c1")
    r3 = _record_point(writer, factories, {"triton": [2.0, 2.0, 2.0]}, 1_800_000_200.0, commit="c2")
    _record_point(writer, factories, {"triton": [9.0, 9.0, 9.0]}, 1_800_000_250.0, device=mi355x)
    h200 = factories.device()["hardware_key"]
    points = result_queries.history(store_url, "rmsnorm", SHAPE_A, "bf16", "triton", h200)
    assert [(p["value"], p["run_id"], p["commit"]) for p in points] == [
        (1.0, r2, "c1"),
        (2.0, r3, "c2"),
        (3.0, r1, "c3"),
    ]
    assert points[0]["samples"] == [1.0, 1.0, 1.0] and points[0]["measured_at"].tzinfo is not None
    assert [
        p["value"] for p in result_queries.history(store_url, "rmsnorm", "4x1024x2048", "bf16", "triton", h200, limit=2)
    ] == [2.0, 3.0]
    assert len(result_queries.history(store_url, "rmsnorm", SHAPE_A, "bf16", "triton")) == 4
    assert result_queries.history(store_url, "rmsnorm", SHAPE_B, "bf16", "triton") == []


def test_latest_results(writer, store_url, factories):
    hw = writer.record_device(factories.device())
    writer.set_copy_bandwidth(hw, 2000.0)
    _record_point(writer, factories, {"eager": [10.0] * 3, "triton": [8.0] * 3}, 1_800_000_100.0, commit="old")
    newest = _record_point(writer, factories, {"eager": [10.0] * 3, "triton": [5.0] * 3}, 1_800_000_200.0, commit="new")
    _record_point(writer, factories, {"eager": [20.0] * 3, "triton": [4.0] * 3}, 1_800_000_150.0, shape=SHAPE_B)
    # shape B's triton fails its newest correctness check on this device
    check_run = writer.start_run("rmsnorm", {}, "check", "new", "h")
    check = factories.spec(kind="correctness", shape=SHAPE_B, impls=["eager", "triton"])
    writer.add_jobs(check_run, [check])
    writer.record_result(check_run, factories.result(check, factories.verdicts({"eager": True, "triton": False})))

    rows = {(tuple(r["shape"]), r["impl"]): r for r in result_queries.latest_results(store_url, kernel="rmsnorm")}
    assert set(rows) == {
        (tuple(SHAPE_A), "eager"),
        (tuple(SHAPE_A), "triton"),
        (tuple(SHAPE_B), "eager"),
        (tuple(SHAPE_B), "triton"),
    }
    a = rows[(tuple(SHAPE_A), "triton")]
    assert (a["median_us"], a["run_id"], a["commit"], a["speedup_vs_eager"]) == (5.0, newest, "new", 2.0)
    b = rows[(tuple(SHAPE_B), "triton")]
    assert b["correct"] is False and b["speedup_vs_eager"] is None and b["median_us"] == 4.0
    assert result_queries.latest_results(store_url, kernel="rope") == []
    assert result_queries.latest_results(store_url, hardware_key="amd/none") == []


def test_e2e_results(writer, store_url, factories):
    run_id = writer.start_run("ltx", {}, "p", "c", "h")
    spec = factories.spec(
        kind="e2e",
        kernel=None,
        model="ltx-video",
        shape=[1, 8, 32, 32],
        impls=["eager", "triton", "compile", "triton+compile"],
    )
    writer.add_jobs(run_id, [spec])
    ms = {"eager": 100.0, "triton": 80.0, "compile": 70.0, "triton+compile": 50.0}
    measurements = []
    for mode, value in ms.items():
        measurements += [
            Measurement(mode, "ms_per_step", value, "ms").to_dict(),
            Measurement(mode, "peak_mem_gb", 10.0, "GB").to_dict(),
            Measurement(mode, "cos_sim_vs_eager", 1.0 if mode == "eager" else 0.9999).to_dict(),
        ]
    writer.record_result(run_id, factories.result(spec, measurements))
    rows = result_queries.e2e_results(store_url, run_id)
    assert [(r["mode"], r["ms_per_step"], r["speedup_vs_eager"]) for r in rows] == [
        ("eager", 100.0, 1.0),
        ("triton", 80.0, 1.25),
        ("compile", 70.0, 100.0 / 70.0),
        ("triton+compile", 50.0, 2.0),
    ]
    assert rows[0]["model"] == "ltx-video" and rows[1]["cos_sim_vs_eager"] == 0.9999
    assert rows[0]["total_s"] is None
    assert [r["mode"] for r in result_queries.e2e_results(store_url)] == list(ms)


def test_e2e_results_say_why_a_mode_did_not_run_and_how_far_each_is_from_its_floor(writer, store_url, factories):
    """A mode the worker skipped carries its reason; a profiled mode its GEMM + attention floor, the rest of its
    device time and its distance from the floor; e2e_comparisons sets the injected modes against their kind."""
    run_id = writer.start_run("ltx", {}, "p", "c", "h")
    modes = ["eager", "triton", "compile", "compile-ro", "compile+graph", "triton+graph"]
    spec = factories.spec(kind="e2e", kernel=None, model="ltx-video", shape=[25, 480, 704], impls=modes)
    writer.add_jobs(run_id, [spec])
    ms = {"eager": 40.0, "triton": 30.0, "compile": 22.0, "compile+graph": 21.0, "triton+graph": 19.0}
    measurements = [Measurement(m, "ms_per_step", v, "ms").to_dict() for m, v in ms.items()]
    measurements += [Measurement(m, "correct", 1.0).to_dict() for m in ms]
    why = "torch.compile's reduce-overhead mode replays CUDA graphs; runs on a CUDA GPU"
    classes = {"gemm": {"ms": 12.5, "kernels": 203}, "attention": {"ms": 2.75, "kernels": 28}}
    classes["kernelfleet"] = {"ms": 2.0, "kernels": 224}
    details = {"skipped": {"compile-ro": why}, "profile": {"triton+graph": {"gpu_busy_ms": 17.25, "classes": classes}}}
    writer.record_result(run_id, factories.result(spec, measurements, details=details))
    rows = {r["mode"]: r for r in result_queries.e2e_results(store_url, run_id)}
    assert list(rows) == ["eager", "triton", "compile", "triton+graph", "compile+graph", "compile-ro"]
    assert rows["compile-ro"]["not_run"] == why and rows["compile-ro"]["ms_per_step"] is None
    assert rows["triton"]["not_run"] is None and rows["triton"]["floor_ms"] is None  # no profile of it
    g = rows["triton+graph"]
    assert (g["floor_ms"], g["rest_ms"], g["over_floor_ms"]) == (15.25, 2.0, 19.0 - 15.25)
    comps = result_queries.e2e_comparisons(list(rows.values()))
    assert [(c["kind"], c["anchor"], c["mode"], c["speedup"]) for c in comps] == [
        ("graphs", "compile+graph", "triton+graph", 21.0 / 19.0),
        ("plain", "compile", "triton", 22.0 / 30.0),
    ]


def test_profile_rows_by_id_and_key(writer, store_url, factories):
    run_id = writer.start_run("s", {}, "p", "c", "h")
    spec = factories.spec(kind="profile", impls=["triton"])
    writer.add_jobs(run_id, [spec])
    rows = [
        {"name": "k1", "calls": 2, "total_ns": 900, "avg_ns": 450, "pct": 90.0},
        {"name": "k2", "calls": 1, "total_ns": 100, "avg_ns": 100, "pct": 10.0},
    ]
    assert result_queries.profile_rows(store_url, spec["key"]) == []  # no attempt yet
    writer.record_result(run_id, factories.result(spec, details={"profile_rows": rows}))
    with Session(session.get_engine(store_url)) as s:
        job_id = s.scalar(select(Job.id).where(Job.key == spec["key"]))
    assert result_queries.profile_rows(store_url, job_id) == rows
    assert result_queries.profile_rows(store_url, spec["key"]) == rows
    assert result_queries.profile_rows(store_url, job_id, attempt=2) == []
    with pytest.raises(KeyError):
        result_queries.profile_rows(store_url, "no-such-key")


def test_queries_accept_engine_and_session(store_url, summary_run):
    engine = session.get_engine(store_url)
    assert run_queries.run_summary(engine, summary_run) == run_queries.run_summary(store_url, summary_run)
    with Session(engine) as s:
        assert [r["id"] for r in run_queries.list_runs(s)] == [summary_run]


def test_devices_query(store_url, summary_run, factories):
    (device,) = run_queries.devices(store_url)
    assert device["hardware_key"] == factories.device()["hardware_key"]
    assert device["copy_bandwidth_gbs"] == 4000.0 and device["warp_size"] == 32
    assert device["info"]["name"] == "NVIDIA H200"
