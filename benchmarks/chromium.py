"""Headless Chromium through selenium, as the dashboard's browser tests and the dashboard benchmarks
(benchmarks/dashboard_scale.py, benchmarks/compare_time.py) drive it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


def missing() -> str | None:
    """Why headless Chromium cannot run here, or None."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        return "headless Chromium is not installed (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra)"
    return None


def start(profile: str):
    """A selenium driver of headless Chromium with its profile in the folder ``profile`` and the browser console
    logged (``driver.get_log("browser")``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for flag in FLAGS + (f"--user-data-dir={profile}",):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


@contextmanager
def dashboard_in_browser(url: str) -> Iterator[tuple[Any, str]]:
    """A real ``python -m dashboard`` server on a free port reading the store at ``url``, and headless Chromium:
    (driver, the server's base URL) once the server answers; both stopped on leaving."""
    import os
    import socket
    import subprocess
    import sys
    import tempfile
    import time
    import urllib.request

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "dashboard", "--db", url, "--port", str(port)],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    driver = start(tempfile.mkdtemp())
    try:
        for _ in range(400):
            try:
                urllib.request.urlopen(base + "/", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        yield driver, base
    finally:
        driver.quit()
        server.terminate()
        server.wait(timeout=20)


def load_s(driver, target: str, idle: str, timeout: float) -> float:
    """Seconds from asking ``driver`` for ``target`` until the script ``idle`` returns true."""
    import time

    from selenium.webdriver.support.ui import WebDriverWait

    t = time.perf_counter()
    driver.get(target)
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(idle))
    return time.perf_counter() - t
