"""The developer guide's recipe for a job kind, checked for every kind there is: its declaration in workers/kinds/
naming a module with ``run(spec, device)``, its job code holding that module (so its key follows its code), the
validator taking it, its metrics catalogued, its planner and validator importable, and its name in docs/json.md and
the developer guide."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.config import compose as config
from orchestrator.config import validate
from workers import kinds, metrics
from workers.runtime.job_code import SourceTree

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", kinds.names())
def test_every_job_kind_follows_the_recipe(name):
    kind = kinds.kind_of(name)
    assert f"workers.kinds.{name}" in kinds.kind_modules()
    module = importlib.import_module(kind.module)
    assert list(inspect.signature(module.run).parameters) == ["spec", "device"]
    kernel = "rmsnorm" if kind.per_kernel else None
    assert kind.module in SourceTree(ROOT).job_modules(name, kernel)
    assert any(name in m.kinds for m in metrics.CATALOGUE.values())
    for ref in (kind.planner, kind.validator):
        assert ref is None or callable(kinds.resolve(ref)), ref
    assert set(kind.params) <= set(config.compose(["+sweep=smoke"])["sweep"]), kind.params
    assert f"`{name}`" in (ROOT / "docs" / "json.md").read_text()
    assert f"`{kind.module.replace('.', '/')}.py`" in (ROOT / "docs" / "developer-guide.md").read_text()


def test_the_validator_takes_every_kind_and_refuses_others():
    cfg = config.to_plain(config.compose(["+sweep=smoke", "sweep.kinds=[nope]"]))
    with pytest.raises(config.ConfigError, match="unknown job kind 'nope'; allowed: " + ", ".join(kinds.names())):
        validate.validate(cfg)


def test_each_metric_is_read_from_one_kind():
    for m in metrics.CATALOGUE.values():
        owners = [k.name for k in kinds.declared().values() if m.name in k.metrics]
        assert owners == [m.kind], m.name
    assert metrics.get("correct").kinds[0] == "correctness" and "micro" in metrics.get("correct").kinds


def test_a_kind_that_compiles_only_needs_no_gpu():
    with pytest.raises(ValueError, match="needs no GPU"):
        kinds.JobKind("x", "workers.x", "", compile_only=True)
    assert set(kinds.compile_only()) <= set(kinds.per_kernel())
    assert all(not kinds.kind_of(k).needs_gpu for k in kinds.compile_only())


def test_the_declarations_load_without_torch():
    code = "import sys; from workers import kinds; kinds.declared(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", out.stderr
