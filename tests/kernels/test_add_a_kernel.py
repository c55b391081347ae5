"""The README's "Add a kernel" recipe, followed: one kernel module, its declaration and its entry module, no conf file.

The three files are written to temporary folders added to the ``kernels``, ``kernels.metadata`` and
``kernels.entries`` packages, as if they were ``kernels/twice.py``, ``kernels/metadata/twice.py`` and
``kernels/entries/twice.py``; the registry, ``kernels``' public functions, the injection's
list of kernels no rule uses, ``python -m orchestrator --help``, the ``kernels`` sweep's plan and
``+kernel@kernels.NAME=NAME`` all pick the kernel up, and it keeps the contract every kernel is tested for
(tests/support/contract.py).  A ``conf/kernel/<name>.yaml`` then overrides the grid its entry declares.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap

import pytest
import torch

import kernels
import kernels.entries
from kernels import metadata, registry
from kernels.inject import rules
from orchestrator.__main__ import main
from orchestrator.config import compose as config
from tests.support import contract
from tests.support.kernel_tests import CONF_DIR

KERNEL_MODULE = """
import torch
import triton
import triton.language as tl

from kernels.checks import check_device, check_float, check_out
from kernels.launch import PublicKernel, cdiv, launcher


@triton.jit
def _twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * 2).to(out_ptr.dtype.element_ty), mask=mask)


def _check(x):
    check_float("x", x)
    check_device("x", x)


def _launch(outs: tuple[torch.Tensor], x: torch.Tensor, *, traced: bool, config=None) -> None:
    x = x.contiguous()
    n = x.numel()
    launcher(_twice_kernel, traced)[(cdiv(n, 1024),)](x, outs[0], n, BLOCK=1024)


_TWICE = PublicKernel(
    "twice",
    check=_check,
    new_outs=lambda x: (torch.empty(x.shape, dtype=x.dtype, device=x.device),),
    launch=_launch,
    check_out=lambda outs, x: check_out(outs[0], x.shape, x.dtype, x.device),
)


def twice(x: torch.Tensor) -> torch.Tensor:
    return _TWICE(x)


def twice_into(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return _TWICE.into(out, (x,))
"""

METADATA_MODULE = """
from kernels.metadata import STANDARD_IMPLS, Grid, KernelMeta

TWICE = KernelMeta(
    name="twice",
    public_name="twice",
    impls=STANDARD_IMPLS,
    tolerances={"fp32": (1e-6, 1e-6), "bf16": (1e-2, 1e-2), "fp16": (1e-3, 1e-3)},
    grid=Grid(shapes=((4, 1000), (2, 64, 256)), dtypes=("bf16", "fp32"), impls=("triton", "eager")),
)

KERNELS = [TWICE]
"""

ENTRY_MODULE = """
import torch

from kernels.entries.common import numel, randn, standard_impls
from kernels.metadata.twice import TWICE
from kernels.registry import Contract, KernelEntry
from kernels.twice import twice, twice_into


def triton_twice(x, out=None):
    return twice(x) if out is None else twice_into(out, x)


def eager_twice(x):
    return x * 2


def check_shape(shape):
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"twice expects a shape of positive sizes; got {list(shape)}")


