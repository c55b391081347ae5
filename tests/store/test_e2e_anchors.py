"""orchestrator.stats.e2e_anchors: each injected mode against the fastest torch.compile mode of its own kind (CUDA
graphs against CUDA graphs, plain calls against plain calls), and the device floor (GEMM + attention) of a profile,
the latter from the profile the H200 recorded (results/h200/2026-12-01-1647-ltx-e2e.jsonl.gz)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from orchestrator.stats import e2e_anchors as A
from orchestrator.store.query import result_queries
from workers.jobs.e2e.spec import DEFAULT_MODES, MODES

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "results" / "h200" / "2026-12-01-1647-ltx-e2e.jsonl.gz"


def test_every_mode_has_one_kind_and_the_graph_enabled_compile_modes_are_graphs():
    kinds = {m: A.mode_kind(m) for m in MODES}
    assert set(kinds.values()) == {A.GRAPHS, A.PLAIN}
    for m in ("compile-ro", "compile-max-cg", "triton+compile-ro", "compile+graph", "triton+graph", "eager+graph"):
        assert kinds[m] == A.GRAPHS, m
    for m in ("eager", "triton", "compile", "compile-max", "triton+compile", "triton+compile-max"):
        assert kinds[m] == A.PLAIN, m
    assert A.mode_kind("turbo") is None and not A.is_anchor_mode("turbo") and not A.is_injected("turbo")
    # anchors: torch.compile without the kernels; eager+graph is no compile mode
    assert [m for m in MODES if A.is_anchor_mode(m)] == [
        "compile",
        "compile-max",
        "compile+graph",
        "compile-max+graph",
        "compile-ro",
        "compile-max-cg",
    ]
    # the default mode set has an anchor and an injected mode of each kind
    for kind in A.KINDS:
        assert any(A.is_anchor_mode(m) and A.mode_kind(m) == kind for m in DEFAULT_MODES), kind
        assert any(A.is_injected(m) and A.mode_kind(m) == kind for m in DEFAULT_MODES), kind


# the seed setting on host A (2026-12-01), plus a compile-ro time to pick from
SEED = {
    "eager": 42.14,
    "triton": 35.52,
    "compile": 21.72,
    "triton+compile": 19.65,
    "compile-max": 23.88,
    "compile+graph": 21.29,
    "compile-ro": 21.5,
    "triton+graph": 18.87,
    "triton+compile+graph": 19.01,
}


def test_each_injected_mode_is_set_against_the_fastest_compile_mode_of_its_own_kind():
    comps = A.comparisons(SEED)
    got = {(c.kind, c.mode): (c.anchor, c.anchor_ms, round(c.speedup, 4)) for c in comps}
    assert got == {
        (A.GRAPHS, "triton+graph"): ("compile+graph", 21.29, round(21.29 / 18.87, 4)),
        (A.GRAPHS, "triton+compile+graph"): ("compile+graph", 21.29, round(21.29 / 19.01, 4)),
        (A.PLAIN, "triton"): ("compile", 21.72, round(21.72 / 35.52, 4)),
        (A.PLAIN, "triton+compile"): ("compile", 21.72, round(21.72 / 19.65, 4)),
    }
    # graphs first, then plain calls; the injected modes in MODES order
    assert [c.mode for c in comps] == ["triton+graph", "triton+compile+graph", "triton", "triton+compile"]
    # a faster reduce-overhead becomes the graphs anchor; the plain anchor does not move
    faster = {**SEED, "compile-ro": 20.0}
    assert A.best_anchor(faster, A.GRAPHS) == ("compile-ro", 20.0)
    assert A.best_anchor(faster, A.PLAIN) == ("compile", 21.72)
    # a graph-enabled mode is never the plain-call anchor, however fast
    assert A.best_anchor({"compile-ro": 1.0, "compile-max": 30.0}, A.PLAIN) == ("compile-max", 30.0)


def test_a_tie_goes_to_the_mode_listed_first():
    assert A.best_anchor({"compile-ro": 20.0, "compile+graph": 20.0}, A.GRAPHS) == ("compile+graph", 20.0)
    assert A.best_anchor({"compile-max": 21.0, "compile": 21.0}, A.PLAIN) == ("compile", 21.0)
    assert A.best_anchor({"compile-max-cg": 19.0, "compile-ro": 19.0}, A.GRAPHS) == ("compile-ro", 19.0)


def test_missing_failed_and_incorrect_modes_are_no_anchor():
    # no graph-enabled compile mode ran (a CPU, or left out): the graphs comparison has no anchor, no speed-up
    ms = {"eager": 40.0, "compile": 22.0, "triton": 30.0, "triton+graph": 19.0, "compile-ro": None}
    comps = A.comparisons(ms)
    graphs = [c for c in comps if c.kind == A.GRAPHS]
    assert [(c.anchor, c.anchor_ms, c.mode, c.speedup) for c in graphs] == [(None, None, "triton+graph", None)]
    # an anchor that failed correctness is left out; the next fastest of its kind is the anchor
    ms = {"compile-ro": 18.0, "compile+graph": 21.0, "triton+graph": 19.0}
    assert A.best_anchor(ms, A.GRAPHS, {"compile-ro": False}) == ("compile+graph", 21.0)
    # an injected mode that failed correctness gets no speed-up row
    comps = A.comparisons(ms, {"triton+graph": False})
    assert [(c.anchor, c.mode) for c in comps] == [("compile-ro", None)]
    # nothing of a kind: no row for it; no mode at all: nothing
    assert [c.kind for c in A.comparisons({"compile": 20.0, "triton": 25.0})] == [A.PLAIN]
    assert A.comparisons({}) == [] and A.comparisons({"eager": 40.0, "eager+graph": 30.0}) == []
    with pytest.raises(ValueError, match="kind must be one of graphs, plain"):
        A.best_anchor(ms, "fast")


def test_comparisons_per_job_from_store_rows_of_either_shape():
    flat = [
        {"job_id": 1, "mode": m, "ms_per_step": v, "correct": 1.0} for m, v in SEED.items() if m != "compile-ro"
    ] + [{"job_id": 2, "mode": "compile", "ms_per_step": 20.0, "correct": 1.0}]
    flat.append({"job_id": 2, "mode": "triton", "ms_per_step": 10.0, "correct": 0.0})  # incorrect: no row
    nested = [{"job_id": r["job_id"], "mode": r["mode"], "metrics": r} for r in flat]
    for rows in (flat, nested):
        out = result_queries.e2e_comparisons(rows)
        assert [(c["job_id"], c["kind_label"], c["anchor"], c["mode"]) for c in out] == [
            (1, "CUDA graphs", "compile+graph", "triton+graph"),
            (1, "CUDA graphs", "compile+graph", "triton+compile+graph"),
            (1, "plain calls", "compile", "triton"),
            (1, "plain calls", "compile", "triton+compile"),
            (2, "plain calls", "compile", None),
        ]


def _recorded_profile() -> dict:
    with gzip.open(RECORDED, "rt") as f:
        results = [json.loads(line) for line in f][1:]
    (job,) = [r["result"] for r in results]
    return job


def test_the_floor_is_gemm_plus_attention_of_the_recorded_profile():
    job = _recorded_profile()
    prof = job["details"]["profile"]["triton+graph"]
    classes = {c: v["ms"] for c, v in prof["classes"].items()}
    ms = {m["impl"]: m["value"] for m in job["measurements"] if m["metric"] == "ms_per_step"}
    fig = A.floor_figures(ms["triton+graph"], classes)
    # docs/perf/ltx-e2e-h200.md: GEMM 12.50 + attention 2.77 of 17.58 busy; the rest 2.31 (ours 2.13, PyTorch 0.18)
    assert fig["floor_ms"] == pytest.approx(12.5024 + 2.7713)
    assert fig["rest_ms"] == pytest.approx(2.1284 + 0.181 + 0.0003)
    assert fig["floor_ms"] + fig["rest_ms"] == pytest.approx(prof["gpu_busy_ms"], abs=0.01)  # one stream: no overlap
    assert fig["over_floor_ms"] == pytest.approx(ms["triton+graph"] - fig["floor_ms"])
    # eager has no kernelfleet or inductor class: the floor is still GEMM + attention, the rest is PyTorch's
    eager = {c: v["ms"] for c, v in job["details"]["profile"]["eager"]["classes"].items()}
    assert A.device_floor(eager) == pytest.approx(12.4644 + 3.2377)


def test_no_device_profile_no_floor():
    assert A.floor_figures(20.0, None) == {"floor_ms": None, "rest_ms": None, "over_floor_ms": None}
    assert A.floor_figures(20.0, {}) == {"floor_ms": None, "rest_ms": None, "over_floor_ms": None}
    # a class the profile lacks took no time; no step time: no distance from the floor
    assert A.floor_figures(None, {"gemm": 3.0, "elementwise": 1.0}) == {
        "floor_ms": 3.0,
        "rest_ms": 1.0,
        "over_floor_ms": None,
    }
