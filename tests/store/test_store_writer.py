"""The driver's write API on SQLite and PostgreSQL (orchestrator/store/writer.py)."""

from __future__ import annotations

import base64
import datetime as dt
import math

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from orchestrator.store import session
from orchestrator.store.models import Artifact, Device, Job, JobAttempt, Measurement, Node, Run, RunJob
from orchestrator.store.query import result_queries, run_queries


def _count(url: str, model) -> int:
    with Session(session.get_engine(url)) as s:
        return s.scalar(select(func.count()).select_from(model))


def _one(url: str, query):
    with Session(session.get_engine(url)) as s:
        return tuple(s.execute(query).one())


def _start(writer, plan_key: str = "plan-1", **kw) -> int:
    return writer.start_run(
        "rmsnorm", {"sweep": {"name": "rmsnorm"}, "store": {"url": None}}, plan_key, "abc123", "hash1", **kw
    )


def test_round_trip(writer, store_url, factories):
    run_id = _start(writer)
    micro = factories.spec()
    profile = factories.spec(kind="profile", impls=["triton"])
    assert writer.add_jobs(run_id, [micro, profile]) == 2
    trace = b"Kernel_Name,Calls\nrms_norm_kernel,10\n"
    details = {
        "artifacts": [
            {
                "kind": "rocprofv3_csv",
                "name": "kernel_stats.csv",
                "data_b64": base64.b64encode(trace).decode(),
                "size": len(trace),
            },
            {"kind": "trace", "name": "trace.json", "path": "/data/bench/x/trace.json", "size": 12345},
        ],
        "profile_rows": [{"name": "rms_norm_kernel", "calls": 10, "total_ns": 5000, "avg_ns": 500, "pct": 100.0}],
    }
    micro_result = factories.result(
        micro,
        factories.timing("eager", [10.0, 11.0, 12.0], gbs=1000.0)
        + factories.timing("triton", [5.0, 5.5, 6.0], gbs=2000.0),
    )
    assert writer.record_result(run_id, micro_result) is True
    assert writer.record_result(run_id, factories.result(profile, details=details)) is True
    writer.finish_run(run_id, "complete", {"ok": 2})

    run = run_queries.run_info(store_url, run_id)
    assert run["status"] == "complete" and run["counts"] == {"ok": 2} and run["commit"] == "abc123"
    assert run["config"] == {"sweep": {"name": "rmsnorm"}, "store": {"url": None}}
    assert run["user"] and run["host"] and run["source"] == "sweep"
    assert run["started_at"].tzinfo is not None and run["finished_at"] >= run["started_at"]
    assert run["job_counts"] == {"ok": 2}

    key, status, attempts, spec, hw, started, shape = _one(
        store_url,
        select(Job.key, Job.status, Job.attempts, Job.spec, Job.hardware_key, Job.started_at, Job.shape).where(
            Job.key == micro["key"]
        ),
    )
    assert (status, attempts, spec, shape) == ("ok", 1, micro, [4, 1024, 2048])
    assert hw == factories.device()["hardware_key"]
    assert started == dt.datetime.fromtimestamp(1_800_000_000.0, dt.timezone.utc)

    history = result_queries.history(store_url, "rmsnorm", [4, 1024, 2048], "bf16", "triton")
    assert [(p["value"], p["samples"], p["commit"]) for p in history] == [(5.5, [5.0, 5.5, 6.0], "abc123")]

    stored = result_queries.artifacts(store_url, profile["key"])
    assert [(a["kind"], a["name"], a["size"], a["stored"]) for a in stored] == [
        ("rocprofv3_csv", "kernel_stats.csv", len(trace), "blob"),
        ("trace", "trace.json", 12345, "path"),
    ]
    assert result_queries.artifact_data(store_url, stored[0]["id"]) == trace
    assert result_queries.artifact_data(store_url, stored[1]["id"]) is None
    assert result_queries.profile_rows(store_url, profile["key"])[0]["name"] == "rms_norm_kernel"
    (kept,) = _one(
        store_url, select(JobAttempt.details).join(Job, Job.id == JobAttempt.job_id).where(Job.key == profile["key"])
    )
    assert "data_b64" not in str(kept), "the base64 data lives in the artifacts table only"
    assert [a["id"] for a in kept["artifacts"]] == [a["id"] for a in stored]


