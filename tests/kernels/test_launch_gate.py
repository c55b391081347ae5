"""The fast launch's gate (kernels.fast_launch): which Triton builds take it, the launch layouts it knows, the
lock's Triton among the checked builds, and the log of the path a process takes."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import kernels
from kernels import fast_launch
from tests.support import fake_launch


@pytest.fixture(autouse=True)
def _build_verdict_restored(monkeypatch):
    """The process's decided launch path (``_BUILD`` and its per-launch copy) as it was before each test: a test
    that makes the module decide again must not leave a fast verdict behind for the kernels' later tests."""
    monkeypatch.setattr(fast_launch, "_BUILD", fast_launch._BUILD)
    monkeypatch.setattr(fast_launch, "_FAST_SUPPORTED", fast_launch._FAST_SUPPORTED)


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "dist, version, backend, fast",
    [
        ("triton", "3.6.0", "cuda", True),
        ("triton", "3.7.1", "cuda", True),
        ("triton", "3.6", "cuda", True),
        ("triton", "3.60.0", "cuda", False),  # a prefix matches whole version parts only
        ("triton", "3.5.1", "cuda", False),
        ("triton", "3.8.0", "cuda", False),
        ("triton", "3.6.0", "hip", False),  # checked on NVIDIA only
        ("pytorch-triton-rocm", "3.6.0", "hip", False),  # ROCm's build: checked on no AMD GPU
        ("pytorch-triton", "3.7.0+git9c7bc0a3", "cuda", False),
        ("unknown", "3.7.1", "cuda", False),  # no distribution provides the imported package
    ],
)
def test_the_gate_takes_checked_builds_only(dist, version, backend, fast):
    path = fast_launch.decide_path(dist, version, backend)
    assert path.fast is fast
    assert path.name == ("fast" if fast else "triton")
    assert f"{dist} {version} on {backend}" in path.reason


def test_without_a_gpu_the_interpreter_runs_the_kernels():
    path = fast_launch.decide_path("triton", "3.7.1", "cpu")
    assert not path.fast and path.reason == "triton 3.7.1, no GPU: Triton's interpreter runs the kernels"


def test_the_gate_without_triton_or_its_knobs():
    assert fast_launch.decide_path("none", "", "cuda").reason == "triton is not importable"
    assert not fast_launch.decide_path("triton", "3.6.0", "cuda", has_knobs=False).fast


def _lock_pin(name: str) -> str:
    text = (ROOT / "requirements" / name).read_text()
    m = re.search(r"^triton==(\S+)", text, re.MULTILINE)
    assert m, f"requirements/{name} pins no triton"
    return m.group(1)


@pytest.mark.parametrize("lock", ["run.txt", "test.txt"])
def test_the_locks_triton_takes_the_fast_launch(lock):
    """What users install (the lock's Triton, on an NVIDIA GPU) is a build the fast launch was checked on: a lock
    bump past the checked builds fails here until the new build is checked on a GPU and added to the table."""
    version = _lock_pin(lock)
    assert fast_launch.checked("triton", version, "cuda"), (
        f"requirements/{lock} pins triton {version}, which the fast launch was not checked on "
        f"(kernels/fast_launch.py CHECKED_TRITON: {fast_launch.CHECKED_TRITON})"
    )


def _kernel(run):
    return SimpleNamespace(run=run, function=1234, packed_metadata=(4, 1, 0))


def _run(**attrs):
    def launch(*args):
        return args

    base = dict(
        launch=launch, global_scratch_size=0, profile_scratch_size=0, launch_cooperative_grid=False, launch_pdl=True
    )
    return SimpleNamespace(**{**base, **attrs})


def test_the_launch_layouts_read_from_tritons_launchers():
    """Triton 3.6's per-signature C launcher takes scratch before the metadata and the kernel's arguments spread;
    3.7's shared one takes the metadata first, scratch after the hooks, then the argument annotations, the packed
    signature and the arguments as one sequence (triton/backends/nvidia/driver.py, CudaLauncher.__call__)."""
    run36 = _run()
    fn, lead, packed = fast_launch._raw_launch(_kernel(run36))
    assert fn is run36.launch and not packed
    assert lead == (1234, False, True, None, None, (4, 1, 0), None, None, None)

    run37 = _run(arg_annotations=["a"], kernel_signature=b"s")
    fn, lead, packed = fast_launch._raw_launch(_kernel(run37))
    assert fn is run37.launch and packed
    assert lead == (1234, False, True, (4, 1, 0), None, None, None, None, None, ["a"], b"s")


def test_launches_triton_must_prepare_keep_its_path():
    def inner(*args):  # Triton's tensor-descriptor wrapper around the C launch
        return args

    assert fast_launch._raw_launch(_kernel(_run(global_scratch_size=128))) is None
    assert fast_launch._raw_launch(_kernel(_run(profile_scratch_size=64))) is None
    assert fast_launch._raw_launch(_kernel(_run(launch=inner))) is None
    assert fast_launch._raw_launch(_kernel(_run(arg_annotations=["a"]))) is None  # half a 3.7 launcher: unknown
    hip = SimpleNamespace(launch=_run().launch, profile_scratch_size=0)  # HIPLauncher: no global scratch field
    assert fast_launch._raw_launch(_kernel(hip)) is None


def test_a_37_launch_passes_the_arguments_as_one_sequence(monkeypatch, device):
    log = fake_launch.install(monkeypatch.setattr, packed=True)
    x, w = torch.randn(4, 64, device=device), torch.randn(64, device=device)
    with torch.no_grad():
        kernels.rms_norm(x, w)  # Triton's launch (faked: not logged), kept
        out = kernels.rms_norm(x, w)  # the cached (or replayed) launch
    assert len(log) == 1
    entry = log[0]
    assert entry[-3:-1] == (["annotations of " + entry[0]], b"signature of " + entry[0].encode())
    args = entry[-1]
    assert isinstance(args, tuple) and x.data_ptr() in args and out.data_ptr() in args and w.data_ptr() in args


def test_the_path_is_logged_once_per_process(monkeypatch, caplog):
    monkeypatch.setattr(fast_launch, "_BUILD", None)
    monkeypatch.setattr(fast_launch, "_this_path", lambda: fast_launch.LaunchPath(False, "x 1.0 ... own launch path"))
    with caplog.at_level(logging.INFO, logger="kernels.fast_launch"):
        fast_launch.launch_path()
        fast_launch.launch_path()
        fast_launch.fast_launch_active()
    records = [r for r in caplog.records if r.name == "kernels.fast_launch"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING  # an unchecked build warns
    assert records[0].getMessage() == "launch path: triton (x 1.0 ... own launch path)"
    assert not fast_launch.fast_launch_active()


def test_switches_over_a_checked_build(monkeypatch):
    monkeypatch.setattr(fast_launch, "_BUILD", fast_launch.LaunchPath(True, "checked"))
    monkeypatch.setattr(fast_launch, "INTERPRETED", False)
    assert fast_launch.launch_path().fast
    monkeypatch.setattr(fast_launch, "FAST_LAUNCH", False)
    assert fast_launch.launch_path() == fast_launch.LaunchPath(False, "KERNELFLEET_FAST_LAUNCH=0")
    monkeypatch.setattr(fast_launch, "FAST_LAUNCH", True)
    monkeypatch.setattr(fast_launch, "INTERPRETED", True)
    assert "TRITON_INTERPRET=1" in fast_launch.launch_path().reason
