"""The registry and the grids agree: every kernel has a default grid (its entry's, or conf/kernel/<name>.yaml), every
grid file names a kernel, and every grid is valid for its kernel (keys, implementations, dtypes, shapes)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from kernels import registry
from orchestrator.config import kernel_grid
from tests.support.kernel_tests import CONF_DIR

ROOT = CONF_DIR.parents[1]

# LTX-Video's real shapes: 25x480x704 with guidance, and 121 frames.
LTX_SHAPES = ([2, 1320, 2048], [2, 6336, 2048])
LTX_KERNELS = ("rmsnorm", "adaln", "rope", "qk_norm_rope", "add_rms_norm_modulate")
BUILTIN = sorted(registry.builtin())


def test_every_conf_file_names_a_registered_kernel_and_every_kernel_has_a_grid():
    files = sorted(p.stem for p in CONF_DIR.glob("*.yaml"))
    assert files and all(yaml.safe_load((CONF_DIR / f"{f}.yaml").read_text())["name"] == f for f in files)
    assert set(files) <= set(BUILTIN)
    assert not [n for n in BUILTIN if kernel_grid(n) is None], "a registered kernel without a grid"


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
    files = sorted(p.stem for p in (ROOT / "kernels" / "entries").glob("*.py") if p.stem not in ("__init__", "common"))
    assert modules == [f"kernels.entries.{f}" for f in files]


def test_kernels_all_and_the_injection_list_come_from_the_entries():
    import kernels
    from kernels import inject

    functions = {e.function.__name__: e.function for e in registry.builtin().values()}
    assert sorted(kernels.__all__) == sorted(functions) and len(functions) == len(registry.builtin())
    assert all(getattr(kernels, name) is fn for name, fn in functions.items())
    assert set(inject.KERNEL_NAMES) | set(inject.NOT_INJECTABLE) == set(functions)
    assert not set(inject.KERNEL_NAMES) & set(inject.NOT_INJECTABLE)
    assert {"rms_norm", "qk_norm_rope"} <= set(inject.KERNEL_NAMES) and "geglu" in inject.NOT_INJECTABLE


def test_conf_grids_and_registered_kernels_must_match(tmp_path, monkeypatch):
    from orchestrator.config import ConfigError
    from orchestrator.validate import check_kernel_grids

    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR.parent, conf)
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
    (conf / "kernel" / "gated_residual.yaml").unlink()  # and its entry declares no grid
    with pytest.raises(
        ConfigError,
        match=r"kernel 'gated_residual' \(kernels/entries/\) has no grid: declare grid=Grid\(shapes=...\) in its "
        r"entry, or add .*gated_residual.yaml",
    ):
        check_kernel_grids()