def test_same_result_twice_is_recorded_once(writer, store_url, factories):
    run_id = _start(writer)
    spec = factories.spec()
    writer.add_jobs(run_id, [spec])
    result = factories.result(
        spec,
        factories.timing("triton", [1.0, 2.0, 3.0]),
        details={"artifacts": [{"kind": "log", "name": "l.txt", "data_b64": "aGk="}]},
    )
    assert writer.record_result(run_id, result) is True
    counts = {m: _count(store_url, m) for m in (JobAttempt, Measurement, Artifact, Device)}
    assert writer.record_result(run_id, result) is False
    assert writer.record_result(run_id, result, force=True) is False, "(key, attempt) is recorded once, always"
    assert (
        {m: _count(store_url, m) for m in counts} == counts == {JobAttempt: 1, Measurement: 2, Artifact: 1, Device: 1}
    )


def test_good_job_is_not_overwritten_without_force(writer, store_url, factories):
    run_id = _start(writer)
    spec = factories.spec()
    writer.add_jobs(run_id, [spec])
    writer.record_result(run_id, factories.result(spec, factories.timing("triton", [1.0, 1.0, 1.0])))
    late = factories.result(spec, status="crashed", error="segfault", attempt=2)
    assert writer.record_result(run_id, late) is False
    assert _one(store_url, select(Job.status, Job.attempts)) == ("ok", 1)
    assert _count(store_url, JobAttempt) == 1


def test_forced_rerun_keeps_history(writer, store_url, factories):
    first = _start(writer)
    spec = factories.spec()
    writer.add_jobs(first, [spec])
    writer.record_result(
        first, factories.result(spec, factories.timing("triton", [10.0, 10.0, 10.0]), started_at=1_800_000_000.0)
    )
    writer.finish_run(first, "complete", {"ok": 1})

    rerun = _start(writer, plan_key="plan-1-forced")
    writer.add_jobs(rerun, [spec])
    assert writer.done_keys([spec["key"]]) == {spec["key"]}
    assert writer.done_keys([spec["key"]], run_id=rerun) == set(), "not yet redone by the forced run"
    attempt = writer.next_attempt(spec["key"])
    assert attempt == 2
    assert (
        writer.record_result(
            rerun,
            factories.result(
                spec, factories.timing("triton", [12.0, 12.0, 12.0]), attempt=attempt, started_at=1_800_000_100.0
            ),
            force=True,
        )
        is True
    )
    assert writer.done_keys([spec["key"]], run_id=rerun) == {spec["key"]}
    assert _one(store_url, select(Job.attempts, Job.last_run_id, Job.created_run_id)) == (2, rerun, first)
    points = result_queries.history(store_url, "rmsnorm", "4x1024x2048", "bf16", "triton")
    assert [(p["value"], p["attempt"], p["run_id"]) for p in points] == [(10.0, 1, first), (12.0, 2, rerun)]
    # each run shows its own attempt
    assert [r["median_us"] for r in run_queries.run_summary(store_url, first) if r["impl"] == "triton"] == [10.0]
    assert [r["median_us"] for r in run_queries.run_summary(store_url, rerun) if r["impl"] == "triton"] == [12.0]


def test_late_older_attempt_is_kept_as_history_only(writer, store_url, factories):
    run_id = _start(writer)
    spec = factories.spec()
    writer.add_jobs(run_id, [spec])
    writer.record_result(run_id, factories.result(spec, status="crashed", error="GPU fault", attempt=2))
    assert writer.record_result(run_id, factories.result(spec, status="timed_out", attempt=1)) is True
    assert _one(store_url, select(Job.status, Job.attempts, Job.error)) == ("crashed", 2, "GPU fault")


