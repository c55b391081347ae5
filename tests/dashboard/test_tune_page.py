"""The Tune page in a real browser, on a store holding a real tune run (a tiny rmsnorm plan run by `python -m workers
run` through Triton's interpreter, imported): time against configuration with the current choice and the winner
marked, filters in the URL, and the Runs page's link to it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from orchestrator.plan.jobs import code_version, job_key, plan_key
from orchestrator.plan.tune import plan_tune
from orchestrator.store import session
from orchestrator.store.query import tune_queries
from workers.runtime import runner

from .conftest import REPO, child_env, import_files, start_server, stop_server
from .pagetools import TIMEOUT_S, choose, console_errors, load, wait_figure

pytestmark = pytest.mark.xdist_group("dashboard-browser")
SHAPES = [[2, 8, 64], [2, 8, 128]]


@pytest.fixture(scope="module")
def tune_store(tmp_path_factory) -> str:
    where = tmp_path_factory.mktemp("tune")
    code = code_version()
    specs = plan_tune("rmsnorm", SHAPES, ["fp32"], "any", None, {"rep_ms": 5.0, "rounds": 2, "warmup_ms": 1.0})
    for s in specs:
        s.impls = s.impls[:4]
        s.key = job_key(s, code)
    header = {"sweep": "tune", "config": {}, "plan_key": plan_key(specs), **code.to_dict(specs)}
    runner.write_plan(where / "plan.jsonl", header, specs)
    proc = subprocess.run(
        [sys.executable, "-m", "workers", "run", str(where / "plan.jsonl"), "--out", str(where / "r.jsonl")],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    url = session.sqlite_url_for(where / "kernelfleet.db")
    import_files(url, [where / "r.jsonl"])
    session.dispose_engines()
    return url


@pytest.fixture(scope="module")
def tune_server(tune_store: str):
    proc, base = start_server(tune_store)
    yield base
    stop_server(proc)


def test_tune_page_marks_the_current_choice_and_the_winner_with_filters_in_the_url(browser, tune_server, tune_store):
    (run,) = tune_queries.tune_runs(tune_store)
    rows = {r["shape_key"]: r for r in tune_queries.tune_results(tune_store, run["id"])}
    browser.get_log("browser")
    load(browser, f"{tune_server}/tune")
    assert browser.find_element(By.CSS_SELECTOR, "#page h2").text == "Tune"
    (bars,) = wait_figure(browser, "tune-figure")
    first = rows["2x8x64"]
    assert sorted(bars["x"]) == sorted(first["candidates"])
    roles = [t for t in bars["text"] if t]
    assert sum("current" in t for t in roles) == 1 and sum("winner" in t for t in roles) == 1
    assert bars["x"][bars["text"].index(next(t for t in bars["text"] if "current" in t))] == first["current"]
    assert bars["y"] == sorted(bars["y"])  # fastest first: the winner leads

    choose(browser, "shape", "2x8x128")
    WebDriverWait(browser, TIMEOUT_S).until(lambda d: "shape=2x8x128" in d.current_url)
    url = browser.current_url
    load(browser, tune_server + "/")
    load(browser, url)
    (bars,) = wait_figure(browser, "tune-figure")
    assert sorted(bars["x"]) == sorted(rows["2x8x128"]["candidates"])
    assert "2x8x128" in browser.find_element(By.CSS_SELECTOR, "#filter-shape").text
    views = browser.find_elements(By.CSS_SELECTOR, "#table-jobs a[href*='/tune?run=']")
    assert len(views) == len(SHAPES)
    # correctness as a verdict and the margin in percent, rounded: not 1 and a raw fraction
    jobs_text = browser.find_element(By.CSS_SELECTOR, "#table-jobs").text
    candidates_text = browser.find_element(By.CSS_SELECTOR, "#table-candidates").text
    assert "margin (%)" in jobs_text and "median µs" in candidates_text
    job_rows = [line.split() for line in jobs_text.splitlines() if line.startswith("rmsnorm ")]
    margins = [words[6] for words in job_rows]  # kernel shape dtype bucket current winner margin ...
    assert len(margins) == len(SHAPES) and all(len(m.split(".")[1]) == 1 for m in margins), margins
    verdicts = [line.split()[-1] for line in candidates_text.splitlines() if line.startswith("triton[")]
    assert verdicts and set(verdicts) <= {"true", "false"}, verdicts
    assert not console_errors(browser), console_errors(browser)


def test_the_runs_page_links_a_tune_run_to_the_tune_page(browser, tune_server, tune_store):
    (run,) = tune_queries.tune_runs(tune_store)
    load(browser, tune_server + "/runs")
    links = browser.find_elements(By.CSS_SELECTOR, f"#table-runs a[href='/tune?run={run['id']}']")
    assert links
    load(browser, links[0].get_attribute("href"))
    assert browser.find_element(By.CSS_SELECTOR, "#page h2").text == "Tune"
    assert f"run {run['id']} " in browser.find_element(By.CSS_SELECTOR, "#filter-run").text
    assert wait_figure(browser, "tune-figure")


def test_the_tune_page_says_how_to_fill_it_when_no_tune_run_is_stored(tmp_path):
    from dashboard import pages
    from orchestrator.store import migrate

    url = session.sqlite_url_for(Path(tmp_path) / "kf.db")
    migrate.upgrade(url)
    view = pages.tune.build(url, {})
    assert not view.figures and "+sweep=tune" in view.notes[0]
