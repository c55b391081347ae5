"""Fixtures for the dashboard tests: a store filled by a real smoke sweep plus imported real H200 results (built
once per session), a real dashboard server on a free port, and headless Chromium driven by Selenium.

Without Chromium/chromedriver the browser tests are skipped with the reason, except under CI (CI=true), where
they fail.  Screenshots go to $KERNELFLEET_TEST_ARTIFACTS (default: the session's temporary folder).
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from rich.console import Console

from benchmarks import chromium
from orchestrator.store import migrate, session

REPO = Path(__file__).resolve().parents[2]
# The raw H200 results imported into the test store.  One constant: where the import-ready files live.
H200_RESULTS = REPO / "results" / "h200"
ISA_RESULTS = REPO / "results" / "isa"  # compiled-code results for AMD and NVIDIA targets (the ISA page)
KERNEL_FILES = 7  # kernel results files imported (spread over the dates), so trends have history
SMOKE = ["+sweep=smoke", "sweep.kinds=[correctness,micro,profile]", "sweep.seed=0"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def h200_files() -> list[Path]:
    """Every e2e results file and KERNEL_FILES kernel results files, oldest first, spread over the dates."""
    files = sorted(p for p in H200_RESULTS.rglob("*.jsonl.gz") if p.is_file())
    e2e = [p for p in files if "e2e" in p.name]
    kernels = [p for p in files if "e2e" not in p.name]
    step = max(len(kernels) // KERNEL_FILES, 1)
    return kernels[::step][:KERNEL_FILES] + e2e


def import_files(url: str, files: list[Path]) -> None:
    from orchestrator.interchange.importer import import_results

    for f in files:
        assert import_results([str(f)], url, Console(file=io.StringIO())) == 0, f


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop(session.ENV_VAR, None)
    return env


@pytest.fixture(scope="session")
def artifacts_dir(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("KERNELFLEET_TEST_ARTIFACTS") or tmp_path_factory.mktemp("dashboard-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def filled_store(tmp_path_factory) -> str:
    """A SQLite store: a real smoke sweep (correctness, micro, profile jobs on this CPU) + real H200 imports."""
    path = tmp_path_factory.mktemp("store") / "kernelfleet.db"
    url = session.sqlite_url_for(path)
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", *SMOKE, f"store.url={url}"],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1: some job failed; its error is data for the pages
    import_files(url, h200_files())
    import_files(url, [ISA_RESULTS])  # a folder: each plan a run
    session.dispose_engines()
    return url


def start_server(url: str, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dashboard", "--db", url, "--port", str(port), *extra],
        cwd=REPO,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the dashboard exited {proc.returncode}: {proc.stderr.read()}")
        try:
            urllib.request.urlopen(base + "/", timeout=2).read()
            return proc, base
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError("the dashboard did not answer within 60 s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def server(filled_store: str) -> Iterator[str]:
    proc, base = start_server(filled_store)
    yield base
    stop_server(proc)


@pytest.fixture(scope="session")
def browser() -> Iterator:
    missing = chromium.missing()
    if missing:
        if in_ci():
            pytest.fail(f"{missing} (CI=true: the browser tests must run)")
        pytest.skip(missing)
    profile = tempfile.mkdtemp(prefix="kf-chromium-")
    driver = chromium.start(profile)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def upgraded_store(tmp_path) -> str:
    url = session.sqlite_url_for(tmp_path / "empty" / "kernelfleet.db")
    migrate.upgrade(url)
    return url
