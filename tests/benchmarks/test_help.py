"""Every benchmark script is a documented command: `--help` names what it measures and which docs/perf page it
backs, and a bad argument is a one-line usage error (exit 2)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# modules the scripts (and tests) import, and the plugin kernels (fault rehearsal, failing on purpose)
HELPERS = ("__init__", "cli_args", "chromium", "fault_kernels", "sample_devices", "spin_kernel", "wall")
SCRIPTS = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem not in HELPERS)


def test_every_script_is_listed():
    assert SCRIPTS == [
        "aa_check",
        "call_probe",
        "compare_time",
        "copy_calibration",
        "dashboard_scale",
        "e2e_host_profile",
        "fleet_bench",
        "fleet_real",
        "grad_check_overhead",
        "launch_paths",
        "norm_launch_knobs",
        "overhead",
    ]


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_and_the_page_it_backs(name, capsys):
    module = importlib.import_module(f"benchmarks.{name}")
    pages = re.findall(r"docs/perf/[\w.-]+\.md", module.__doc__)
    assert pages and all((REPO / p).is_file() for p in pages), module.__doc__
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    assert f"python -m benchmarks.{name}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        module.main(["--no-such-option"])
    assert exit_.value.code == 2
