"""`python -m orchestrator --help` lists the sweeps, targets and kernels without importing torch, Triton or Hydra
(the imports took most of its 8-22 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kernels import registry
from orchestrator.__main__ import kernel_names
from orchestrator.config import conf_files

REPO = Path(__file__).resolve().parents[2]


def test_help_imports_neither_torch_nor_hydra_and_lists_everything():
    code = (
        "import sys; from orchestrator.__main__ import main; main(['--help']); "
        "heavy = ('torch', 'triton', 'hydra', 'omegaconf', 'ray', 'rich'); "
        "print('HEAVY', sorted(m for m in heavy if m in sys.modules))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout, p.stdout[-500:]
    assert f"sweeps: {', '.join(conf_files('sweep'))}" in p.stdout
    assert f"targets: {', '.join(conf_files('target'))}" in p.stdout
    assert f"kernels: {', '.join(sorted(registry.builtin()))}" in p.stdout


def test_kernel_names_read_from_the_entries_are_the_registrys():
    assert kernel_names() == sorted(registry.builtin())