def test_rerun_with_an_already_used_attempt_number_becomes_the_next_attempt(writer, store_url, factories):
    """Workers stamp attempt 1 unless told otherwise: a retried or forced job must not be lost for that."""
    run_id = _start(writer)
    spec = factories.spec()
    writer.add_jobs(run_id, [spec])
    writer.record_result(run_id, factories.result(spec, status="crashed", error="segfault", started_at=1.0e9))
    retried = factories.result(spec, factories.timing("triton", [2.0, 2.0, 2.0]), started_at=1.0e9 + 60)
    assert retried["attempt"] == 1
    assert writer.record_result(run_id, retried) is True
    assert writer.record_result(run_id, retried) is False, "the same result again, even renumbered before"
    assert _one(store_url, select(Job.status, Job.attempts)) == ("ok", 2)
    forced = factories.result(spec, factories.timing("triton", [3.0, 3.0, 3.0]), started_at=1.0e9 + 120)
    assert writer.record_result(run_id, forced) is False, "good already, not forced"
    assert writer.record_result(run_id, forced, force=True) is True
    assert writer.record_result(run_id, forced, force=True) is False
    with Session(session.get_engine(store_url)) as s:
        attempts = s.execute(select(JobAttempt.attempt, JobAttempt.status).order_by(JobAttempt.attempt)).all()
    assert [tuple(a) for a in attempts] == [(1, "crashed"), (2, "ok"), (3, "ok")]
    assert [p["value"] for p in result_queries.history(store_url, "rmsnorm", "4x1024x2048", "bf16", "triton")] == [
        2.0,
        3.0,
    ]


def test_failed_job_can_be_retried_without_force(writer, store_url, factories):
    run_id = _start(writer)
    spec = factories.spec()
    writer.add_jobs(run_id, [spec])
    writer.record_result(run_id, factories.result(spec, status="crashed", error="segfault", no_device=True))
    assert writer.done_keys([spec["key"]]) == set()
    assert (
        writer.record_result(
            run_id,
            factories.result(
                spec, factories.timing("triton", [1.0, 1.0, 1.0]), attempt=writer.next_attempt(spec["key"])
            ),
        )
        is True
    )
    assert writer.done_keys([spec["key"]]) == {spec["key"]}
    assert _one(store_url, select(Job.status, Job.attempts, Job.error)) == ("ok", 2, None)


def test_add_jobs_links_without_duplicating(writer, store_url, factories):
    first = _start(writer)
    a, b, c = factories.spec(shape=[1, 64, 64]), factories.spec(shape=[1, 64, 128]), factories.spec(shape=[7, 3, 5])
    assert writer.add_jobs(first, [a, b, a]) == 2
    second = _start(writer, plan_key="plan-2")
    assert writer.add_jobs(second, [a, b, c]) == 1
    assert writer.add_jobs(second, [a, b, c]) == 0
    assert _count(store_url, Job) == 3
    assert _count(store_url, RunJob) == 5
    assert run_queries.run_info(store_url, second)["n_jobs"] == 3
    assert run_queries.run_info(store_url, second)["job_counts"] == {"pending": 3}


def test_add_jobs_rejects_bad_specs(writer, factories):
    run_id = _start(writer)
    with pytest.raises(ValueError, match="without a key"):
        writer.add_jobs(run_id, [{**factories.spec(), "key": ""}])
    with pytest.raises(ValueError, match="unknown field"):
        writer.add_jobs(run_id, [{**factories.spec(), "colour": "red"}])
    with pytest.raises(KeyError, match="no run"):
        writer.add_jobs(run_id + 100, [factories.spec()])


