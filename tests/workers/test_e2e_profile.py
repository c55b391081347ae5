"""workers.jobs.e2e.profile: the per-step breakdown of a profiled pipeline call, on a recorded H200 trace and on a real
tiny e2e job on the test device (tests/support/devices.py)."""

from pathlib import Path

import pytest
import torch

from workers.device.parsers import torch_profiler
from workers.jobs.e2e import job as e2e
from workers.jobs.e2e import profile as e2e_profile
from workers.spec import STATUS_OK, JobSpec

TOOL_OUTPUT = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"
H200_TRACE = TOOL_OUTPUT / "torch-profiler_chrome-trace_h200_torch2.11.0+cu130.json"


def test_kernel_classes_by_name():
    ours = frozenset({"_rms_norm_kernel"})
    assert e2e_profile.kernel_class("_rms_norm_kernel", ours) == "kernelfleet"
    assert e2e_profile.kernel_class("triton_per_fused_add_mul_0", ours) == "inductor"
    assert e2e_profile.kernel_class("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", ours) == "gemm"
    assert e2e_profile.kernel_class("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", ours) == "gemm"
    assert (
        e2e_profile.kernel_class("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>", ours)
        == "attention"
    )
    assert (
        e2e_profile.kernel_class("void at::native::vectorized_elementwise_kernel<4, at::native::Mul>", ours)
        == "elementwise"
    )
    assert e2e_profile.kernel_class("some_vendor_kernel", ours) == "other"
    # seen on the H200 (torch 2.11 SDPA through cuDNN): attention, though the name says wgmma
    assert (
        e2e_profile.kernel_class(
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0",
            ours,
        )
        == "attention"
    )


def test_busy_time_counts_overlap_once():
    assert e2e_profile.busy_ms([]) == 0.0
    # [0,10) and [5,20) overlap -> 20 us; [30,35) apart -> 5 us; total 25 us
    assert e2e_profile.busy_ms([(30.0, 5.0), (0.0, 10.0), (5.0, 15.0)]) == pytest.approx(0.025)
    assert e2e_profile.busy_ms([(0.0, 10.0), (2.0, 3.0)]) == pytest.approx(0.010)  # nested


def test_summary_of_a_recorded_h200_trace():
    trace = torch_profiler.parse_chrome_trace(H200_TRACE.read_text())
    kernels = trace.kernels()
    s = e2e_profile.summarize(trace, 2, frozenset())
    assert s["source"] == "device kernels"
    assert s["kernels"] == pytest.approx(len(kernels) / 2)
    assert s["kernel_ms"] == pytest.approx(sum(k.dur_us for k in kernels) / 2e3)
    assert 0 < s["gpu_busy_ms"] <= s["kernel_ms"] + 1e-9
    assert sum(c["kernels"] for c in s["classes"].values()) == pytest.approx(len(kernels) / 2)
    assert sum(c["ms"] for c in s["classes"].values()) == pytest.approx(s["kernel_ms"], rel=1e-3)
    assert "gemm" in s["classes"] and "elementwise" in s["classes"]
    assert s["top"][0]["ms_per_step"] >= s["top"][-1]["ms_per_step"]
    with pytest.raises(ValueError, match="steps"):
        e2e_profile.summarize(trace, 0, frozenset())


def test_our_kernel_names_are_found():
    names = e2e_profile.kernelfleet_kernel_names()
    assert {"_rms_norm_kernel", "_qk_norm_rope_kernel", "_add_rms_norm_modulate_kernel"} <= names


def test_e2e_job_profiles_each_mode_on_request(monkeypatch, device):
    events = []
    run_call, profile_call = e2e.run_call, e2e.profile_call
    monkeypatch.setattr(
        e2e,
        "run_call",
        lambda s, spec, p, d, **kw: events.append(("call", p["steps"])) or run_call(s, spec, p, d, **kw),
    )
    monkeypatch.setattr(e2e, "profile_call", lambda *a: events.append(("profile",)) or profile_call(*a))
    monkeypatch.setattr(e2e, "mark_profiler_used", lambda: None)  # this test process goes on timing
    spec = JobSpec(
        kind="e2e",
        model="ltx-video",
        shape=[9, 64, 96],
        dtype="bf16",
        impls=["eager", "triton"],
        key="k",
        params={"steps": 2, "repeats": 1, "tiny": True, "profile_steps": 1},
    )
    res = e2e.run(spec, device)
    # every timed call (2 steps: warm-up, repeat and the host-time probe, per mode) comes before the first capture;
    # each capture is a warm-up call of 1 step, then the profiled one
    assert events[:6] == [("call", 2)] * 6
    assert events[6:] == [("call", 1), ("profile",), ("call", 1)] * 2
    assert res.status == STATUS_OK, res.error
    prof = res.details["profile"]
    assert set(prof) == {"eager", "triton"}
    on_gpu = device.type == "cuda"
    for mode in ("eager", "triton"):
        assert prof[mode]["steps"] == 1
        assert prof[mode]["source"] == ("device kernels" if on_gpu else "host ops (no device kernels)")
        assert prof[mode]["top"] and all(r["ms_per_step"] >= 0 for r in prof[mode]["top"])
    # device-time measurements where there are device kernels (the CPU has none)
    busy = {m.impl for m in res.measurements if m.metric == "gpu_busy_ms_per_step"}
    assert busy == ({"eager", "triton"} if on_gpu else set())
    if on_gpu:  # the kernels' own launches are told apart: only the triton mode runs them
        assert "kernelfleet" in prof["triton"]["classes"] and "kernelfleet" not in prof["eager"]["classes"]


def test_profile_steps_must_not_be_negative():
    spec = JobSpec(
        kind="e2e",
        model="ltx-video",
        shape=[9, 64, 96],
        dtype="bf16",
        impls=["eager"],
        key="k",
        params={"steps": 2, "tiny": True, "profile_steps": -1},
    )
    with pytest.raises(ValueError, match="profile_steps must be >= 0"):
        e2e.run(spec, torch.device("cpu"))


def test_our_kernels_are_summed_by_module_with_their_registry_kernels():
    """``ours``: the device time and launches per step of this project's kernels, by the module that defines them
    (here a recorded cuBLAS kernel stands in for one of ours)."""
    trace = torch_profiler.parse_chrome_trace(H200_TRACE.read_text())
    name = next(k.name for k in trace.kernels() if k.name.startswith("nvjet"))
    mine = [k for k in trace.kernels() if k.name == name]
    s = e2e_profile.summarize(trace, 2, {name: "kernels.adaln"}, {"kernels.adaln": ["adaln", "adaln_layer_norm"]})
    (row,) = s["ours"]
    assert row["module"] == "kernels.adaln" and row["kernels"] == ["adaln", "adaln_layer_norm"]
    assert row["ms"] == pytest.approx(sum(k.dur_us for k in mine) / 2e3, abs=1e-5)  # rounded to 10 ns
    assert row["launches"] == pytest.approx(len(mine) / 2)
    assert s["classes"]["kernelfleet"]["ms"] == pytest.approx(row["ms"], rel=1e-3)
    assert e2e_profile.summarize(trace, 2, frozenset())["ours"] == []
    # every kernel module's jit kernels map to it; rmsnorm's module holds the rmsnorm entry
    assert e2e_profile.kernelfleet_kernel_modules()["_rms_norm_kernel"] == "kernels.rmsnorm"
    assert "rmsnorm" in e2e_profile.registry_kernels_by_module()["kernels.rmsnorm"]
