"""The README's "Add a kernel" recipe, verbatim: its three files, cut from the README, written as
``kernels/hadamard.py``, ``kernels/metadata/hadamard.py`` and ``kernels/entries/hadamard.py`` (in temporary folders
the packages search too), pass on the first try what a new kernel is checked for: the contract of every kernel, the
correctness job in bf16 under Triton's interpreter (its stores rounded as a GPU rounds) and the 128-bit loads and
stores of tests/workers/test_isa.py on gfx950, on its grid's shapes and its contract's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import kernels
import kernels.entries
from kernels import metadata, registry
from tests.support import contract
from tests.support.devices import interpreter_only
from workers.jobs import correctness
from workers.spec import STATUS_OK, JobSpec

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


# the recipe's files by the folder the fixture writes each to
RECIPE = {
    "kernels": "kernels/hadamard.py",
    "metadata": "kernels/metadata/hadamard.py",
    "entries": "kernels/entries/hadamard.py",
}


def recipe_files() -> dict[str, str]:
    """The README's python blocks that start with a ``# kernels/...py`` line: path -> source."""
    blocks = re.findall(r"```python\n(# (kernels/[\w/]+\.py)\n.*?)```", README.read_text(), re.S)
    return {path: source for source, path in blocks}


@pytest.fixture
def hadamard(tmp_path, monkeypatch):
    files = recipe_files()
    assert set(files) == set(RECIPE.values()), "the README's recipe has three files"
    for folder, path in RECIPE.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "hadamard.py").write_text(files[path])
    monkeypatch.setattr(kernels, "__path__", [*kernels.__path__, str(tmp_path / "kernels")])
    monkeypatch.setattr(metadata, "__path__", [*metadata.__path__, str(tmp_path / "metadata")])
    monkeypatch.setattr(kernels.entries, "__path__", [*kernels.entries.__path__, str(tmp_path / "entries")])
    monkeypatch.setattr(registry, "_BUILTIN", None)
    monkeypatch.setattr(registry, "_REGISTRY", None)
    yield registry.get("hadamard")
    # kernels.hadamard stays: its op is registered once a process
    sys.modules.pop("kernels.entries.hadamard", None)
    sys.modules.pop("kernels.metadata.hadamard", None)


def test_the_recipe_keeps_the_contract(hadamard, monkeypatch):
    contract.check_all(hadamard, monkeypatch)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_the_recipe_is_correct_on_the_test_device(hadamard, dtype, device):
    """Correct on every input case: under the interpreter on a CPU (which truncates a plain cast), compiled on a
    GPU."""
    spec = JobSpec(kind="correctness", kernel="hadamard", shape=[4, 1000], dtype=dtype, impls=["triton", "eager"])
    spec.params = {"seed": 0}
    result = correctness.run(spec, device)
    assert result.status == STATUS_OK, result.error


ISA_SCRIPT = """
import json, sys
import kernels, kernels.entries, kernels.metadata
kernels.__path__.append(sys.argv[1] + "/kernels")
kernels.metadata.__path__.append(sys.argv[1] + "/metadata")
kernels.entries.__path__.append(sys.argv[1] + "/entries")
from kernels import registry
from workers.jobs import isa
from workers.device.parsers import amdgcn
from workers.spec import JobSpec

registry._BUILTIN = registry._REGISTRY = None  # found again, with the new entry
entry = registry.get("hadamard")
shapes = [[s[0], 48, *s[2:]] if len(s) > 2 else list(s) for s in entry.grid.shapes]
for shape in shapes + [list(s) for s in entry.contract.launch_shapes]:
    spec = JobSpec(kind="isa", kernel="hadamard", shape=shape, dtype="bf16", impls=["triton"])
    spec.params = {"arch": "gfx950", "seed": 0, "timeout_s": 300}
    r = isa.run(spec)
    widths = [amdgcn.memory_width(m) for launch in r.details.get("launches", []) for m in launch["memory_instructions"]]
    print(json.dumps({"shape": shape, "status": r.status, "error": r.error, "widths": widths}))
"""


def test_the_recipe_loads_and_stores_128_bits_on_gfx950(hadamard, tmp_path):
    """As tests/workers/test_isa.py checks every kernel: compiled for gfx950 (no interpreter: a process of its own),
    on its grid with 48 positions and its contract's launch shapes, every load and store 128 bits a lane."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", ISA_SCRIPT, str(tmp_path)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert jobs
    for job in jobs:
        assert job["status"] == STATUS_OK, job
        assert job["widths"] and all(bits == 128 for _, bits in job["widths"]), job


@interpreter_only  # a GPU rounds a plain cast to nearest even: only the interpreter truncates it
def test_a_plain_cast_fails_with_what_to_change(hadamard, monkeypatch):
    """The recipe's own kernel with .to() instead of round_to: the interpreter's truncation fails bf16, and the
    correctness job's message says what to change."""
    source = recipe_files()["kernels/hadamard.py"].replace(
        "round_to(x * y, out_ptr.dtype.element_ty)", "(x * y).to(out_ptr.dtype.element_ty)"
    )
    assert "(x * y).to(" in source
    module = type(sys)("kernels.hadamard_plain_cast")
    exec(
        compile(source.replace('"hadamard"', '"hadamard_plain_cast"'), "hadamard_plain_cast.py", "exec"),
        module.__dict__,
    )
    gen = torch.Generator().manual_seed(0)
    # products in [27.5, 60): a bf16 step there is 0.25, so truncating errs by up to 0.25 (over the 0.125 allowed)
    # and rounding to nearest by 0.125 at most
    inputs = {
        "x": (5.5 + 2.0 * torch.rand((64, 256), generator=gen)).to(torch.bfloat16),
        "y": (5.0 + 3.0 * torch.rand((64, 256), generator=gen)).to(torch.bfloat16),
    }
    impl = hadamard.impls["triton"]
    chk = correctness.check_impl(
        hadamard,
        impl,
        lambda x, y, out=None: module.hadamard(x, y),
        inputs,
        hadamard.reference(inputs),
        "bf16",
        torch.device("cpu"),
    )
    assert not chk.ok and "kernels.rounding.round_to" in chk.note
    good = correctness.check_impl(
        hadamard, impl, impl.make(), inputs, hadamard.reference(inputs), "bf16", torch.device("cpu")
    )
    assert good.ok, good.note
