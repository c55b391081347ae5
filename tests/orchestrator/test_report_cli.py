"""What a reader sees of stored runs: `runs`, the compact and the wide summary table, Markdown for docs/perf/.

The runs are written through the store's real writer into a real SQLite file; the CLI runs in a subprocess.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import pytest

from orchestrator.store import migrate
from orchestrator.store.session import dispose_engines
from orchestrator.store.writer import StoreWriter
from workers.spec import DeviceInfo, JobResult, JobSpec, Measurement

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEASURED = dt.datetime(2026, 11, 3, 9, 30, tzinfo=dt.timezone.utc)
CPU = DeviceInfo(
    vendor="cpu", name="AMD EPYC", arch="x86_64", compute_units=2, torch="2.13.0+cpu", triton="3.9.0", gpu_type="cpu"
)
NOT_RUN = {
    "compile_max": "torch.compile mode=max-autotune-no-cudagraphs tunes GPU kernels; not run on the CPU",
    "liger": "liger-kernel is not installed",
}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "120"},
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """One sweep run on a CPU: rmsnorm on a long shape, Triton interpreted, two implementations not run."""
    url = f"sqlite:///{tmp_path_factory.mktemp('report') / 'kf.db'}"
    migrate.upgrade(url)
    w = StoreWriter(url)
    spec = JobSpec(
        kind="micro",
        kernel="add_rms_norm_modulate",
        shape=[2, 6336, 2048],
        dtype="bf16",
        impls=["triton", "eager", "compile_max", "liger"],
        key="k-micro",
        sweep="rmsnorm",
    )
    run_id = w.start_run("rmsnorm", {"sweep": {"name": "rmsnorm"}}, "plan-1", "abc1234", "h1")
    w.add_jobs(run_id, [spec.to_dict()])
    w.record_device(CPU.to_dict())
    ms = []
    for impl, us in (("triton", 37971.5), ("eager", 812.25)):
        ms += [
            Measurement(impl, "time_us", us, "us", [us, us + 1, us - 1]),
            Measurement(impl, "iqr_us", 1.0, "us"),
            Measurement(impl, "gbs", 1e5 / us, "GB/s"),
            Measurement(impl, "correct", 1.0),
            Measurement(impl, "speedup", 812.25 / us, "x"),
        ]
    w.record_result(
        run_id,
        JobResult(
            "k-micro",
            "ok",
            ms,
            device=CPU,
            started_at=MEASURED.timestamp(),
            duration_s=3.0,
            details={"unavailable": NOT_RUN},
        ).to_dict(),
    )
    w.finish_run(run_id, "complete", {"planned": 1, "ran": 1, "status_ok": 1})
    w.close()
    dispose_engines()
    return url


def test_runs_lists_id_sweep_date_device_status_and_counts(store):
    p = cli("runs", "--url", store)
    assert p.returncode == 0, p.stderr
    row = next(ln for ln in p.stdout.splitlines() if "rmsnorm" in ln)
    for cell in ("1", "rmsnorm", "AMD EPYC", "complete", "1 job: 1 ok", "sweep"):
        assert cell in row, row


def test_the_default_table_fits_120_columns_and_says_what_was_not_run_and_interpreted(store):
    p = cli("report", "--url", store)
    assert p.returncode == 0, p.stderr
    assert max(len(ln.rstrip()) for ln in p.stdout.splitlines()) <= 120, p.stdout
    rows = {ln.split()[3]: ln for ln in p.stdout.splitlines() if "add_rms_norm_modulate" in ln}
    assert "interpreted" in rows["triton"] and "37971.50" in rows["triton"]
    assert "0.02x" not in rows["triton"]  # no speed-up or bandwidth of an interpreter's time
    assert "not run" in rows["compile_max"] and "not run" in rows["liger"]
    assert f"not run: liger: {NOT_RUN['liger']}" in p.stdout
    assert f"not run: compile_max: {NOT_RUN['compile_max']}" in p.stdout
    assert "Triton's interpreter" in p.stdout
    wide = cli("report", "--url", store, "--wide")
    assert wide.returncode == 0 and "% ceiling (kernel)" in wide.stdout and "IQR µs" in wide.stdout
    assert "IQR µs" not in p.stdout


def test_markdown_dates_the_measurement_and_counts_in_words(store, tmp_path):
    md = tmp_path / "run.md"
    p = cli("report", "1", "--url", store, "--markdown", str(md))
    assert p.returncode == 0, p.stderr
    text = md.read_text()
    assert "- **Measured:** 2026-11-03 09:30 UTC (run 1 started" in text
    assert "- **Jobs:** 1 ok" in text and "{" not in text.split("**Jobs:**")[1].splitlines()[0]
    assert "| add_rms_norm_modulate | 2x6336x2048 | bf16 | liger |" in text and "not run: liger" in text


def test_a_sweep_prints_the_compact_table_and_every_column_with_wide(store):
    from rich.console import Console

    from orchestrator.reports import summary as report

    def printed(wide: bool) -> str:
        console = Console(width=200, record=True)
        report.print_run_summary(console, store, 1, "run 1 · rmsnorm", wide=wide)
        return console.export_text()

    compact, wide = printed(False), printed(True)
    assert "IQR µs" not in compact and max(len(ln.rstrip()) for ln in compact.splitlines()) <= 120
    assert "IQR µs" in wide and "graph µs" in wide and "% ceiling (kernel)" in wide