def test_done_keys(writer, factories):
    run_id = _start(writer)
    specs = {
        status: factories.spec(shape=[i + 1, 8])
        for i, status in enumerate(["ok", "incorrect", "skipped", "error", "crashed", "timed_out", "lost", "pending"])
    }
    writer.add_jobs(run_id, specs.values())
    for status, spec in specs.items():
        if status != "pending":
            writer.record_result(run_id, factories.result(spec, status=status))
    keys = [s["key"] for s in specs.values()] + ["never-planned"]
    assert writer.done_keys(keys) == {specs[s]["key"] for s in ("ok", "incorrect", "skipped")}
    assert writer.done_keys([]) == set()


def test_done_keys_many(writer, factories):
    """More keys than one IN clause takes."""
    run_id = _start(writer)
    specs = [factories.spec(shape=[i + 1]) for i in range(1203)]
    writer.add_jobs(run_id, specs)
    for spec in specs[::2]:
        writer.record_result(run_id, factories.result(spec, status="skipped", no_device=True))
    assert writer.done_keys(s["key"] for s in specs) == {s["key"] for s in specs[::2]}


def test_resumable_and_import_runs(writer):
    done = _start(writer, plan_key="p")
    writer.finish_run(done, "complete", {})
    assert writer.find_resumable_run("p") is None
    broken = _start(writer, plan_key="p")
    writer.finish_run(broken, "interrupted", {"ok": 3})
    still_running = _start(writer, plan_key="other")
    assert writer.find_resumable_run("p") == broken
    assert writer.find_resumable_run("other") == still_running
    writer.reopen_run(broken)
    info = run_queries.run_info(writer.url, broken)
    assert info["status"] == "running" and info["finished_at"] is None

    assert writer.find_import_run("sha256:abc") is None
    imported = _start(writer, plan_key="p", source="import", source_digest="sha256:abc")
    assert writer.find_import_run("sha256:abc") == imported
    assert writer.find_resumable_run("p") == broken, "imports are never resumed"
    with pytest.raises(ValueError, match="source"):
        _start(writer, source="upload")
    with pytest.raises(ValueError, match="status"):
        writer.finish_run(broken, "done", {})


def test_devices_and_copy_bandwidth(writer, store_url, factories):
    key = writer.record_device(factories.device())
    assert key == factories.device()["hardware_key"] == "nvidia/h200/sm_90/cuda_13.0/torch2.9.0/triton3.5.0"
    assert writer.copy_bandwidth(key) is None
    writer.set_copy_bandwidth(key, 4200.0)
    assert writer.copy_bandwidth(key) == 4200.0
    first_seen = run_queries.devices(store_url)[0]["first_seen"]
    assert writer.record_device({**factories.device(), "driver": "590.1"}) == key
    (device,) = run_queries.devices(store_url)
    assert device["driver"] == "590.1" and device["copy_bandwidth_gbs"] == 4200.0
    assert device["first_seen"] == first_seen and device["last_seen"] >= first_seen
    assert writer.copy_bandwidth("unknown") is None
    with pytest.raises(KeyError):
        writer.set_copy_bandwidth("unknown", 1.0)
    with pytest.raises(ValueError):
        writer.set_copy_bandwidth(key, float("nan"))


def test_mark_lost(writer, store_url, factories):
    run_id = _start(writer)
    lost, fine = factories.spec(shape=[1]), factories.spec(shape=[2])
    writer.add_jobs(run_id, [lost, fine])
    writer.record_result(run_id, factories.result(fine))
    assert writer.mark_lost(run_id, lost["key"], "node died: NodeDiedError") is True
    assert writer.mark_lost(run_id, lost["key"], "node died: NodeDiedError") is False, "once per run and reason"
    assert writer.mark_lost(run_id, fine["key"], "stale") is False, "a good result is never replaced by lost"
    assert _one(store_url, select(Job.status, Job.error, Job.attempts).where(Job.key == lost["key"])) == (
        "lost",
        "node died: NodeDiedError",
        1,
    )
    assert writer.mark_lost(run_id, lost["key"], "no node of type h200 is left") is True
    assert _one(store_url, select(Job.error, Job.attempts).where(Job.key == lost["key"])) == (
        "no node of type h200 is left",
        2,
    )
    assert writer.job_statuses([lost["key"], fine["key"], "unknown"]) == {lost["key"]: "lost", fine["key"]: "ok"}


