"""workers.device.clocks: the SM clock and power log beside the e2e job's timed calls (nvidia-smi -lms)."""

import stat
import time
from pathlib import Path

import pytest
import torch

from workers.device import clocks as gpu_clocks
from workers.device.clocks import ClockLog, Sample, parse_samples, summarize

RECORDED = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "tool-output"
    / "nvidia-smi_query-gpu_clocks-power_csv-lms200_h200.csv"
)


def test_recorded_log_of_a_mode_at_the_power_limit():
    """The H200's log around the triton+graph mode: idle at 1980 MHz, then 697 W and the clock down to 1620."""
    samples = parse_samples(RECORDED.read_text())
    assert len(samples) == 35 and samples[0] == Sample(1980.0, 122.59, None)
    s = summarize(samples)
    assert s == {
        "samples": 35,
        "interval_ms": 200,
        "sm_mhz_median": 1965.0,
        "sm_mhz_min": 1620.0,
        "power_w_median": 424.69,
        "power_w_max": 697.36,
    }


def test_share_of_samples_at_the_power_limit():
    samples = [
        Sample(1980.0, 120.0, 700.0),
        Sample(1755.0, 690.0, 700.0),
        Sample(1710.0, 668.0, 700.0),
        Sample(None, None, None),
    ]
    s = summarize(samples)
    assert s["power_limit_w"] == 700.0 and s["at_power_limit"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["sm_mhz_min"] == 1710.0 and s["samples"] == 4
    assert summarize([]) == {"samples": 0, "interval_ms": 200}


def _fake_smi(tmp_path: Path, body: str) -> str:
    """An executable standing in for nvidia-smi: records its arguments, then runs ``body`` (bash)."""
    exe = tmp_path / "nvidia-smi"
    exe.write_text(f'#!/usr/bin/env bash\necho "$@" > "{tmp_path}/args"\n{body}\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def test_log_runs_the_tool_beside_the_work_and_stops_it(tmp_path):
    """The tool's recorded lines come back as samples; it is stopped when the stretch ends, and a line cut off by
    the stop is dropped."""
    lines = RECORDED.read_text().splitlines()
    body = "\n".join(f"echo '{line}'" for line in lines[:6]) + "\nprintf '2026/11/30 13:14:13.1, 0, 17'\nsleep 60"
    exe = _fake_smi(tmp_path, body)
    log = ClockLog("GPU-e4109b10", exe=exe)
    with log:
        time.sleep(0.5)
    args = (tmp_path / "args").read_text().split()
    assert args == [
        "--query-gpu=timestamp,clocks.sm,power.draw,power.limit",
        "--format=csv",
        "-lms",
        "200",
        "-i",
        "GPU-e4109b10",
    ]
    assert log.summary() == {**summarize(parse_samples("\n".join(lines[:6]) + "\n")), "source": "nvidia-smi"}
    assert log.summary()["samples"] == 5


def test_nothing_logged_says_why(tmp_path, monkeypatch):
    assert ClockLog.for_device(torch.device("cpu")).summary() is None
    with ClockLog.for_device(torch.device("cpu")) as log:
        pass
    assert log.summary() is None
    monkeypatch.setattr(gpu_clocks, "find_tool", lambda name: None)
    # neither NVML (which a GPU host has, and which is read first) nor nvidia-smi
    monkeypatch.setattr(gpu_clocks.gpu_libs, "library_for", lambda backend: ("nvml", None))
    assert ClockLog.for_device(torch.device("cuda")).summary() == {"skipped": "nvidia-smi not found"}
    with ClockLog("0", exe=str(tmp_path / "missing")) as log:
        pass
    assert log.summary()["error"].startswith("nvidia-smi did not start")
    with ClockLog("0", exe=_fake_smi(tmp_path, "exit 6")) as log:
        time.sleep(0.2)
    assert "logged no samples" in log.summary()["error"]
    with ClockLog("0", exe=_fake_smi(tmp_path, "echo 'a, b'; echo '1, 2, 3'")) as log:
        time.sleep(0.2)
    assert log.summary()["error"].startswith("unreadable nvidia-smi log")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or bool(torch.version.hip), reason="needs an NVIDIA GPU")
def test_log_of_a_real_gpu():
    """On a GPU with nvidia-smi: samples of this device's clock and power while it works."""
    log = ClockLog.for_device(torch.device("cuda"))
    x = torch.randn(4096, 4096, device="cuda")
    with log:
        t = time.monotonic()
        while time.monotonic() - t < 1.0:
            x = x @ x
            x = x / x.norm()
        torch.cuda.synchronize()
    s = log.summary()
    assert s["samples"] >= 2 and s["sm_mhz_median"] > 0 and s["power_w_max"] > 0 and s["power_limit_w"] > 0
