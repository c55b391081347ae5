"""The CPU price's calibration is kept per machine and stack for a day, and a kept one prices a sweep without a
calibration child."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from orchestrator.config.compose import ConfigError
from orchestrator.plan import cpu_price
from orchestrator.run import sweep
from workers.spec import JobSpec

FIT = {"per_call_s": 0.001, "per_element_s": 2e-6, "eager_per_element_s": 3e-8, "matmul_flops_per_s": 1e11}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("KERNELFLEET_CPU_CALIBRATION", raising=False)
    return tmp_path / "kernelfleet" / "cpu-calibration.json"


def test_a_kept_calibration_stands_for_a_day_on_its_machine_and_stack(cache, monkeypatch):
    assert cpu_price.kept_fit() is None  # nothing kept yet
    cpu_price.keep_fit(FIT)
    assert cache.exists()
    fit, when = cpu_price.kept_fit()
    assert fit == FIT and when.endswith(" UTC")
    record = json.loads(cache.read_text())
    assert cpu_price.kept_fit(now=record["measured_at"] + cpu_price.KEEP_S + 1) is None  # a day old
    monkeypatch.setenv("KERNELFLEET_CPU_CALIBRATION", "fresh")
    assert cpu_price.kept_fit() is None  # asked to calibrate again
    monkeypatch.delenv("KERNELFLEET_CPU_CALIBRATION")
    cache.write_text(json.dumps({**record, "stack": {**record["stack"], "triton": "0.0.0"}}))
    assert cpu_price.kept_fit() is None  # another Triton
    cache.write_text("{not json")
    assert cpu_price.kept_fit() is None  # unreadable: calibrate again


def test_a_kept_calibration_prices_a_sweep_without_a_child(cache, monkeypatch):
    cpu_price.keep_fit(FIT)
    started = []
    monkeypatch.setattr(cpu_price, "start_calibration", lambda: started.append(1))
    monkeypatch.setattr(cpu_price, "calibrate", lambda *a, **k: pytest.fail("calibrated although one is kept"))
    big = [
        JobSpec(kind="micro", kernel="rmsnorm", shape=[8, 4096, 4096 + i], dtype="bf16", impls=["triton", "eager"])
        for i in range(4)
    ]
    console = Console(record=True, width=400)
    cfg = {"sweep": {"name": "rmsnorm"}, "allow_cpu": False}
    with pytest.raises(ConfigError, match="GPU-sized"):
        sweep._check_cpu_price(cfg, big, "this machine has no GPU", console, None)
    assert "this machine's calibration of" in console.export_text()
    assert not started


def test_an_allowed_cpu_sweeps_eta_weighs_each_job_by_its_price(cache):
    """allow_cpu=true: each job's estimate comes back (adding up to the price printed), and the progress bar's eta
    weighs the jobs left by them: a grid whose small jobs finish first does not promise minutes for hours."""
    from types import SimpleNamespace

    cpu_price.keep_fit(FIT)
    jobs = [
        JobSpec(kind="micro", kernel="rmsnorm", shape=[1, 8, 64], dtype="bf16", impls=["triton", "eager"]),
        JobSpec(kind="micro", kernel="rmsnorm", shape=[8, 4096, 4096], dtype="bf16", impls=["triton", "eager"]),
    ]
    for i, s in enumerate(jobs):
        s.key = f"k{i}"
    cfg = {"sweep": {"name": "rmsnorm"}, "allow_cpu": True}
    weights = sweep._check_cpu_price(cfg, jobs, "this machine has no GPU", Console(record=True), None)
    assert set(weights) == {"k0", "k1"} and weights["k1"] > 100 * weights["k0"]
    assert sum(weights.values()) == pytest.approx(cpu_price.price(jobs, FIT).estimate_s)
    # the small job done in 10 s: the large one's share of the price is left, not one more job of 10 s
    small_done = SimpleNamespace(
        completed=1, elapsed=10.0, total=2, fields={"total_weight": sum(weights.values()), "done_weight": weights["k0"]}
    )
    left = 10.0 / weights["k0"] * weights["k1"]
    shown = sweep._EtaColumn().render(small_done).plain
    assert shown == f"eta {int(left) // 3600}:{int(left) % 3600 // 60:02d}:{int(left) % 60:02d}"
    unpriced = SimpleNamespace(completed=1, elapsed=10.0, total=2, fields={})
    assert sweep._EtaColumn().render(unpriced).plain == "eta 0:00:10"


def test_an_e2e_sweep_is_priced_by_its_models_work(cache, monkeypatch):
    """A full-size FLUX.1-dev job is refused on a CPU (2 x 11.9 B parameters x 4608 tokens per step, for every step
    of every call of eager and triton); its tiny variant is small."""
    from orchestrator.config import compose as config
    from orchestrator.config.validate import validate
    from orchestrator.plan import jobs as plan

    cpu_price.keep_fit(FIT)
    monkeypatch.setattr(cpu_price, "calibrate", lambda *a, **k: pytest.fail("calibrated although one is kept"))
    code = plan.CodeVersion("abc123", "k0")

    def specs(*overrides):
        c = config.to_plain(config.compose(["+sweep=flux_e2e", *overrides]))
        validate(c)
        return plan.plan(c, code)

    full = specs()
    p = cpu_price.price(full, FIT)
    assert p.e2e_jobs == 1 and p.largest == "flux/flux.1-dev 1024x1024 bf16 (11.90 B parameters)"
    assert p.largest_bytes == 2 * 11_901_408_320
    # eager and triton (the compile and graph modes do not run on a CPU): 6 calls of 28 steps each
    assert p.estimate_s == pytest.approx(2 * 2 * 11_901_408_320 * 4608 * 28 * 6 / 1e11)
    console = Console(record=True, width=400)
    with pytest.raises(ConfigError, match="GPU-sized"):
        sweep._check_cpu_price({"sweep": {"name": "flux_e2e"}, "allow_cpu": False}, full, "no GPU here", console)
    assert "flux/flux.1-dev 1024x1024 bf16 (11.90 B parameters)" in console.export_text()
    tiny = specs("sweep.e2e.tiny=true", "sweep.e2e.heights=[64]", "sweep.e2e.widths=[96]", "sweep.e2e.steps=[2]")
    assert cpu_price.price(tiny, FIT).small
