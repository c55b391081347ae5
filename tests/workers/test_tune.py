"""The tune job and its planning: each tunable kernel's candidates (legal values only, the block width never a knob,
the current choice among them), the compile filter dropping a candidate that really spills on gfx950, and a tune
job run end to end through Triton's interpreter, stored and read back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from kernels import registry
from kernels import tune as kernel_tune
from kernels.arch import for_arch
from kernels.launch import next_pow2
from kernels.rows import TUNE_MAX_ELEMENTS, NormLaunch
from orchestrator.config import compose as config
from orchestrator.config.compose import ConfigError
from orchestrator.config.validate import validate
from orchestrator.interchange.importer import import_results
from orchestrator.plan import tune as tune_plan
from orchestrator.plan.jobs import code_version, job_key, plan_key
from orchestrator.store.query import tune_queries
from workers.jobs import isa_targets, tune_filter
from workers.runtime import runner
from workers.spec import STATUS_OK

REPO = Path(__file__).resolve().parents[2]

ARCHS = ("sm_90", "gfx950", "gfx1201")
ROW_KERNELS = ("rmsnorm", "adaln", "adaln_layer_norm", "add_rms_norm_modulate", "gated_residual")
MUST_TUNE = ("rmsnorm", "adaln", "adaln_layer_norm", "rope", "rope_rotate_half", "geglu", "gelu_tanh")


def tunable():
    return [n for n in registry.kernel_names() if registry.get(n).tune is not None]


def test_the_norm_rope_and_geglu_families_declare_their_knobs():
    assert set(MUST_TUNE) <= set(tunable())


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel", MUST_TUNE + ROW_KERNELS[3:])
def test_candidates_are_legal_include_the_current_choice_and_stay_few(kernel, arch):
    entry = registry.get(kernel)
    tune = entry.tune
    warp = for_arch(arch).warp_size
    for shape in [*entry.grid.shapes, *entry.contract.launch_shapes]:
        cands = kernel_tune.choices(tune, shape, arch)
        names = [kernel_tune.impl_name(tune, c) for c in cands]
        assert len(set(names)) == len(names)
        assert kernel_tune.impl_name(tune, tune.current(shape, arch)) in names
        assert 1 < len(cands) <= 14, (kernel, shape, arch, len(cands))
        for c in cands:
            assert list(c) == list(tune.knobs)
            assert kernel_tune.parse_impl(tune, kernel_tune.impl_name(tune, c)) == c
            assert c["num_warps"] in kernel_tune.WARPS and c["num_warps"] * warp <= 1024
            assert all(v >= 1 and v & (v - 1) == 0 for v in c.values()), c  # powers of two only
            tune.config(c, list(shape))  # every candidate makes a launch override


@pytest.mark.parametrize("kernel", ROW_KERNELS)
def test_a_row_kernels_block_width_is_never_a_knob(kernel):
    tune = registry.get(kernel).tune
    assert tune.knobs == ("num_warps", "rows_per_program")
    for width in (64, 1536, 2048, 3072, 8192):
        shape = [1, 16, width]
        for c in kernel_tune.choices(tune, shape, "sm_90"):
            cfg = tune.config(c, shape)
            assert isinstance(cfg, NormLaunch)  # rows and warps only: the block stays next_pow2(width)
            assert cfg.rows_per_program * next_pow2(width) <= max(TUNE_MAX_ELEMENTS, next_pow2(width))
        assert tune.bucket(shape) == f"block={next_pow2(width)}"


def test_the_current_choice_is_the_launch_tables():
    tune = registry.get("adaln_layer_norm").tune  # sm_90 row: 2 warps at block 2048, 4 at 4096 (measured)
    assert tune.current([2, 1024, 1536], "sm_90") == {"num_warps": 2, "rows_per_program": 1}
    assert tune.current([1, 512, 3072], "sm_90") == {"num_warps": 4, "rows_per_program": 1}
    assert tune.current([1, 512, 3072], "gfx1201") == {"num_warps": 8, "rows_per_program": 1}  # the rule


def test_candidate_names_are_checked():
    tune = registry.get("rmsnorm").tune
    for bad in ("triton", "triton[rows_per_program=1,num_warps=4]", "triton[num_warps=4]", "eager"):
        with pytest.raises(ValueError):
            kernel_tune.parse_impl(tune, bad)


# --------------------------------------------------------------------------------------------- compile filter


def test_the_verdict_drops_spills_and_launches_that_cannot_run():
    gfx1201, sm_90 = isa_targets.get("gfx1201"), isa_targets.get("sm_90")
    assert tune_filter.verdict([{"vgpr_spills": 0, "scratch_bytes": 0, "lds_bytes": 16}], gfx1201) is None
    assert "spills" in tune_filter.verdict([{"vgpr_spills": 3}], gfx1201)
    assert "spills" in tune_filter.verdict([{}, {"spill_store_bytes": 4}], sm_90)
    assert "LDS 70000 B over the gfx1201 limit of 65536 B" in tune_filter.verdict([{"lds_bytes": 70000}], gfx1201)
    assert tune_filter.verdict([{"lds_bytes": 70000}], sm_90) is None  # Hopper: 227 KiB a block
    assert "294912 B over the sm_90 limit of 232448 B" in tune_filter.verdict([{"lds_bytes": 294912}], sm_90)
    # 255 registers for 512 threads: more than the 64 Ki registers of a block (ptxas bounds them only to 255)
    assert "registers a block" in tune_filter.verdict([{"registers": 255, "workgroup_size": 512}], sm_90)
    assert tune_filter.verdict([{"registers": 128, "workgroup_size": 512}], sm_90) is None


def test_a_candidate_that_spills_on_gfx950_is_dropped_by_its_real_compile():
    """32 rows of 2048 in one wave64 program: 1024 fp32 values a lane, more than gfx950's 512 VGPRs."""
    task = {"kernel": "rmsnorm", "shape": [1, 64, 2048], "dtype": "bf16", "arch": "gfx950", "bucket": "block=2048"}
    spills, fits = tune_plan._run_filter(
        [
            {**task, "impl": "triton[num_warps=1,rows_per_program=32]"},
            {**task, "impl": "triton[num_warps=4,rows_per_program=1]"},
        ]
    )
    assert not spills["keep"] and spills["reason"].startswith("spills") and spills["figures"]["vgpr_spills"] > 0
    assert fits["keep"] and fits["reason"] is None and fits["figures"]["vgprs"] > 0


