"""Suite-wide settings: without a GPU, kernels run through Triton's interpreter; test-only kernels are plugins.

On a GPU machine the kernels are compiled as usual and the GPU-only tests (marked `gpu`) run; set
TRITON_INTERPRET=1 yourself to run the CPU path there.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("KERNELFLEET_PLUGINS", "benchmarks.fault_kernels")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")


@pytest.fixture
def device() -> torch.device:
    """The device kernel, injection and worker tests run on: the GPU when there is one (compiled Triton), else the
    CPU with Triton's interpreter (tests/support/devices.py)."""
    from tests.support.devices import TEST_DEVICE

    return TEST_DEVICE


def pytest_itemcollected(item):
    """Groups for pytest-xdist's ``--dist loadgroup`` (README: the test command runs two workers).

    A test that uses a module-scoped fixture (a simulated fleet, a finished sweep, a built pipeline) runs on the same
    worker as the other tests of its module that use one, so each such fixture is built once, not once per worker.
    GPU tests share one worker: two of them never time kernels on one device at the same moment.  GPU tests that
    compile and compare but time nothing (torch.compile of whole models, CUDA-graph modes) declare the group
    ``gpu-compile`` themselves: a second chain, so the GPU suite's longest worker is not every GPU test in a row.
    (Marked as each test is collected: pytest-xdist reads the groups in its own ``pytest_collection_modifyitems``.)"""
    if item.get_closest_marker("xdist_group"):
        return
    if item.get_closest_marker("gpu"):
        item.add_marker(pytest.mark.xdist_group("gpu"))
        return
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d and d[-1].scope == "module" for d in defs):
        item.add_marker(pytest.mark.xdist_group(item.module.__name__))


def pytest_runtest_logreport(report):
    """With KERNELFLEET_FAILURE_LOG set (.ci/gpu sets it), each failure's traceback is appended to that file as it
    happens, so a run cut short (a machine's time running out) still says why its failures failed.  Written by the
    process that prints the results (pytest-xdist's controller), once per failure."""
    path = os.environ.get("KERNELFLEET_FAILURE_LOG")
    if not path or not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"===== {report.nodeid} ({report.when})\n{report.longreprtext[-8000:]}\n\n")
