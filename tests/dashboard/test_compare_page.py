"""The Compare page in a real browser: two runs side by side in AG Grid tables (sortable, CSV equal to the page),
filters in the URL, per-kernel plots, and the Runs page's link to it."""

from __future__ import annotations

import csv
import io
import urllib.parse
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from orchestrator.store.query import compare_queries, run_queries

from .pagetools import TIMEOUT_S, choose, console_errors, load, wait_figure

pytestmark = pytest.mark.xdist_group("dashboard-browser")

_ROWS_JS = (
    "var api = window.dash_ag_grid && dash_ag_grid.getApi(arguments[0]);"
    "if (!api) return null; var out = [];"
    "api.forEachNodeAfterFilterAndSort(function (n) { out.push(n.data); });"
    "return JSON.stringify(out);"
)


def _grid_rows(driver, table: str) -> list[dict]:
    import json

    WebDriverWait(driver, TIMEOUT_S).until(lambda d: d.execute_script(_ROWS_JS, f"table-{table}"))
    return json.loads(driver.execute_script(_ROWS_JS, f"table-{table}"))


def _csv(url: str) -> list[dict]:
    with urllib.request.urlopen(url, timeout=120) as r:
        return list(csv.DictReader(io.StringIO(r.read().decode())))


def _pair(url: str) -> tuple[int, int]:
    """A run with micro jobs and the previous run of its sweep, both with series on the same device."""
    previous = compare_queries.previous_runs(url)
    micro = set(compare_queries.compare_choices(url)["micro"])
    for run in run_queries.list_runs(url, limit=100):
        rid = run["id"]
        if rid in micro and previous.get(rid) in micro:
            if compare_queries.compare(url, [previous[rid]], [rid])["counts"]["series"]:
                return previous[rid], rid
    raise AssertionError("the filled store has no two comparable runs")


@pytest.mark.slow
def test_compare_page_shows_the_comparison_sortable_with_its_csv_and_filters_in_the_url(browser, server, filled_store):
    base, cur = _pair(filled_store)
    expected = compare_queries.compare(filled_store, [base], [cur])
    browser.get_log("browser")
    load(browser, f"{server}/compare?baseline=run:{base}&current=run:{cur}")
    assert browser.find_element(By.CSS_SELECTOR, "#page h2").text == "Compare"
    assert browser.find_elements(By.CSS_SELECTOR, "#table-series .ag-root")
    rows = _grid_rows(browser, "series")
    assert len(rows) == len(expected["series"]) and len(rows) > 0
    link = browser.find_element(By.CSS_SELECTOR, "#csv-series").get_attribute("href")
    from_csv = _csv(link)
    assert sorted((r["kernel"], r["impl"], r["shape"], r["dtype"]) for r in from_csv) == sorted(
        (r["kernel"], r["impl"], r["shape"], r["dtype"]) for r in rows
    )
    assert f"baseline=run%3A{base}" in link and f"current=run%3A{cur}" in link
    assert wait_figure(browser, "compare-0")

    # sortable: a click on the ratio header sorts the rows by ratio
    header = browser.find_element(By.CSS_SELECTOR, "#table-series .ag-header-cell[col-id=ratio]")
    header.click()
    WebDriverWait(browser, TIMEOUT_S).until(
        lambda d: (
            [r["ratio"] for r in _grid_rows(d, "series") if r.get("ratio") is not None]
            == sorted(r["ratio"] for r in rows if r.get("ratio") is not None)
        )
    )

    # a filter goes into the URL, and the URL alone reproduces the view
    kernel = sorted({r["kernel"] for r in rows})[0]
    choose(browser, "kernel", kernel)
    WebDriverWait(browser, TIMEOUT_S).until(lambda d: f"kernel={kernel}" in d.current_url)
    WebDriverWait(browser, TIMEOUT_S).until(lambda d: all(r["kernel"] == kernel for r in _grid_rows(d, "series")))
    url = browser.current_url
    load(browser, server + "/")
    load(browser, url)
    filtered = _grid_rows(browser, "series")
    assert filtered and all(r["kernel"] == kernel for r in filtered)
    assert len(filtered) == sum(r["kernel"] == kernel for r in expected["series"])
    query = urllib.parse.urlparse(browser.find_element(By.CSS_SELECTOR, "#csv-series").get_attribute("href")).query
    assert f"kernel={kernel}" in query
    assert not console_errors(browser), console_errors(browser)


@pytest.mark.slow
def test_the_runs_page_links_a_run_to_its_comparison_with_the_previous_run(browser, server, filled_store):
    previous = compare_queries.previous_runs(filled_store)
    load(browser, server + "/runs")
    links = browser.find_elements(By.CSS_SELECTOR, "#table-runs a[href^='/compare?run=']")
    assert links
    href = links[0].get_attribute("href")
    run_id = int(href.rsplit("=", 1)[1])
    load(browser, href)
    assert browser.find_element(By.CSS_SELECTOR, "#filter-current").text.find(f"run {run_id} ") >= 0
    assert browser.find_element(By.CSS_SELECTOR, "#filter-baseline").text.find(f"run {previous[run_id]} ") >= 0


# Every page that shows a run, and the Compare filters its link sets besides the run (the row's kernel, GPU type,
# reading; the End to end page compares ms per step).
RUN_PAGES = {
    "/": ("metric", "kernel", "gpu"),
    "/trends": ("metric", "kernel", "gpu"),
    "/bandwidth": ("metric", "kernel", "gpu"),
    "/e2e": ("metric", "gpu"),
    "/profiles": ("kernel", "gpu"),
    # the shipped ISA history's plain runs are one run (the two experiments on uncommitted trees are marked): its
    # links show with the marked runs shown
    "/isa?marked=show": ("kernel",),
    "/runs": (),
}


@pytest.mark.slow
def test_every_page_that_shows_a_run_links_it_to_its_comparison(browser, server, filled_store):
    previous = compare_queries.previous_runs(filled_store)
    for path, filters in RUN_PAGES.items():
        load(browser, server + path)
        WebDriverWait(browser, TIMEOUT_S).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#page [id^=table-] a[href*='/compare?run=']")
        )
        href = browser.find_element(By.CSS_SELECTOR, "#page [id^=table-] a[href*='/compare?run=']").get_attribute(
            "href"
        )
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(href).query))
        assert set(params) == {"run", *filters}, (path, href)
        run_id = int(params["run"])
        assert run_id in previous, (path, href)
        load(browser, href)
        assert f"run {run_id} " in browser.find_element(By.CSS_SELECTOR, "#filter-current").text, (path, href)
        assert f"run {previous[run_id]} " in browser.find_element(By.CSS_SELECTOR, "#filter-baseline").text
        page = browser.find_element(By.CSS_SELECTOR, "#page").text
        assert "Nothing to compare" not in page and "no such filter" not in page, (path, page[:500])
        assert "not a value of" not in page, (path, page[:500])
        rows = _grid_rows(browser, "series")
        assert rows, (path, href)
        if "kernel" in filters:
            assert {r["kernel"] for r in rows} == {params["kernel"]}, (path, href)
        if params.get("metric") == "ms_per_step":  # an end-to-end run: its steps, per mode
            assert "ms_per_step (ms)" in page