def test_plan_drops_what_the_compile_dropped_and_says_why():
    tune = registry.get("rmsnorm").tune
    shape = [2, 64, 2048]
    names = [kernel_tune.impl_name(tune, c) for c in kernel_tune.choices(tune, shape, "gfx950")]
    victim = names[-1]
    verdicts = {("bf16", "block=2048", n): {"keep": n != victim, "reason": "spills: vgpr_spills=9"} for n in names}
    (spec,) = tune_plan.plan_tune("rmsnorm", [shape], ["bf16"], "mi355x", "gfx950", {"rep_ms": 10.0}, "tune", verdicts)
    assert spec.kind == "tune" and victim not in spec.impls and len(spec.impls) == len(names) - 1
    assert spec.params["tune"]["dropped"] == {victim: "spills: vgpr_spills=9"}
    assert spec.params["tune"]["current"] in spec.impls and spec.params["tune"]["arch"] == "gfx950"


def test_compile_verdicts_compile_each_bucket_once_and_then_come_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELFLEET_TUNE_CACHE", str(tmp_path / "cache.json"))
    shapes = [[1, 8, 8192], [2, 8, 8192]]  # one bucket: block=8192, one row a program
    first = tune_plan.compile_verdicts("rmsnorm", shapes, ["bf16"], "gfx950")
    tune = registry.get("rmsnorm").tune
    assert set(first) == {
        ("bf16", "block=8192", kernel_tune.impl_name(tune, c)) for c in kernel_tune.choices(tune, shapes[0], "gfx950")
    }
    assert all(v["keep"] for v in first.values())

    def no_compile(tasks):
        raise AssertionError(f"compiled again: {tasks}")

    monkeypatch.setattr(tune_plan, "_run_filter", no_compile)
    assert tune_plan.compile_verdicts("rmsnorm", shapes, ["bf16"], "gfx950") == first


# ----------------------------------------------------------------------------------------------- the sweep


