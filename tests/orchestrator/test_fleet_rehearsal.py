"""`node join --label`: a GPU-type override makes a rehearsal node, marked everywhere; a node joining a machine that
already runs a Ray node gets its own ports and temp dir; results measured on a rehearsal node keep their tag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.fleet import nodes as fleet
from workers.device import rehearsal
from workers.spec import DeviceInfo

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "fixtures" / "nodes" / "h200"
DETECTED = {"kernelfleet.io/gpu": "h200", "kernelfleet.io/arch": "sm_90", "kernelfleet.io/vendor": "nvidia"}


def test_overriding_the_gpu_type_makes_a_rehearsal_node_tagged_with_the_real_type():
    out = fleet.override_labels(DETECTED, ["gpu=rehearsal"])
    assert out["kernelfleet.io/gpu"] == "rehearsal"
    assert out["kernelfleet.io/rehearsal-of"] == "h200"
    assert out["kernelfleet.io/arch"] == "sm_90"  # the rest stays as detected
    assert rehearsal.describe(out) == "rehearsal (rehearsal; really h200)"
    assert rehearsal.describe(DETECTED) == "h200"


def test_labels_other_than_the_gpu_type_and_the_same_type_again_are_no_rehearsal():
    out = fleet.override_labels(DETECTED, ["kernelfleet.io/rack=r7,pool=a", "gpu=h200"])
    assert out["kernelfleet.io/rack"] == "r7" and out["kernelfleet.io/pool"] == "a"
    assert "kernelfleet.io/rehearsal-of" not in out


@pytest.mark.parametrize(
    "bad, says",
    [
        ("gpu", "expected KEY=VALUE"),
        ("gpu=", "expected KEY=VALUE"),
        ("ray.io/accelerator-type=H100", "only labels in the kernelfleet.io/ namespace"),
        ("rehearsal-of=mi355x", "set by node join itself"),
    ],
)
def test_a_bad_label_is_refused_with_the_reason(bad, says):
    with pytest.raises(fleet.FleetError, match=says):
        fleet.override_labels(DETECTED, [bad])


def test_a_machine_without_a_gpu_cannot_rehearse_one():
    with pytest.raises(fleet.FleetError, match="no GPU to rehearse with"):
        fleet.override_labels({}, ["gpu=rehearsal"])


def test_results_of_a_rehearsal_node_keep_its_tag_and_the_detected_type():
    device = DeviceInfo(vendor="nvidia", name="NVIDIA H200", arch="sm_90", gpu_type="h200", runtime="cuda 13.0")
    labels = fleet.override_labels(DETECTED, ["gpu=rehearsal"])
    tagged = rehearsal.relabel(device, labels)
    assert tagged.gpu_type == "rehearsal" and tagged.extra[rehearsal.EXTRA_KEY] == "h200"
    assert tagged.hardware_key != device.hardware_key and "rehearsal" in tagged.hardware_key
    assert device.gpu_type == "h200" and rehearsal.EXTRA_KEY not in device.extra  # the original is untouched
    assert rehearsal.relabel(device, DETECTED) is device  # a real node's results as measured
    assert rehearsal.relabel(None, labels) is None


def test_the_first_node_on_a_machine_gets_rays_defaults(monkeypatch):
    monkeypatch.setattr(fleet, "_raylets_here", lambda: 0)
    assert fleet.same_host_args([]) == ([], "")


def test_another_node_on_the_machine_gets_ports_and_a_temp_dir_of_its_own(monkeypatch, tmp_path):
    monkeypatch.setattr(fleet, "_raylets_here", lambda: 1)
    args, why = fleet.same_host_args([], temp_root=str(tmp_path))
    names = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args}
    assert "another Ray node runs on this machine" in why
    assert int(names["--dashboard-agent-listen-port"]) > 0 and int(names["--metrics-export-port"]) > 0
    assert names["--min-worker-port"] == names["--max-worker-port"] == "0"
    assert names["--temp-dir"].startswith(str(tmp_path))
    # what the admin passed is kept, not doubled
    given = ["--temp-dir=/data/ray2", "--dashboard-agent-listen-port=52400", "--worker-port-list=20000,20001"]
    args, _ = fleet.same_host_args(given, temp_root=str(tmp_path))
    assert {a.split("=", 1)[0] for a in args} == {"--metrics-export-port"}


def test_node_join_dry_run_shows_the_rehearsal_tag_and_labels():
    r = subprocess.run(
        [sys.executable, "-m", "orchestrator", "node", "join", "--dry-run", "--insecure"]
        + ["--address", "127.0.0.1:9", "--from-fixtures", str(H200), "--label", "gpu=rehearsal"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert "rehearsal: this node is tagged gpu=rehearsal but is really h200" in " ".join(out.split())
    assert "kernelfleet.io/gpu=rehearsal" in out and "kernelfleet.io/rehearsal-of=h200" in out
    assert "--labels=" in out and "rehearsal-of=h200" in out.split("--labels=", 1)[1]
    bad = subprocess.run(
        [sys.executable, "-m", "orchestrator", "node", "join", "--dry-run", "--address", "127.0.0.1:9"]
        + ["--from-fixtures", str(H200), "--label", "ray.io/x=y"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "only labels in the kernelfleet.io/ namespace" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr
