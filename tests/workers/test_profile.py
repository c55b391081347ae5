"""The profile job: end to end on the CPU with the torch profiler, the rocprofv3 reduction on recorded rocprofv3
output, the rocprofv3 child program, and (on a GPU) device kernels and the fence kernel."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernels import registry
from tests.workers.profile_plugin_entries import ENTRIES
from workers.device.parsers import torch_profiler
from workers.jobs import profile, profile_target
from workers.spec import STATUS_ERROR, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = HERE.parent / "fixtures" / "tool-output"
ENTRY = ENTRIES[0]
PLUGIN = "tests.workers.profile_plugin_entries"
GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")


def spec(**kw) -> JobSpec:
    base = dict(
        kind="profile",
        kernel=ENTRY.name,
        shape=[64, 256],
        dtype="fp32",
        impls=["eager", "fused", "gpu_only", "broken"],
        params={"iters": 4, "warmup": 2},
        key="k-profile",
    )
    base.update(kw)
    return JobSpec(**base)


@pytest.fixture
def only_test_entry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", {ENTRY.name: ENTRY})


def by_metric(result: JobResult) -> dict:
    return {(m.impl, m.metric): m for m in result.measurements}


def test_cpu_end_to_end(only_test_entry):
    result = profile.run(spec(), torch.device("cpu"))
    assert result.status == STATUS_OK and result.key == "k-profile"
    d = result.details
    assert d["profiler"] == "torch.profiler" and d["iters"] == 4 and d["warmup"] == 2
    assert d["unavailable"] == {"gpu_only": "needs a GPU"}
    assert list(d["impl_errors"]) == ["broken"] and "fails on purpose" in d["impl_errors"]["broken"]
    assert "broken" in result.error
    m = by_metric(result)
    assert set(m) == {(i, k) for i in ("eager", "fused") for k in ("kernel_time_us", "kernels_per_call")}
    # on the CPU the "kernels" are host ops: x * w + b is two ops, addcmul one
    assert m["eager", "kernels_per_call"].value == 2.0 and m["fused", "kernels_per_call"].value == 1.0
    for impl in ("eager", "fused"):
        t = m[impl, "kernel_time_us"]
        assert t.unit == "us" and len(t.samples) == 4 and all(s > 0 for s in t.samples)
        assert t.value == pytest.approx(sum(t.samples) / 4)
        rows = d["profile_rows"][impl]
        assert sum(r["total_ns"] for r in rows) / 1000 / 4 == pytest.approx(t.value)
        assert "host ops" in d["profile_source"][impl]
    assert {r["name"] for r in d["profile_rows"]["eager"]} == {"aten::mul", "aten::add"}
    assert [(r["name"], r["calls"]) for r in d["profile_rows"]["fused"]] == [("aten::addcmul", 4)]
    arts = {a["name"]: a for a in d["artifacts"]}
    assert set(arts) == {"eager.json.gz", "fused.json.gz"}
    raw = profile.artifact_bytes(arts["fused.json.gz"])
    assert arts["fused.json.gz"]["kind"] == "chrome_trace" and arts["fused.json.gz"]["size"] < len(raw)
    trace = torch_profiler.parse_chrome_trace(raw.decode())
    assert len(torch_profiler.annotation_windows(trace, profile.ITER_RANGE)) == 4
    again = JobResult.from_dict(json.loads(result.to_json()))
    assert again.details["profile_rows"] == d["profile_rows"]


def test_default_impls_and_seeded_inputs(only_test_entry):
    result = profile.run(spec(impls=[], params={"iters": 2, "warmup": 0, "seed": 7}), torch.device("cpu"))
    assert result.status == STATUS_OK and result.error is None
    assert sorted(result.details["profile_rows"]) == ["eager", "fused"]  # the entry's default_impls


def test_a_sweeps_null_seed_profiles(only_test_entry):
    # a sweep's seed is null by default (fresh inputs for correctness and timing): the profile job still runs
    result = profile.run(spec(impls=["eager"], params={"iters": 2, "warmup": 0, "seed": None}), torch.device("cpu"))
    assert result.status == STATUS_OK and result.error is None


@pytest.mark.parametrize(
    "change, status, words",
    [
        (dict(kind="micro"), STATUS_ERROR, "'micro'"),
        (dict(kernel="no_such_kernel"), STATUS_ERROR, "unknown kernel"),
        (dict(shape=[64]), STATUS_ERROR, "shape [rows, C]"),
        (dict(impls=["eager", "nope"]), STATUS_ERROR, "unknown implementation"),
        (dict(params={"iters": 0}), STATUS_ERROR, "iters"),
        (dict(params={"profiler": "nsys"}), STATUS_ERROR, "allowed: auto, torch, rocprofv3"),
        (dict(impls=["broken"]), STATUS_ERROR, "every implementation failed"),
        (dict(impls=["gpu_only"]), STATUS_SKIPPED, "no implementation can run"),
    ],
)
def test_bad_jobs_are_results(only_test_entry, change, status, words):
    if torch.cuda.is_available() and change.get("impls") == ["gpu_only"]:
        pytest.skip("gpu_only runs on a GPU machine")
    result = profile.run(spec(**change), torch.device("cpu"))
    assert result.status == status and words in result.error


def test_plugin_entry_through_the_registry(monkeypatch):
    monkeypatch.setenv("KERNELFLEET_PLUGINS", PLUGIN)
    monkeypatch.setattr(registry, "_REGISTRY", None)
    result = profile.run(spec(impls=["fused"]), torch.device("cpu"))
    assert result.status == STATUS_OK, result.error
    assert by_metric(result)["fused", "kernels_per_call"].value == 1.0


def test_choose_profiler(monkeypatch):
    cpu = torch.device("cpu")
    assert profile.choose_profiler(cpu, "auto") == ("torch", None, None)
    which, exe, note = profile.choose_profiler(cpu, "rocprofv3")
    assert which == "torch" and "ROCm devices only" in note
    with pytest.raises(ValueError):
        profile.choose_profiler(cpu, "nsys")
    # a ROCm build and device (no GPU needed to decide)
    monkeypatch.setattr(torch.version, "hip", "7.0.51831")
    rocm = torch.device("cuda", 0)
    monkeypatch.setattr(profile, "find_tool", lambda name: None)
    which, exe, note = profile.choose_profiler(rocm, "auto")
    assert which == "torch" and "rocprofv3 not found" in note
    monkeypatch.setattr(profile, "find_tool", lambda name: f"/opt/rocm/bin/{name}")
    assert profile.choose_profiler(rocm, "auto") == ("rocprofv3", "/opt/rocm/bin/rocprofv3", None)
    assert profile.choose_profiler(rocm, "torch") == ("torch", None, None)


# ------------------------------------------------------------------------------------------ rocprofv3 reduction


def fenced(text: str, dispatch_ids: set[int]) -> str:
    """The recorded sdk 1.0 trace with the named dispatches renamed to the fence kernel, as a profile_target run
    would have them (a test input built from real output, for the window logic)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    k, d = header.index("Kernel_Name"), header.index("Dispatch_Id")
    for row in rows[1:]:
        if int(row[d]) in dispatch_ids:
            row[k] = profile_target.FENCE_KERNEL
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n").writerows(rows)
    return out.getvalue()