def _cfg(*overrides):
    c = config.to_plain(config.compose(list(overrides)))
    validate(c)
    return c


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["sweep.kernels=[cross_attention]", "target=h200"], "declares no tune knobs"),
        (["sweep.kernels=[no_such]", "target=h200"], "'no_such' is not in this sweep"),
        (["sweep.kernels=[rmsnorm]"], "a tune sweep needs a target of one GPU type"),
    ],
)
def test_bad_tune_sweeps_are_one_line_config_errors(overrides, message):
    with pytest.raises(ConfigError) as err:
        _cfg("+sweep=tune", *overrides)
    assert message in str(err.value) and "\n" not in str(err.value)


# ----------------------------------------------------------------------------------------- end to end (CPU)


def test_a_tune_job_runs_through_the_interpreter_and_is_stored_and_read_back(tmp_path):
    """Planned, run by ``python -m workers run`` (the sandbox; Triton's interpreter on the CPU), imported, read."""
    code = code_version()
    shape = [2, 8, 64]
    tune = registry.get("rmsnorm").tune
    (spec,) = tune_plan.plan_tune(
        "rmsnorm", [shape], ["fp32"], "any", None, {"rep_ms": 5.0, "rounds": 2, "warmup_ms": 1.0, "seed": 0}
    )
    current = spec.params["tune"]["current"]
    bad = "triton[num_warps=3,rows_per_program=1]"  # not a power of two: that candidate's error, not the job's
    spec.impls = [current, *[n for n in spec.impls if n != current][:2], bad]
    spec.key = job_key(spec, code)
    plan, out = tmp_path / "plan.jsonl", tmp_path / "results.jsonl"
    header = {"sweep": "tune", "config": {}, "plan_key": plan_key([spec]), **code.to_dict([spec])}
    runner.write_plan(plan, header, [spec])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "workers", "run", str(plan), "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    _, [(_, result)] = runner.read_results(out)
    assert result.status == STATUS_OK, result.error
    details = result.details["tune"]
    assert details["current"] == current == kernel_tune.impl_name(tune, tune.current(shape, "cpu"))
    assert bad in details["dropped"] and bad not in details["candidates"]
    timed = {m.impl for m in result.measurements if m.metric == "time_us"}
    assert timed == set(details["candidates"]) == set(spec.impls) - {bad}
    assert all(m.value == 1.0 for m in result.measurements if m.metric == "correct")

    url = f"sqlite:///{tmp_path / 'kf.db'}"
    with open(tmp_path / "import.log", "w") as log:
        assert import_results([str(out)], url, Console(file=log)) == 0
    (run,) = tune_queries.tune_runs(url)
    assert run["kernels"] == ["rmsnorm"] and tune_queries.is_tune_run(url, run["id"])
    (row,) = tune_queries.tune_results(url, run["id"])
    assert row["shape"] == shape and row["current"] == current and row["bucket"] == "block=64"
    assert set(row["candidates"]) == timed and bad in row["dropped"]
    for impl, c in row["candidates"].items():
        assert c["knobs"] == kernel_tune.parse_impl(tune, impl)
        assert c["time_us"] > 0 and len(c["samples"]) >= 2 and c["correct"] == 1.0
    assert row["candidates"][current]["speedup"] == pytest.approx(1.0)


def test_a_tune_sweep_on_a_cpu_is_priced_like_the_interpreted_triton_it_runs():
    from orchestrator.plan import cpu_price

    fit = {"per_call_s": 0.01, "per_element_s": 1e-6, "eager_per_element_s": 1e-8}
    small = tune_plan.plan_tune("rmsnorm", [[2, 8, 64]], ["fp32"], "any", None, {"rep_ms": 5.0, "rounds": 2})
    large = tune_plan.plan_tune("rmsnorm", [[2, 1024, 2048]], ["bf16"], "any", None, {"rep_ms": 100.0, "rounds": 5})
    cheap, costly = cpu_price.price(small, fit), cpu_price.price(large, fit)
    assert cheap.triton_calls > 0 and costly.estimate_s > 100 * cheap.estimate_s and not costly.small


def test_other_sweeps_may_name_kernels_without_tune_knobs():
    from orchestrator.plan import jobs as plan

    cfg = _cfg("+sweep=kernels", "sweep.kernels=[cross_attention]", "sweep.kinds=[correctness]")
    specs = plan.plan(cfg)
    assert specs and {s.kernel for s in specs} == {"cross_attention"}
