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