SDK10_TRACE = (FIXTURES / "rocprofv3_sdk1.0.0_docs_kernel_trace.csv").read_text()
MANIFEST = {"impl": "triton", "iters": 2, "warmup": 1, "fence": profile_target.FENCE_KERNEL, "status": "ok"}


def test_rocprofv3_window_between_the_last_two_fences():
    # dispatch 1 (the first to start) and 13 (the last) become fences: 7 dispatches lie between them
    prof = profile.summarize_rocprofv3("triton", fenced(SDK10_TRACE, {1, 13}), None, MANIFEST)
    assert prof.source.endswith("between the fence kernels") and prof.notes == []
    assert prof.kernels_total == 7 and prof.iters == 2
    between = [12800, 8240, 11160, 11200, 11400, 9160, 9920, 12440, 9840]  # durations by start time
    assert prof.kernel_ns_total == sum(between[1:8])
    assert sum(r.calls for r in prof.rows) == 7 and prof.rows[0].name.startswith("divide_kernel")
    assert all(profile_target.FENCE_KERNEL not in r.name for r in prof.rows)
    assert prof.per_call_ns is None  # the 7 dispatches are not 2 equal calls
    m = {x.metric: x for x in prof.measurements()}
    assert m["kernels_per_call"].value == 3.5 and m["kernel_time_us"].value == pytest.approx(sum(between[1:8]) / 2e3)
    assert [a["name"] for a in prof.artifacts] == ["triton.kernel_trace.csv.gz"]
    # only the LAST two fences bound the window (an earlier one is the fence's own warm-up)
    later = profile.summarize_rocprofv3("triton", fenced(SDK10_TRACE, {1, 5, 13}), None, MANIFEST)
    assert later.kernels_total == 3  # subtract, multiply, divide after dispatch 5


def test_rocprofv3_per_call_split_when_calls_repeat():
    ds = sorted(
        profile.rocprofv3.parse_kernel_trace(
            (FIXTURES / "rocprofv3_rocm6.2.1_mi300a_openmp_kernel_trace.csv").read_text()
        ),
        key=lambda d: d.start_ns,
    )[:8]
    names, durs = [d.name for d in ds], [float(d.duration_ns) for d in ds]
    assert profile._periodic_calls(names, durs, 2) == [sum(durs[:4]), sum(durs[4:])]
    assert profile._periodic_calls(names, durs, 3) is None
    assert profile._periodic_calls(names[:7], durs[:7], 1) == [sum(durs[:7])]


