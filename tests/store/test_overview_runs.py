"""The Overview answers "faster than the best torch.compile?" from the newest run that timed one, and says which run;
the newest run that timed only triton and eager answers "against eager" (issue 46, point 1)."""

from __future__ import annotations

import pytest

from dashboard import pages
from orchestrator.store.query import access, view_queries

T0 = 1_800_000_000.0


def _run(
    writer, factories, times: dict[str, float], at: float, *, marked: dict | None = None, shapes=((4, 1024, 2048),)
) -> int:
    run_id = writer.start_run("kernels", {}, f"plan-{at}", f"{int(at):040d}", "h")
    specs = [factories.spec(impls=list(times), at=at, shape=shape) for shape in shapes]
    writer.add_jobs(run_id, specs)
    for i, spec in enumerate(specs):
        ms = [
            m
            for impl, t in times.items()
            for m in factories.timing(impl, [t * (i + 1), t * (i + 1) * 1.01, t * (i + 1) * 0.99])
        ]
        writer.record_result(run_id, factories.result(spec, ms, started_at=at))
    writer.finish_run(run_id, "complete", {})
    if marked:
        writer.mark_run(run_id, marked)
    return run_id


def test_the_compile_column_reads_the_newest_run_that_timed_torch_compile(writer, store_url, factories):
    full = _run(writer, factories, {"triton": 10.0, "eager": 50.0, "compile": 12.0, "compile_max": 11.0}, T0)
    grid = _run(writer, factories, {"triton": 10.0, "eager": 40.0}, T0 + 10)  # a scaling grid: no torch.compile
    shared = _run(
        writer, factories, {"triton": 30.0, "eager": 60.0}, T0 + 20, marked={"shared_gpu": True, "rehearsal": True}
    )
    (cell,) = view_queries.speedup_matrix(store_url)
    assert cell["run_id"] == grid, "against eager: the newest plain run (the marked one is passed over)"
    assert cell["speedup_vs_eager"] == pytest.approx(4.0)
    assert cell["compile_run_id"] == full and cell["speedup_vs_compile"] == pytest.approx(1.1)
    assert cell["compile_baseline"] == "compile_max" and cell["marked"] == ""

    (fast,) = view_queries.newest_micro_cells(store_url)
    assert fast["run_id"] == full and fast["newest_run_id"] == grid, "ranked among every implementation timed"
    assert set(fast["times"]) == {"triton", "eager", "compile", "compile_max"}

    src = access.open_read_only(store_url)
    view = pages.build(src, "/", {"impl": "triton"}, store_url)
    (row,) = view.table("cells").rows
    assert row["compile_run_id"] == full and row["run_id"] == grid
    assert any(f"run {full} (the newest, run {grid}, timed no torch.compile)" in n for n in view.notes)
    labels = [t for trace in view.figures[0].figure.data for r in trace.text for t in r]
    assert "1.10×" in labels and "4.00×" in labels
    fastest = pages.build(src, "/", {"view": "fastest"}, store_url).table("fastest").rows[0]
    assert fastest["fastest"] == "triton" and fastest["runner_up"] == "compile_max"
    assert shared not in (row["run_id"], row["compile_run_id"])


def test_a_cell_with_only_marked_runs_is_shown_and_says_so(writer, store_url, factories):
    run = _run(writer, factories, {"triton": 10.0, "eager": 40.0}, T0, marked={"shared_gpu": True})
    (cell,) = view_queries.speedup_matrix(store_url)
    assert cell["run_id"] == run and cell["compile_run_id"] is None
    assert cell["marked"] == f"run {run}: GPU shared with other nodes"
    src = access.open_read_only(store_url)
    view = pages.build(src, "/", {"impl": "triton"}, store_url)
    labels = [t for trace in view.figures[0].figure.data for r in trace.text for t in r]
    assert "no torch.compile" in labels


def test_trends_opens_on_a_log_axis_when_series_lie_far_apart_and_colours_one_impls_shapes(
    writer, store_url, factories
):
    """Point 8: eager at ten times triton opens on a log axis (unless a scale is asked for); one implementation
    over several shapes (the Overview's click) gets a colour per shape, several keep each its colour."""
    from dashboard.colors import impl_color

    shapes = ((1, 256, 2048), (2, 256, 2048), (4, 256, 2048))
    for i in range(3):
        _run(writer, factories, {"triton": 10.0, "eager": 100.0}, T0 + i, shapes=shapes)
    src = access.open_read_only(store_url)
    both = pages.build(src, "/trends", {"kernel": "rmsnorm", "shape": ""}, store_url)
    assert both.params["scale"] == "log" and both.figures[0].figure.layout.yaxis.type == "log"
    lines = [t for t in both.figures[0].figure.data if t.mode == "lines+markers"]
    assert {t.line.color for t in lines} == {impl_color("triton"), impl_color("eager")}
    asked = pages.build(src, "/trends", {"kernel": "rmsnorm", "shape": "", "scale": "linear"}, store_url)
    assert asked.figures[0].figure.layout.yaxis.type == "linear"
    one = pages.build(src, "/trends", {"kernel": "rmsnorm", "shape": "", "impl": "triton"}, store_url)
    lines = [t for t in one.figures[0].figure.data if t.mode == "lines+markers"]
    assert len(lines) == 3 and len({t.line.color for t in lines}) == 3
