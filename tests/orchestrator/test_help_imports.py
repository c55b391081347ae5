"""`python -m orchestrator --help` lists the sweeps, targets and kernels without importing torch, Triton, Hydra or a
kernel's module (the imports took most of its 8-22 s): the kernels' names come from their declarations
(kernels/metadata/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kernels import metadata, registry
from orchestrator.config import conf_files

REPO = Path(__file__).resolve().parents[2]


def test_help_imports_neither_torch_nor_a_kernel_module_and_lists_everything():
    code = (
        "import sys; from orchestrator.__main__ import main; main(['--help']); "
        "heavy = ('torch', 'triton', 'hydra', 'omegaconf', 'ray', 'rich'); "
        "print('HEAVY', sorted(m for m in heavy if m in sys.modules)); "
        "print('KERNEL_MODULES', sorted(m for m in sys.modules if m.startswith('kernels.') "
        "and not m.startswith('kernels.metadata')))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout, p.stdout[-500:]
    assert "KERNEL_MODULES []" in p.stdout, p.stdout[-500:]
    assert f"sweeps: {', '.join(conf_files('sweep'))}" in p.stdout
    assert f"targets: {', '.join(conf_files('target'))}" in p.stdout
    assert f"kernels: {', '.join(sorted(registry.builtin()))}" in p.stdout


def test_the_declared_kernels_are_the_registrys():
    assert metadata.kernel_names() == sorted(registry.builtin())
    assert {m.public_name for m in metadata.declared().values()} == set(registry.public_functions())