def test_bad_results_write_nothing(writer, store_url, factories):
    run_id = _start(writer)
    spec = factories.spec()
    writer.add_jobs(run_id, [spec])
    with pytest.raises(KeyError, match="unknown job key"):
        writer.record_result(run_id, factories.result(factories.spec(shape=[9])))
    with pytest.raises(ValueError, match="status"):
        writer.record_result(run_id, factories.result(spec, status="great"))
    with pytest.raises(ValueError, match="appears twice"):
        writer.record_result(run_id, factories.result(spec, factories.timing("triton", [1.0, 2.0, 3.0]) * 2))
    with pytest.raises(ValueError, match="base64"):
        writer.record_result(
            run_id, factories.result(spec, details={"artifacts": [{"kind": "log", "name": "x", "data_b64": "%%%"}]})
        )
    assert _count(store_url, JobAttempt) == _count(store_url, Measurement) == _count(store_url, Device) == 0
    assert _one(store_url, select(Job.status, Job.attempts)) == ("pending", 0)


def test_non_finite_values_are_stored_alike(writer, store_url, factories):
    run_id = _start(writer)
    spec = factories.spec(kind="correctness")
    writer.add_jobs(run_id, [spec])
    measurements = [
        {
            "impl": "triton",
            "metric": "rel_err",
            "value": float("nan"),
            "unit": "",
            "samples": [1.0, float("nan"), float("inf")],
        },
        {"impl": "triton", "metric": "max_abs", "value": float("inf"), "unit": "", "samples": None},
    ]
    writer.record_result(
        run_id, factories.result(spec, measurements, status="incorrect", details={"note": float("nan")})
    )
    with Session(session.get_engine(store_url)) as s:
        rows = {m.metric: (m.value, m.samples) for m in s.scalars(select(Measurement))}
        details = s.scalar(select(JobAttempt.details))
    assert rows["rel_err"] == (None, [1.0, None, None])
    assert math.isinf(rows["max_abs"][0])
    assert details == {"note": None}


def test_record_nodes(writer, store_url):
    assert (
        writer.record_nodes(
            [
                {
                    "NodeID": "n1",
                    "Alive": True,
                    "NodeManagerAddress": "10.0.0.1",
                    "Labels": {"kernelfleet.io/gpu": "h200"},
                    "Resources": {"GPU": 8.0, "CPU": 64.0},
                },
                {"node_id": "n2", "alive": False, "labels": {"kernelfleet.io/gpu": "mi355x"}, "resources": {}},
            ]
        )
        == 2
    )
    writer.record_nodes([{"NodeID": "n1", "Alive": False, "Labels": {}, "Resources": {}}])
    listed = {n["node_id"]: n for n in run_queries.nodes(store_url)}
    assert listed["n1"]["alive"] is False and listed["n1"]["labels"] == {}
    assert listed["n2"]["labels"] == {"kernelfleet.io/gpu": "mi355x"}
    assert _count(store_url, Node) == 2
    with pytest.raises(ValueError, match="node_id"):
        writer.record_nodes([{"alive": True}])


def test_run_rows_have_timezone_aware_utc_times(writer, store_url):
    run_id = _start(writer)
    with Session(session.get_engine(store_url)) as s:
        started = s.get(Run, run_id).started_at
    assert started.utcoffset() == dt.timedelta(0)
    assert abs(dt.datetime.now(dt.timezone.utc) - started) < dt.timedelta(minutes=5)
