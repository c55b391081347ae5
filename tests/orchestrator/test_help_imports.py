"""`python -m orchestrator --help` lists the sweeps, targets and kernels without importing torch, Triton, Hydra or a
kernel's module (the imports took most of its 8-22 s): the kernels' names come from their declarations
(kernels/metadata/)."""

from __future__ import annotations

from kernels import metadata, registry
from orchestrator.config.compose import conf_files
from tests.support.fresh_process import kernel_modules, modules_after


def test_help_imports_neither_torch_nor_a_kernel_module_and_lists_everything():
    out, modules = modules_after("from orchestrator.__main__ import main; main(['--help'])")
    assert not modules & {"hydra", "omegaconf", "ray", "rich"}
    assert kernel_modules(modules) == []  # neither torch, Triton nor a kernel's module
    assert f"sweeps: {', '.join(conf_files('sweep'))}" in out
    assert f"targets: {', '.join(conf_files('target'))}" in out
    assert f"kernels: {', '.join(sorted(registry.builtin()))}" in out


def test_the_declared_kernels_are_the_registrys():
    assert metadata.kernel_names() == sorted(registry.builtin())
    assert {m.public_name for m in metadata.declared().values()} == set(registry.public_functions())


def test_help_into_a_reader_that_stops_early_ends_quietly():
    """``python -m orchestrator --help | head -1``: the reader closes the pipe after its first line; the command ends
    with exit 0 and no traceback, as export does."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.readline()
    proc.stdout.close()  # before the rest is written: the writes that follow find no reader
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
