"""The registry and the grids agree: every kernel has a default grid (its entry's, unless a conf/kernel/<name>.yaml
overrides it), every grid file names a kernel, and every grid is valid for its kernel (keys, implementations, dtypes,
shapes)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from kernels import registry
from orchestrator.config.compose import kernel_grid
from tests.support.kernel_tests import CONF_DIR

ROOT = CONF_DIR.parents[1]

# LTX-Video's real shapes: 25x480x704 with guidance, and 121 frames.
LTX_SHAPES = ([2, 1320, 2048], [2, 6336, 2048])
LTX_KERNELS = ("rmsnorm", "adaln", "rope", "qk_norm_rope", "add_rms_norm_modulate")
BUILTIN = sorted(registry.builtin())


def test_every_conf_file_names_a_registered_kernel_and_every_kernel_has_a_grid():
    files = sorted(p.stem for p in CONF_DIR.glob("*.yaml"))
    assert all(yaml.safe_load((CONF_DIR / f"{f}.yaml").read_text())["name"] == f for f in files)
    assert set(files) <= set(BUILTIN)
    assert not [n for n in BUILTIN if kernel_grid(n) is None], "a registered kernel without a grid"


def test_no_conf_file_repeats_its_entrys_grid():
    """A file of conf/kernel/ is there to override its kernel's grid: one equal to the entry's is to be removed."""
    for path in CONF_DIR.glob("*.yaml"):
        assert kernel_grid(path.stem) != registry.get(path.stem).default_grid(), f"{path} repeats its entry's grid"


@pytest.mark.parametrize("name", BUILTIN)
def test_the_default_grid_is_valid_for_its_kernel(name):
    entry = registry.get(name)
    conf = kernel_grid(name)
    assert set(conf) == {"name", "shapes", "dtypes", "impls"} and conf["name"] == name
    assert conf["impls"] and set(conf["impls"]) <= set(entry.impls)
    assert conf["dtypes"] and set(conf["dtypes"]) <= set(entry.dtypes)
    assert conf["shapes"]
    for shape in conf["shapes"]:
        entry.check_shape(shape)
    if name in LTX_KERNELS:
        assert all(s in conf["shapes"] for s in LTX_SHAPES), f"{name}'s grid lacks LTX-Video's shapes"
    assert set(entry.default_impls) <= set(entry.impls)
    assert entry.baseline in entry.impls


def test_the_registry_finds_every_entry_module():
    modules = registry.entry_modules()
    files = sorted(
        p.stem for p in (ROOT / "kernels" / "entries").glob("*.py") if p.stem not in ("__init__", "common", "ltx_rope")
    )
    assert modules == [f"kernels.entries.{f}" for f in files]


def test_kernels_all_and_the_injection_list_come_from_the_entries():
    import kernels
    from kernels import inject

    functions = {e.function.__name__: e.function for e in registry.builtin().values()}
    assert sorted(kernels.__all__) == sorted(functions) and len(functions) == len(registry.builtin())
    assert all(getattr(kernels, name) is fn for name, fn in functions.items())
    assert set(inject.KERNEL_NAMES) | set(inject.NOT_INJECTABLE) == set(registry.builtin())  # by kernel name
    assert not set(inject.KERNEL_NAMES) & set(inject.NOT_INJECTABLE)
    assert {"rmsnorm", "qk_norm_rope"} <= set(inject.KERNEL_NAMES) and "geglu" in inject.NOT_INJECTABLE


def test_one_name_per_kernel_but_for_the_public_apis_table():
    """A kernel's public function (and its op) is named as the kernel, but for the few kernels.registry.PUBLIC_NAMES
    lists; either name gives the kernel's."""
    for name, entry in registry.builtin().items():
        assert entry.function.__name__ == registry.PUBLIC_NAMES.get(name, name)
        assert registry.kernel_name(entry.function.__name__) == name and registry.kernel_name(name) == name
    assert set(registry.PUBLIC_NAMES) <= set(registry.builtin())


def test_a_public_function_named_otherwise_is_refused(monkeypatch):
    import dataclasses
    import types

    # rmsnorm's entry naming gated_residual's function: not the public name kernels/metadata/rmsnorm.py declares
    entry = dataclasses.replace(registry.builtin()["rmsnorm"], function=registry.builtin()["gated_residual"].function)
    monkeypatch.setitem(__import__("sys").modules, "kernels.entries.misnamed", types.SimpleNamespace(ENTRIES=[entry]))
    with pytest.raises(ValueError, match="its public_name is 'gated_residual', its declaration .* says 'rms_norm'"):
        registry._collect({}, "kernels.entries.misnamed", builtin=True)


def test_conf_grids_and_registered_kernels_must_match(tmp_path, monkeypatch):
    import dataclasses

    from orchestrator.config.compose import ConfigError
    from orchestrator.config.validate import check_kernel_grids

    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR.parent, conf)
    (conf / "kernel").mkdir(exist_ok=True)
    monkeypatch.setenv("KERNELFLEET_CONF", str(conf))
    check_kernel_grids()
    (conf / "kernel" / "nosuch.yaml").write_text("name: nosuch\nshapes: [[1, 8]]\ndtypes: [bf16]\nimpls: [eager]\n")
    with pytest.raises(
        ConfigError,
        match=r"nosuch.yaml: no kernel 'nosuch' is registered \(kernels/entries/\); "
        r"registered kernels: adaln, ",
    ):
        check_kernel_grids()
    (conf / "kernel" / "nosuch.yaml").unlink()
    builtin = dict(registry.builtin())
    builtin["gated_residual"] = dataclasses.replace(builtin["gated_residual"], grid=None)  # an entry without a grid
    monkeypatch.setattr(registry, "_BUILTIN", builtin)
    monkeypatch.setattr(registry, "_REGISTRY", None)
    with pytest.raises(
        ConfigError,
        match=r"kernel 'gated_residual' \(kernels/entries/\) has no grid: declare grid=Grid\(shapes=...\) in its "
        r"entry, or add .*gated_residual.yaml",
    ):
        check_kernel_grids()
    (conf / "kernel" / "gated_residual.yaml").write_text(
        "name: gated_residual\nshapes: [[1, 8, 64]]\ndtypes: [bf16]\nimpls: [eager]\n"
    )
    check_kernel_grids()  # its file gives the grid
