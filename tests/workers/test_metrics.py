"""The metric catalogue (workers/metrics.py): every metric the jobs emit is in it, and no other name gets through."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from workers import kinds, metrics
from workers.jobs.e2e.job import compare
from workers.spec import JobResult, Measurement

ROOT = Path(__file__).resolve().parents[2]


def _emitted_names() -> dict[str, str]:
    """metric name -> where, for every ``Measurement(impl, "name", ...)`` written with a literal name in the code."""
    found = {}
    for folder in ("workers", "kernels", "orchestrator"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) == "Measurement"
                    and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                ):
                    found[node.args[1].value] = f"{path.relative_to(ROOT)}:{node.lineno}"
    return found


def test_every_emitted_metric_is_catalogued():
    emitted = _emitted_names()
    assert {"time_us", "kernel_gbs", "kernels_per_step", "speedup_vs_eager", "kernels_per_call"} <= set(emitted)
    assert {name: at for name, at in emitted.items() if name not in metrics.CATALOGUE} == {}


def test_the_e2e_comparison_metrics_are_catalogued():
    out = torch.tensor([1.0, 2.0, 3.0])
    keys = set(compare(out, out + 0.1, torch.zeros(3))) - {"finite"}
    assert keys == {"max_abs_vs_eager", "cos_sim_vs_eager", "rel_l2_vs_eager", "rel_err_vs_eager"}
    assert keys <= set(metrics.CATALOGUE)


def test_an_unknown_metric_is_an_error_where_it_is_made_and_where_it_is_read():
    with pytest.raises(ValueError, match="unknown metric 'time_ms'; known metrics: time_us"):
        Measurement("triton", "time_ms", 1.0, "ms")
    result = JobResult("k", "ok", [Measurement("triton", "time_us", 1.0, "us")]).to_dict()
    result["measurements"][0]["metric"] = "nosuch"
    with pytest.raises(ValueError, match="unknown metric 'nosuch'"):
        JobResult.from_dict(result)
    with pytest.raises(metrics.UnknownMetricError):
        metrics.get("nosuch")


def test_units_come_from_the_catalogue():
    assert Measurement("e2e", "kernels_per_step", 312.0).unit == "kernels"
    assert Measurement("triton", "rel_err", 1e-4).unit == ""
    with pytest.raises(ValueError, match="'time_us' is measured in 'us', not 'ms'"):
        Measurement("triton", "time_us", 1.0, "ms")


def test_directions():
    better_higher = {m.name for m in metrics.CATALOGUE.values() if m.higher_is_better}
    assert {"gbs", "kernel_gbs", "speedup", "speedup_vs_eager", "cos_sim_vs_eager", "correct"} <= better_higher
    assert not better_higher & {"time_us", "kernel_time_us", "ms_per_step", "rel_err", "rel_err_vs_eager"}


def test_each_metric_belongs_to_job_kinds():
    for m in metrics.CATALOGUE.values():
        assert m.kinds and set(m.kinds) <= set(kinds.names()), m  # exactly one kind reads it: its .kind
        assert m.description, m
    assert metrics.of_kind("e2e")[:1] == ("ms_per_step",)
    assert {"rel_err_vs_eager", "kernels_per_step", "speedup_vs_eager"} <= set(metrics.of_kind("e2e"))
    assert metrics.get("correct").kind == "correctness"
