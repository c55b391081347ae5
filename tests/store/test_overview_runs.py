"""The Overview answers "faster than the best torch.compile?" from the newest run that timed one, and says which run;
the newest run that timed only triton and eager answers "against eager" (issue 46, point 1)."""

from __future__ import annotations

from dashboard import pages
from orchestrator.store.query import access, view_queries

T0 = 1_800_000_000.0


def _run(writer, factories, times: dict[str, float], at: float, *, marked: dict | None = None) -> int:
    run_id = writer.start_run("kernels", {}, f"plan-{at}", f"{int(at):040d}", "h")
    spec = factories.spec(impls=list(times), at=at)
    writer.add_jobs(run_id, [spec])
    measurements = [m for impl, t in times.items() for m in factories.timing(impl, [t, t * 1.01, t * 0.99])]
    writer.record_result(run_id, factories.result(spec, measurements, started_at=at))
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
    assert cell["speedup_vs_eager"] == 4.0
    assert cell["compile_run_id"] == full and cell["speedup_vs_compile"] == 1.1
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
