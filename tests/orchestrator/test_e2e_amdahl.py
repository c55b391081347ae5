"""The Amdahl reconciliation (orchestrator.stats.e2e_amdahl): each injected mode's base, the micro speed-ups of its
kernels against what they replace, the predicted end-to-end speed-up beside the measured one; and on H200 results
(results/h200: the kernels sweep of 2026-12-01 and the LTX-Video job of 2026-12-02), the report's table."""

from __future__ import annotations

import math
from statistics import geometric_mean

import pytest

from orchestrator.stats import e2e_amdahl
from tests.orchestrator.test_report_e2e import REPO, cli

KERNELS = REPO / "results" / "h200" / "2026-12-01-1441-kernels-aa-2.jsonl.gz"
LTX = REPO / "results" / "h200" / "2026-12-02-0430-ltx-e2e.jsonl.gz"


@pytest.mark.parametrize(
    "mode,base,micro",
    [
        ("triton", "eager", "eager"),
        ("triton+graph", "eager+graph", "eager"),
        ("triton+compile", "compile", "compile"),
        ("triton+compile+graph", "compile+graph", "compile"),
        ("triton+compile-ro", "compile-ro", "compile"),
        ("triton+compile-max", "compile-max", "compile_max"),
        ("triton+compile-max-cg", "compile-max-cg", "compile_max"),
    ],
)
def test_each_injected_mode_has_its_base(mode, base, micro):
    assert e2e_amdahl.base_mode(mode) == base and e2e_amdahl.micro_baseline(mode) == micro
    assert e2e_amdahl.base_mode(base) is None


def _row(kernel, shape, impl, median, kernel_time=None, correct=True, dtype="bf16"):
    return {
        "kernel": kernel,
        "shape": shape,
        "impl": impl,
        "median_us": median,
        "kernel_time_us": kernel_time,
        "correct": correct,
        "dtype": dtype,
    }


def test_micro_speedups_come_from_model_sized_shapes_and_device_time():
    rows = [
        # a model-sized shape, both profiled: the kernel times (eager 30 / triton 10 = 3x), not the medians
        _row("rmsnorm", [2, 1320, 2048], "eager", 40.0, 30.0),
        _row("rmsnorm", [2, 1320, 2048], "triton", 12.0, 10.0),
        # another: only medians on one side (6 / 3 = 2x)
        _row("rmsnorm", [2, 4096, 3072], "eager", 6.0, None),
        _row("rmsnorm", [2, 4096, 3072], "triton", 3.0, 2.5),
        # a small shape beside model-sized ones: left out
        _row("rmsnorm", [1, 4, 64], "eager", 100.0),
        _row("rmsnorm", [1, 4, 64], "triton", 1.0),
        # only small shapes: they count; an incorrect implementation and another dtype never do
        _row("rope", [1, 4, 64], "compile", 8.0),
        _row("rope", [1, 4, 64], "triton", 2.0),
        _row("rope", [1, 8, 64], "compile", 1.0, correct=False),
        _row("rope", [1, 8, 64], "triton", 2.0),
        _row("rope", [1, 4, 64], "eager", 9.0, dtype="fp32"),
    ]
    got = e2e_amdahl.kernel_speedups(rows, "bf16")
    assert got["eager"] == {"rmsnorm": pytest.approx(math.sqrt(3 * 2))}
    assert got["compile"] == {"rope": pytest.approx(4.0)}


def test_reconciliation_of_one_job():
    modes = {
        "eager": {"ms": 40.0, "correct": True},
        "triton": {
            "ms": 30.0,
            "correct": True,
            "kernels": ["rmsnorm", "adaln", "fused_qkv"],
            "ours": [
                {"module": "kernels.rmsnorm", "kernels": ["rmsnorm"], "ms": 2.0},
                # a module shared by two kernels, one of them used: its speed-up
                {"module": "kernels.adaln", "kernels": ["adaln", "adaln_layer_norm"], "ms": 1.0},
                {"module": "kernels.rope", "kernels": ["rope"], "ms": 0.5},  # no micro result: counted at 1x
            ],
        },
        "compile": {"ms": 25.0, "correct": True},
        "triton+compile": {"ms": 26.0, "correct": False, "ours": [{"module": "m", "kernels": [], "ms": 1.0}]},
        "triton+graph": {"ms": 20.0, "correct": True, "ours": []},  # no eager+graph, and no profile
    }
    speedups = {"eager": {"rmsnorm": 4.0, "adaln": 2.0, "adaln_layer_norm": 9.0}}
    (rec,) = e2e_amdahl.reconcile_job(modes, speedups)
    assert (rec["mode"], rec["base"], rec["micro_baseline"]) == ("triton", "eager", "eager")
    # replaced: 2 x 4 + 1 x 2 + 0.5 x 1 = 10.5 ms of eager's step; predicted 40 - 10.5 + 3.5 = 33 ms
    assert rec["ours_ms"] == pytest.approx(3.5) and rec["replaced_ms"] == pytest.approx(10.5)
    assert rec["predicted_ms"] == pytest.approx(33.0) and rec["predicted_speedup"] == pytest.approx(40 / 33)
    assert rec["measured_speedup"] == pytest.approx(40 / 30) and rec["lost_ms"] == pytest.approx(-3.0)
    assert rec["kernel_speedups"] == {"adaln": 2.0, "rmsnorm": 4.0} and rec["unmeasured"] == ["kernels.rope"]
    assert e2e_amdahl.speedup_text(rec["kernel_speedups"], rec["unmeasured"]) == (
        "adaln 2.00x, rmsnorm 4.00x, rope: no micro result"
    )


def test_report_reconciles_the_h200_ltx_job_with_the_h200_micro_results(tmp_path):
    """The job's profile predates the per-module breakdown: our kernels' profiled total is weighed by the geometric
    mean of the micro speed-ups of the kernels its injection used, each mode against its own base."""
    url = f"sqlite:///{tmp_path / 'kf.db'}"
    for f in (KERNELS, LTX):
        imp = cli("import", str(f), "--url", url)
        assert imp.returncode == 0, imp.stdout + imp.stderr
    page = tmp_path / "e2e.md"
    rep = cli("report", "--url", url, "--markdown", str(page))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    text = page.read_text()
    head = "| injected mode | base | setting | base ms | ms | measured | predicted | predicted ms | ours ms | lost ms |"
    assert head in text
    rows = {
        cells[0].removeprefix("| "): cells
        for cells in (line.split(" | ") for line in text[text.index(head) :].split("\n\n")[0].splitlines()[2:])
    }
    assert set(rows) == {"triton", "triton+compile", "triton+compile-max", "triton+compile+graph"}
    triton = rows["triton"]
    assert triton[1:6] == ["eager", "ltx-video 25x480x704 bf16 30 steps", "41.20", "26.36", "1.563x"]
    # the prediction is Amdahl's arithmetic on the row's own figures
    listed = [float(p.split(" ")[-1].rstrip("x")) for p in triton[10].removeprefix("eager: ").rstrip(" |").split(", ")]
    s = geometric_mean(listed)
    base, ours = 41.20, float(triton[8])
    assert float(triton[7]) == pytest.approx(base - ours * s + ours, abs=0.05)  # from the rounded figures
    assert rows["triton+compile"][1] == "compile" and rows["triton+compile"][10].startswith("compile: ")
    assert "what the kernel wins lose in launches, graph breaks or layout copies" in text
