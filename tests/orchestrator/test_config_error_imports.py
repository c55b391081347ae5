"""A configuration's mistake is found before torch, Ray, the kernels' modules or the store are imported: the
sweep's config is composed and checked first (its typo's one-line error took 7-13 s of imports on a small machine).
The kernels' default grids Hydra offers come from their declarations (kernels/metadata/), which are the
registry's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kernels import registry
from orchestrator.config import compose as config
from tests.support.fresh_process import ROOT, kernel_modules

HEAVY = {"ray", "sqlalchemy", "orchestrator.run.sweep", "orchestrator.store.session"}


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["+sweep=rmsnrm"], "sweep=rmsnrm: no such sweep"),
        (["+sweep=rmsnorm", "sweep.shapez=[[1,2]]"], "sweep.shapez: no such key"),
        (["sweep=rmsnorm"], "write +sweep=rmsnorm"),
    ],
)
def test_a_config_typo_fails_before_torch_ray_or_the_store_is_imported(overrides, needle):
    code = (
        "import json, sys\n"
        "from orchestrator.__main__ import main\n"
        "rc = main(sys.argv[1:])\n"
        "print(json.dumps([rc, sorted(sys.modules)]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KERNELFLEET_PLUGINS"}  # test plugins are code: torch
    p = subprocess.run(
        [sys.executable, "-c", code, *overrides], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    rc, names = json.loads(p.stdout)
    modules = set(names)
    assert rc == 2 and p.stderr.startswith("config error: ") and needle in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert kernel_modules(modules) == []  # neither torch, Triton nor a kernel's module
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_the_declared_grids_are_the_registrys():
    assert config.declared_grids() == {name: registry.get(name).default_grid() for name in registry.kernel_names()}
