"""Runs marked by their conditions (a dirty tree, a GPU shared with other nodes, a rehearsal: runs.conditions) on the
Bandwidth, End to end, Profiles, Tune and Regression pages: left out by default, shown with the "marked runs" filter
every such page shares, and then marked in the same words as on the Overview, Runs and Compare pages.

The store holds real H200 results imported from a folder whose conditions.json marks some of them, as the shipped
fleet rehearsal's results are marked (results/h200/conditions.json)."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from rich.console import Console

from dashboard import pages
from dashboard.pages import _common, trends
from orchestrator.interchange.importer import import_results
from orchestrator.store import session
from orchestrator.store.query import access, run_queries

from .conftest import H200_RESULTS

PLAIN_MICRO = "2026-11-30-1617-kernels-xattn.jsonl.gz"
DIRTY_MICRO = "2026-11-30-1750-kernels-xattn.jsonl.gz"  # the same kernel, newer: the newest point when shown
PLAIN_E2E = "2026-11-30-0456-ltx-e2e.jsonl.gz"
SHARED_E2E = "2026-11-30-0644-ltx-e2e.jsonl.gz"
DIRTY_TUNE = "2026-12-02-1008-tune-geglu-1.jsonl.gz"
DIRTY = {"dirty": True, "diff_sha256": "d" * 64}
SHARED = {"shared_gpu": True, "rehearsal": True, "note": "two nodes, one GPU"}
DIRTY_WORDS = "uncommitted changes (diff dddddddd)"
SHARED_WORDS = "GPU shared with other nodes; fleet rehearsal"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("marked-results")
    for name in (PLAIN_MICRO, DIRTY_MICRO, PLAIN_E2E, SHARED_E2E, DIRTY_TUNE):
        shutil.copy(H200_RESULTS / name, folder / name)
    manifest = {DIRTY_MICRO: DIRTY, SHARED_E2E: SHARED, DIRTY_TUNE: DIRTY}
    (folder / "conditions.json").write_text(json.dumps({"files": manifest}))
    url = session.sqlite_url_for(tmp_path_factory.mktemp("marked-store") / "kf.db")
    assert import_results([str(folder)], url, Console(file=io.StringIO())) == 0
    runs = {(r["sweep"], r["marked"]): r["id"] for r in run_queries.list_runs(url)}
    assert len(runs) == 5, runs  # (sweep, marks) -> run
    src = access.open_read_only(url)
    yield url, src, runs
    session.dispose_engines()


def _build(store, path: str, params: dict | None = None):
    url, src, _ = store
    return pages.build(src, path, params or {}, url)


def _marked_filter(view):
    (found,) = [f for f in view.filters if f.name == _common.MARKED]
    return found


def _check_filter(view, value: str) -> None:
    """The page offers the one "marked runs" filter every page shares, set to ``value``, and keeps it in its URL."""
    assert _marked_filter(view) == _common.marked_filter(value)
    assert view.params[_common.MARKED] == value


def test_every_page_that_leaves_marked_runs_out_offers_the_same_filter():
    """The Trends page's filter is the same one (its own declaration, in the same words)."""
    assert trends.MARKED_RUNS == _common.MARKED_RUNS


def test_bandwidth_leaves_the_marked_run_out_then_shows_it_marked(store):
    dirty_run = store[2][("kernels", DIRTY_WORDS)]
    view = _build(store, "/bandwidth", {"kernel": "xattn"})
    _check_filter(view, "leave")
    rows = view.table("points").rows
    assert rows and dirty_run not in {r["run_id"] for r in rows}
    assert all(r["marked"] == "" for r in rows)
    assert not any("Marked run" in n for n in view.notes)

    shown = _build(store, "/bandwidth", {"kernel": "xattn", "marked": "show"})
    _check_filter(shown, "show")
    rows = shown.table("points").rows
    marked = [r for r in rows if r["run_id"] == dirty_run]
    assert marked and all(r["marked"] == DIRTY_WORDS for r in marked), "the newest point is the marked run's"
    assert any(f"run {dirty_run}: {DIRTY_WORDS}" in n for n in shown.notes)
    hover = [h for t in shown.figures[0].figure.data if t.hovertext for h in t.hovertext]
    assert any(f"marked: {DIRTY_WORDS}" in h for h in hover)


