"""The imported Triton's distribution and version (kernels.triton_dist), which job keys and device records hold,
checked on fake site directories: a ``triton`` package provided by ``pytorch-triton-rocm`` (ROCm's PyTorch), by
upstream ``triton``, and by no distribution at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# kernels/__init__.py imports every kernel (triton.language, which the fake package lacks): the probe loads
# kernels/triton_dist.py under its name with a bare ``kernels`` package above it, as the workers' modules import it.
PROBE = """
import importlib.util, json, sys, types
pkg = types.ModuleType("kernels"); pkg.__path__ = []; sys.modules["kernels"] = pkg
spec = importlib.util.spec_from_file_location("kernels.triton_dist", "kernels/triton_dist.py")
mod = sys.modules["kernels.triton_dist"] = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from kernels.triton_dist import triton_distribution
from workers.device.detect import triton_version
from workers.runtime.keys import software_versions
d = triton_distribution()
print(json.dumps({"name": d.name, "version": d.version, "device": triton_version(),
                  "key": software_versions()["triton"]}))
"""


def _site(tmp_path: Path, module_version: str, dist: tuple[str, str] | None, top_level: bool) -> Path:
    """A site directory with a ``triton`` package reporting ``module_version`` and, unless ``dist`` is None, the
    ``.dist-info`` of distribution ``dist`` = (name, version) that installed it (naming its package in
    ``top_level.txt``, or only in ``RECORD`` as wheels built without setuptools do)."""
    site = tmp_path / "site"
    (site / "triton").mkdir(parents=True)
    (site / "triton" / "__init__.py").write_text(f"__version__ = {module_version!r}\n")
    if dist is not None:
        name, version = dist
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "RECORD").write_text(f"triton/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
        if top_level:
            (info / "top_level.txt").write_text("triton\n")
    return site


def _probe(site: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("top_level", [True, False])
def test_rocms_triton_is_named_and_versioned(tmp_path, top_level):
    site = _site(tmp_path, "3.5.1", ("pytorch-triton-rocm", "3.5.1+gitb8ca2c5e"), top_level)
    got = _probe(site)
    assert got == {
        "name": "pytorch-triton-rocm",
        "version": "3.5.1",
        "device": "pytorch-triton-rocm 3.5.1",
        "key": "pytorch-triton-rocm 3.5.1",
    }


def test_upstream_triton_keeps_the_bare_version(tmp_path):
    """Keys made before the distribution was looked up held the bare version of ``triton``: they still do."""
    got = _probe(_site(tmp_path, "3.7.1", ("triton", "3.7.1"), True))
    assert got == {"name": "triton", "version": "3.7.1", "device": "3.7.1", "key": "3.7.1"}


def test_a_package_no_distribution_installed_is_unknown(tmp_path):
    """A source tree on PYTHONPATH without its metadata is not taken for the Triton installed in the venv."""
    got = _probe(_site(tmp_path, "3.8.0", None, False))
    assert got["name"] == "unknown" and got["version"] == "3.8.0" and got["key"] == "unknown 3.8.0"


def test_this_environments_triton():
    import triton

    from kernels.triton_dist import triton_distribution

    d = triton_distribution()
    assert (d.name, d.version) == ("triton", triton.__version__)
    assert str(d) == f"triton {triton.__version__}"