def test_rocprofv3_without_fences_uses_the_whole_run():
    prof = profile.summarize_rocprofv3("triton", SDK10_TRACE, None, MANIFEST)
    assert prof.source.endswith("whole run") and "no pair of fence kernels" in prof.notes[0]
    assert prof.iters == 3 and prof.kernels_total == 9 and prof.per_call_ns is None
    assert {x.metric: x.value for x in prof.measurements()}["kernels_per_call"] == 3.0


def test_rocprofv3_stats_only():
    stats = (FIXTURES / "rocprofv3_rocm6.3-6.4_jacobi-hip_kernel_stats.csv").read_text()
    prof = profile.summarize_rocprofv3("eager", None, stats, {"iters": 10, "warmup": 5, "fence": None})
    assert len(prof.rows) == 7 and prof.rows[0].total_ns == 545275480
    assert prof.iters == 15 and prof.kernels_total == 1000 * 3 + 1001 * 3 + 1
    assert "only rocprofv3's stats" in prof.notes[0]
    with pytest.raises(RuntimeError):
        profile.summarize_rocprofv3("eager", None, None, {"iters": 1})


def test_find_rocprofv3_csvs_prefers_the_fenced_process(tmp_path):
    worker, target = tmp_path / "host" / "111", tmp_path / "host" / "222"
    worker.mkdir(parents=True)
    target.mkdir(parents=True)
    (worker / "111_kernel_trace.csv").write_text(SDK10_TRACE)  # e.g. a compile worker's dispatches
    (worker / "111_kernel_stats.csv").write_text("wrong")
    (target / "222_kernel_trace.csv").write_text(fenced(SDK10_TRACE, {1, 13}))
    stats = (FIXTURES / "rocprofv3_rocm6.2.1_jacobi-hip_kernel_stats.csv").read_text()
    (target / "222_kernel_stats.csv").write_text(stats)
    trace_text, stats_text = profile.find_rocprofv3_csvs(tmp_path, profile_target.FENCE_KERNEL)
    assert profile_target.FENCE_KERNEL in trace_text and stats_text == stats
    assert profile.find_rocprofv3_csvs(tmp_path / "host" / "111", profile_target.FENCE_KERNEL)[0] == SDK10_TRACE
    assert profile.find_rocprofv3_csvs(tmp_path / "none", None) == (None, None)


# ------------------------------------------------------------------------------------------ the child program


def run_target(spec_obj: JobSpec, impl: str, tmp_path: Path, device: str) -> tuple[int, dict]:
    env = dict(
        os.environ,
        KERNELFLEET_PLUGINS=PLUGIN,
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    )
    manifest = tmp_path / f"{impl}.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workers.jobs.profile_target",
            spec_obj.to_json(),
            "--impl",
            impl,
            "--device",
            device,
            "--manifest",
            str(manifest),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert manifest.is_file(), proc.stderr
    return proc.returncode, json.loads(manifest.read_text())


def test_profile_target_child_on_cpu(tmp_path):
    rc, manifest = run_target(spec(), "fused", tmp_path, "cpu")
    assert rc == 0, manifest["error"]
    assert manifest == {
        "impl": "fused",
        "iters": 4,
        "warmup": 2,
        "device": "cpu",
        "fence": None,
        "status": "ok",
        "error": None,
    }
    rc, manifest = run_target(spec(), "broken", tmp_path, "cpu")
    assert rc == 1 and manifest["status"] == "error" and "fails on purpose" in manifest["error"]
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(spec(params={"iters": 1, "warmup": 0}).to_json())
    assert profile_target.load_spec(str(spec_file))["params"] == {"iters": 1, "warmup": 0}


# ------------------------------------------------------------------------------------------ on a GPU


@GPU
def test_gpu_device_kernels(only_test_entry):
    result = profile.run(
        spec(impls=["eager", "fused", "gpu_only"], params={"iters": 5, "warmup": 2}), torch.device("cuda", 0)
    )
    assert result.status == STATUS_OK, result.error
    m = by_metric(result)
    # x * w + b launches two elementwise kernels, addcmul one
    assert m["eager", "kernels_per_call"].value == 2.0
    assert m["fused", "kernels_per_call"].value == 1.0 and m["gpu_only", "kernels_per_call"].value == 1.0
    for impl in ("eager", "fused"):
        t = m[impl, "kernel_time_us"]
        assert len(t.samples) == 5 and all(s > 0 for s in t.samples) and t.value < 1000
        assert result.details["profile_source"][impl] == "torch.profiler: device kernels"
        assert all(not r["name"].startswith("aten::") for r in result.details["profile_rows"][impl])


@GPU
def test_fence_kernel_name_in_a_gpu_trace():
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    name, launch = profile_target.make_fence(torch.device("cuda", 0))
    assert name == profile_target.FENCE_KERNEL
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        launch()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert any(profile_target.FENCE_KERNEL in n for n in names), names


@GPU
def test_profile_target_child_on_gpu(tmp_path):
    rc, manifest = run_target(spec(), "eager", tmp_path, "cuda:0")
    assert rc == 0, manifest["error"]
    assert manifest["fence"] == profile_target.FENCE_KERNEL and manifest["device"] == "cuda:0"