def test_trends_leaves_the_marked_run_out_then_shows_it_marked(store):
    dirty_run = store[2][("kernels", DIRTY_WORDS)]
    view = _build(store, "/trends", {"kernel": "cross_attention"})
    _check_filter(view, "leave")
    rows = view.table("points").rows
    assert rows and dirty_run not in {r["run_id"] for r in rows}
    assert all(r["marked"] == "" for r in rows) and not any("Marked run" in n for n in view.notes)

    shown = _build(store, "/trends", {"kernel": "cross_attention", "marked": "show"})
    _check_filter(shown, "show")
    marked = [r for r in shown.table("points").rows if r["run_id"] == dirty_run]
    assert marked and all(r["marked"] == DIRTY_WORDS for r in marked)
    assert any(f"run {dirty_run}: {DIRTY_WORDS}" in n for n in shown.notes)
    hover = [h for t in shown.figures[0].figure.data if t.hovertext for h in t.hovertext]
    assert any(f"marked: {DIRTY_WORDS}" in h for h in hover)


def test_end_to_end_and_profiles_leave_the_marked_run_out_then_show_it_marked(store):
    shared_run = store[2][("ltx_e2e", SHARED_WORDS)]
    e2e = _build(store, "/e2e", {"job": ""})
    _check_filter(e2e, "leave")
    rows = e2e.table("modes").rows
    assert rows and shared_run not in {r["run_id"] for r in rows}
    profiles = _build(store, "/profiles")
    _check_filter(profiles, "leave")
    jobs = profiles.table("jobs").rows
    assert jobs and shared_run not in {r["run_id"] for r in jobs}

    e2e = _build(store, "/e2e", {"job": "", "marked": "show"})
    _check_filter(e2e, "show")
    rows = [r for r in e2e.table("modes").rows if r["run_id"] == shared_run]
    assert rows and all(r["marked"] == SHARED_WORDS for r in rows)
    assert all(f"marked: {SHARED_WORDS}" in r["job"] for r in rows), "the job's label says so"
    assert any(f"run {shared_run}: {SHARED_WORDS}" in n for n in e2e.notes)
    (job_filter,) = [f for f in e2e.filters if f.name == "job"]
    assert any(f" · marked: {SHARED_WORDS}" in label for _, label in job_filter.options)

    profiles = _build(store, "/profiles", {"marked": "show"})
    _check_filter(profiles, "show")
    jobs = [r for r in profiles.table("jobs").rows if r["run_id"] == shared_run]
    assert jobs and all(r["marked"] == SHARED_WORDS for r in jobs)
    chosen = _build(store, "/profiles", {"marked": "show", "job": str(jobs[0]["job_id"])})
    assert chosen.params["job"] == str(jobs[0]["job_id"])
    assert any(f"run {shared_run}: {SHARED_WORDS}" in n for n in chosen.notes)
    (job_filter,) = [f for f in chosen.filters if f.name == "job"]
    assert dict(job_filter.options)[str(jobs[0]["job_id"])].endswith(f" · marked: {SHARED_WORDS}")
    # the marked run asked for without the filter: the page falls back on a plain run's job
    plain = _build(store, "/profiles", {"job": str(jobs[0]["job_id"])})
    assert plain.params["job"] != str(jobs[0]["job_id"])


def test_tune_leaves_the_marked_run_out_unless_shown_or_named(store):
    dirty_tune = store[2][("tune", DIRTY_WORDS)]
    view = _build(store, "/tune")
    _check_filter(view, "leave")
    assert not view.figures and "the filter 'marked runs' shows them" in view.notes[0]

    for params in ({"marked": "show"}, {"run": str(dirty_tune)}):  # the Runs page's link names the run
        shown = _build(store, "/tune", params)
        _check_filter(shown, "show")
        assert shown.params["run"] == str(dirty_tune) and shown.figures
        assert any(f"run {dirty_tune}: {DIRTY_WORDS}" in n for n in shown.notes)
        (run_filter,) = [f for f in shown.filters if f.name == "run"]
        assert dict(run_filter.options)[str(dirty_tune)].endswith(f" · marked: {DIRTY_WORDS}")
        links = shown.table("jobs").links["view"]
        assert links.endswith("&marked=show"), "a job's link keeps the marked run"


def test_regression_says_when_a_side_is_a_marked_run(store):
    plain_micro, dirty_micro = store[2][("kernels", "")], store[2][("kernels", DIRTY_WORDS)]
    view = _build(store, "/regression", {"baseline": f"run:{plain_micro}", "current": f"run:{dirty_micro}"})
    assert view.params["current"] == f"run:{dirty_micro}"
    assert any(f"run {dirty_micro}: {DIRTY_WORDS}" in n for n in view.notes)
    (current,) = [f for f in view.filters if f.name == "current"]
    assert dict(current.options)[f"run:{dirty_micro}"].endswith(f" · marked: {DIRTY_WORDS}")
    plain_e2e = store[2][("ltx_e2e", "")]
    plain = _build(store, "/regression", {"baseline": f"run:{plain_e2e}", "current": f"run:{plain_micro}"})
    assert plain.params["current"] == f"run:{plain_micro}"
    assert not any("Marked run" in n for n in plain.notes), "two plain runs: no mark"
