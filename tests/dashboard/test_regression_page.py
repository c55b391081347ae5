"""The Regression page: why one series changed between two runs, on a store holding both sides' micro, profile and
isa jobs (written through the real writer, tests/support/regression_sides.py): the view's tables and bars, and the
page in a real browser with its filters in the URL."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from dashboard import pages
from dashboard.pages.regression import FIGURE_ID
from dashboard.view import link_target
from orchestrator.store import migrate, session
from orchestrator.store.writer import StoreWriter
from tests.store.conftest import Factories
from tests.support.regression_sides import side

from .conftest import start_server, stop_server
from .pagetools import console_errors, load, wait_figure

pytestmark = pytest.mark.xdist_group("dashboard-browser")
SERIES = "rmsnorm|2x1320x2048|bf16|triton"


@pytest.fixture(scope="module")
def sides_store(tmp_path_factory) -> str:
    url = session.sqlite_url_for(tmp_path_factory.mktemp("regression") / "kernelfleet.db")
    migrate.upgrade(url)
    writer, f = StoreWriter(url), Factories()
    side(writer, f, "aaaa1111", 1_800_000_000.0, time_us=10.0, warps=8, occupancy=8, clones=1)
    side(writer, f, "bbbb2222", 1_800_000_100.0, time_us=13.0, warps=4, occupancy=4, clones=3)
    writer.close()
    session.dispose_engines()
    return url


def test_the_view_names_the_change_and_draws_both_sides(sides_store):
    view = pages.build(sides_store, "/regression", {"baseline": "run:1", "current": "run:2"}, sides_store)
    assert view.params["series"] == SERIES  # the only series, the default
    changes = [r["change"] for r in view.table("changes").rows]
    assert any("launch config num_warps 8 → 4" in c for c in changes)
    assert any("kernel copy_kernel: launches per call 1 → 3" in c for c in changes)
    kernels = view.table("kernels").rows
    assert {(r["side"], r["name"]) for r in kernels} == {
        (s, n) for s in ("baseline", "current") for n in ("_rms_norm_kernel", "copy_kernel")
    }
    launches = {r["side"]: r for r in view.table("launches").rows}
    assert launches["baseline"]["num_warps"] == 8 and launches["current"]["num_warps"] == 4
    (fig,) = view.figures
    assert [t.name for t in fig.figure.data] == ["baseline", "current"]
    assert any("1.3" in n for n in view.notes)  # the ratio current / baseline
    assert any("SM clock" in n for n in view.notes)  # what no side captured is said


def test_compare_links_each_series_to_its_explanation(sides_store):
    view = pages.build(sides_store, "/compare", {"baseline": "run:1", "current": "run:2"}, sides_store)
    table = view.table("series")
    (row,) = [r for r in table.rows if r["impl"] == "triton"]
    assert link_target(table.links["why"], row, "why") == (
        "/regression?baseline=run:1&current=run:2&series=rmsnorm%7C2x1320x2048%7Cbf16%7Ctriton"
    )


def test_a_series_no_side_has_is_a_note(sides_store):
    view = pages.build(sides_store, "/regression", {"baseline": "run:1", "current": "run:2", "series": "x|1|f|t"}, "")
    assert any(n.startswith("series=x|1|f|t: not a value") for n in view.notes)
    assert view.params["series"] == SERIES


@pytest.mark.slow
def test_regression_page_in_the_browser(browser, sides_store):
    proc, base = start_server(sides_store)
    try:
        browser.get_log("browser")
        load(browser, f"{base}/regression?baseline=run:1&current=run:2&series={SERIES}")
        assert browser.find_element(By.CSS_SELECTOR, "#page h2").text == "Regression"
        traces = wait_figure(browser, FIGURE_ID)
        assert [t["name"] for t in traces] == ["baseline", "current"]
        assert set(traces[0]["y"]) == {"_rms_norm_kernel", "copy_kernel"}
        by_name = dict(zip(traces[1]["y"], traces[1]["x"]))
        assert by_name["copy_kernel"] == pytest.approx(0.3)
        text = browser.find_element(By.CSS_SELECTOR, "#page").text
        assert "launch config num_warps 8 → 4" in text
        assert not console_errors(browser)
    finally:
        stop_server(proc)
