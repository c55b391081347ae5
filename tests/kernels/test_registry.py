"""The registry and conf/kernel/ agree: every kernel has its grid file, every grid file names a kernel, and every
grid is valid for its kernel (keys, implementations, dtypes, shapes)."""
from __future__ import annotations

import pytest
import yaml

from kernels import registry
from tests.support.kernel_tests import CONF_DIR

# LTX-Video's real shapes: 25x480x704 with guidance, and 121 frames.
LTX_SHAPES = ([2, 1320, 2048], [2, 6336, 2048])
LTX_KERNELS = ("rmsnorm", "adaln", "rope", "qk_norm_rope", "add_rms_norm_modulate")
NAMES = registry.kernel_names()
BUILTIN = [n for n in NAMES if (CONF_DIR / f"{n}.yaml").exists() or not n.startswith(("fault_", "noop"))]


def test_every_conf_file_names_a_registered_kernel():
    files = sorted(p.stem for p in CONF_DIR.glob("*.yaml"))
    assert files and all(yaml.safe_load((CONF_DIR / f"{f}.yaml").read_text())["name"] == f for f in files)
    assert set(files) <= set(NAMES)
    assert set(BUILTIN) <= set(files), "a registered kernel without conf/kernel/<name>.yaml"


@pytest.mark.parametrize("name", BUILTIN)
def test_conf_grid_is_valid_for_its_kernel(name):
    entry = registry.get(name)
    conf = yaml.safe_load((CONF_DIR / f"{name}.yaml").read_text())
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