ENTRIES = [
    KernelEntry(
        **TWICE.entry_fields(),
        description="x * 2",
        check_shape=check_shape,
        make_inputs=lambda shape, dtype, device, gen: {"x": randn(shape, dtype, device, gen)},
        reference=lambda inputs: inputs["x"].double() * 2,
        alloc_out=lambda inputs: torch.empty_like(inputs["x"]),
        impls=standard_impls(triton_twice, "Triton", eager_twice, "x * 2"),
        bytes_moved=lambda shape, dtype: 2 * numel(shape) * dtype.itemsize,
        flops=numel,
        function=twice,
        contract=Contract(small_shape=(4, 100)),
    )
]
"""


@pytest.fixture
def twice_kernel(tmp_path, monkeypatch):
    """kernels/twice.py, kernels/metadata/twice.py and kernels/entries/twice.py, in temporary folders the three
    packages search too."""
    for folder, text in (("kernels", KERNEL_MODULE), ("metadata", METADATA_MODULE), ("entries", ENTRY_MODULE)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "twice.py").write_text(textwrap.dedent(text))
    monkeypatch.setattr(kernels, "__path__", [*kernels.__path__, str(tmp_path / "kernels")])
    monkeypatch.setattr(metadata, "__path__", [*metadata.__path__, str(tmp_path / "metadata")])
    monkeypatch.setattr(kernels.entries, "__path__", [*kernels.entries.__path__, str(tmp_path / "entries")])
    monkeypatch.setattr(registry, "_BUILTIN", None)  # found again, with the new entry
    monkeypatch.setattr(registry, "_REGISTRY", None)
    yield tmp_path
    # kernels.twice stays imported: its op kernelfleet::twice is registered once per process
    sys.modules.pop("kernels.entries.twice", None)
    sys.modules.pop("kernels.metadata.twice", None)


def test_a_kernel_its_declaration_and_its_entry_are_all_it_takes(twice_kernel, tmp_path, capsys, device):
    assert not (CONF_DIR / "twice.yaml").exists()
    assert "kernels.entries.twice" in registry.entry_modules()
    assert "twice" in registry.builtin() and "twice" in registry.kernel_names()
    assert "kernels.metadata.twice" in metadata.family_modules() and "twice" in metadata.kernel_names()
    assert "twice" in registry.public_functions()  # kernels.__all__
    # no injection rule uses it: not injectable, and said so
    assert rules.not_injectable()["twice"] == "no injection rule uses it (kernels/inject/rules.py)"
    entry = registry.get("twice")
    inputs = entry.make_inputs((4, 1000), torch.float32, device, torch.Generator().manual_seed(0))
    assert torch.equal(entry.impls["triton"].make()(**inputs), entry.reference(inputs).float())
    assert config.kernel_grid("twice") == {
        "name": "twice",
        "shapes": [[4, 1000], [2, 64, 256]],
        "dtypes": ["bf16", "fp32"],
        "impls": ["triton", "eager"],
    }

    assert main(["--help"]) == 0
    kernels_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("kernels:"))
    assert "twice" in kernels_line.split(": ", 1)[1].split(", ")

    plan = tmp_path / "plan.jsonl"
    assert main(["+sweep=kernels", "dry_run=true", f"plan_out={plan}"]) == 0
    jobs = [json.loads(line) for line in plan.read_text().splitlines()[1:]]
    twice_jobs = {(j["kind"], tuple(j["shape"]), j["dtype"]) for j in jobs if j["kernel"] == "twice"}
    assert twice_jobs == {
        (kind, shape, dtype)
        for kind in ("correctness", "micro")
        for shape in ((4, 1000), (2, 64, 256))
        for dtype in ("bf16", "fp32")
    }
    assert {"rmsnorm", "rope", "geglu"} <= {j["kernel"] for j in jobs}  # the other kernels as before

    smoke = config.to_plain(config.compose(["+sweep=smoke", "+kernel@kernels.twice=twice"]))
    assert smoke["kernels"]["twice"]["shapes"] == [[4, 1000], [2, 64, 256]]


def test_the_new_kernel_keeps_the_contract_of_every_kernel(twice_kernel, monkeypatch):
    """What tests/kernels/test_contract.py checks of every kernel of the registry holds for the new one, made of
    the recipe's parts: bad input, ``_into``, launch plans, the op under tracing, backward."""
    contract.check_all(registry.get("twice"), monkeypatch)


def test_a_conf_file_overrides_the_grid_of_the_entry(twice_kernel, tmp_path, monkeypatch):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR.parent, conf)
    (conf / "kernel").mkdir(exist_ok=True)
    (conf / "kernel" / "twice.yaml").write_text("name: twice\nshapes: [[8, 8]]\ndtypes: [fp32]\nimpls: [eager]\n")
    monkeypatch.setenv("KERNELFLEET_CONF", str(conf))
    assert config.kernel_grid("twice")["shapes"] == [[8, 8]]
    cfg = config.to_plain(config.compose(["+sweep=kernels", "sweep.kernels=[twice]"]))
    assert cfg["kernels"]["twice"] == {"name": "twice", "shapes": [[8, 8]], "dtypes": ["fp32"], "impls": ["eager"]}
