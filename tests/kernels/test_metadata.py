"""The kernels' declarations (kernels/metadata/): read without torch, the same as the registry's entries, and each
kernel's job code its own.

A kernel's jobs are keyed by the code they can run (workers/runtime/job_code.py): an entry that imported another
kernel's entry or module would re-key, and re-run on the fleet, that other kernel's jobs whenever this one changed.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from kernels import metadata, registry
from tests.support.fresh_process import kernel_modules, modules_after
from workers import kinds
from workers.runtime.job_code import SourceTree

ROOT = Path(__file__).resolve().parents[2]
KERNEL_KINDS = sorted(kinds.per_kernel())  # the kinds that run one kernel


def test_the_declarations_load_without_torch_or_a_kernel_module():
    out, modules = modules_after("from kernels import metadata; print('KERNELS', len(metadata.declared()))")
    assert f"KERNELS {len(registry.builtin())}" in out
    assert kernel_modules(modules) == []


@pytest.mark.parametrize("name", sorted(registry.builtin()))
def test_each_entry_is_what_its_declaration_says(name):
    entry, declared = registry.get(name), metadata.declared()[name]
    assert entry.function.__name__ == declared.public_name
    assert tuple(entry.impls) == declared.impls and declared.baseline in declared.impls
    assert (entry.tolerances, entry.grid, entry.baseline, entry.dtypes) == (
        declared.tolerances,
        declared.grid,
        declared.baseline,
        declared.dtypes,
    )
    assert set(declared.tolerances) == set(declared.dtypes)
    assert registry.PUBLIC_NAMES.get(name, name) == declared.public_name


def test_an_entry_that_disagrees_with_its_declaration_is_refused():
    entry = registry.get("rmsnorm")
    wrong = dataclasses.replace(entry, tolerances={**entry.tolerances, "bf16": (1.0, 1.0)})
    with pytest.raises(ValueError, match=r"kernel 'rmsnorm' \(m\): its tolerances is .* kernels\.metadata\.rmsnorm"):
        registry._check_declared(wrong, "m")
    with pytest.raises(ValueError, match="'rmsnorm' .* its impls is"):
        registry._check_declared(dataclasses.replace(entry, impls=dict(list(entry.impls.items())[:2])), "m")
    undeclared = dataclasses.replace(entry, name="not_declared")
    with pytest.raises(ValueError, match="'not_declared' .* is declared nowhere in kernels/metadata/"):
        registry._check_declared(undeclared, "m")


def _kernel_modules() -> dict[str, set[str]]:
    """Each kernel -> the modules that are some kernel's own: its entry module, its declaration's module and the
    module of its public function."""
    return {
        name: {registry.entry_module(name), metadata.family_module(name), entry.function.__module__}
        for name, entry in registry.builtin().items()
    }


@pytest.mark.parametrize("kind", KERNEL_KINDS)
def test_no_kernels_job_code_holds_another_kernels_module(kind):
    tree = SourceTree(ROOT)
    owned = _kernel_modules()
    for name in owned:
        # the kernels declared by the same entry module (adaln and adaln_layer_norm) share their modules
        family = {k for k in owned if registry.entry_module(k) == registry.entry_module(name)}
        others = set().union(*(owned[k] for k in owned if k not in family)) - set().union(*(owned[k] for k in family))
        closure = set(tree.job_modules(kind, name))
        assert registry.entry_module(name) in closure and metadata.family_module(name) in closure
        assert not closure & others, f"{kind} job on {name} runs other kernels' modules: {sorted(closure & others)}"


def test_the_closure_check_sees_an_entry_importing_another(tmp_path):
    """The check above fails on the layout it replaced: an entry importing another kernel's entry."""
    for folder in ("kernels", "workers"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    entry = tmp_path / "kernels" / "entries" / "gated_residual.py"
    entry.write_text("from kernels.entries.adaln import ENTRIES as _ADALN  # noqa\n" + entry.read_text())
    closure = set(SourceTree(tmp_path).job_modules("correctness", "gated_residual"))
    assert {"kernels.entries.adaln", "kernels.adaln", "kernels.metadata.adaln"} <= closure
