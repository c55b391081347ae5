"""The developer guide's recipe for a job kind, checked for every kind there is: its module in
workers/spec.JOB_MODULES with ``run(spec, device)``, its job code holding that module (so its key follows its code),
the validator taking it, its metrics catalogued, and its name in docs/json.md and the developer guide."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from orchestrator import plan, validate
from workers import metrics
from workers.job_code import SourceTree
from workers.spec import COMPILE_ONLY_KINDS, JOB_KINDS, JOB_MODULES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_every_job_kind_follows_the_recipe(kind):
    module = importlib.import_module(JOB_MODULES[kind])
    assert list(inspect.signature(module.run).parameters) == ["spec", "device"]
    kernel = "rmsnorm" if kind in plan.KERNEL_KINDS else None
    assert JOB_MODULES[kind] in SourceTree(ROOT).job_modules(kind, kernel)
    assert any(kind in m.kinds for m in metrics.CATALOGUE.values())
    assert f"`{kind}`" in (ROOT / "docs" / "json.md").read_text()
    assert f"`workers/{kind}.py`" in (ROOT / "docs" / "developer-guide.md").read_text()


def test_the_kind_lists_agree():
    assert set(plan.KERNEL_KINDS) == set(validate.KERNEL_KINDS) and set(plan.KERNEL_KINDS) | {"e2e"} == set(JOB_KINDS)
    assert set(COMPILE_ONLY_KINDS) <= set(plan.KERNEL_KINDS)
