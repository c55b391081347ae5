"""The dashboard in a real browser (headless Chromium) against a real server and a store filled by a real smoke
sweep and imported real H200 results."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import WebDriverWait
from sqlalchemy import create_engine, text

from dashboard.pages import PAGES
from dashboard.pages.overview import MARKED, SPEEDUP_TRACES
from orchestrator.stats.regression_rule import STATUS_WORDS
from orchestrator.stats.series_verdicts import is_cpu_device
from orchestrator.store.query import regression_queries

from .conftest import REPO, h200_files, import_files, start_server, stop_server
from .pagetools import choose, console_errors, filter_value, load, wait_figure, wait_idle

# Every test here shares the session's filled store, server and browser: one worker builds them once
# (README: `--dist loadgroup`), instead of each worker building its own (a smoke sweep and imports, minutes on 2 cores).
pytestmark = pytest.mark.xdist_group("dashboard-browser")

PAGE_PATHS = list(PAGES)
# The README's two screenshots: written to docs/img/ when KERNELFLEET_UPDATE_DOCS_SCREENSHOTS=1 (else only to the
# artifacts folder, so a test run leaves the checkout as it was).
README_SHOTS = {
    "/": "dashboard-overview.png",
    "/trends?kernel=rmsnorm&gpu_type=h200&impl=triton": "dashboard-trends.png",
}
DOCS_IMG = REPO / "docs" / "img"
# The names of the trend figure's verdict marker traces begin with the rule's words.
VERDICT_MARKERS = ("regression", "improvement", *STATUS_WORDS.values())


def _name(path: str) -> str:
    return PAGES[path][0]


def _csv(url: str) -> list[dict]:
    with urllib.request.urlopen(url, timeout=60) as r:
        return list(csv.DictReader(io.StringIO(r.read().decode())))


def _num(x: str | None) -> float | None:
    return None if x in (None, "") else float(x)


def _series(traces: list[dict]) -> list[dict]:
    """The trend figure's median lines (not the IQR bands, the flag markers, the markers on the y range's edge)."""
    return [
        t
        for t in traces
        if t["name"]
        and not t["name"].endswith(" IQR")
        and not t["name"].startswith(VERDICT_MARKERS)
        and t["name"] != "outside the y range"
    ]


def _speedups(traces: list[dict]) -> list[dict]:
    """The Overview's two speed-up heat maps (vs eager first), not the grey cells drawn over them."""
    return [t for t in traces if t["type"] == "heatmap" and t["name"] in SPEEDUP_TRACES]


@pytest.mark.slow
@pytest.mark.parametrize("path", PAGE_PATHS, ids=_name)
def test_page_loads_without_console_errors(browser, server, artifacts_dir, path):
    browser.get_log("browser")  # drop what earlier pages left
    seconds = load(browser, server + path)
    assert browser.find_element("css selector", "#page h2").text == PAGES[path][1]
    assert not browser.find_elements("css selector", "#empty-store")
    errors = console_errors(browser)
    assert not errors, errors
    browser.save_screenshot(str(artifacts_dir / f"dashboard-{_name(path)}.png"))
    print(f"{path}: loaded in {seconds:.2f} s")


@pytest.mark.slow
def test_readme_screenshots(browser, server, artifacts_dir):
    for url, name in README_SHOTS.items():
        load(browser, server + url)
        assert browser.find_elements("css selector", ".js-plotly-plot")
        assert not console_errors(browser)
        browser.save_screenshot(str(artifacts_dir / name))
        if os.environ.get("KERNELFLEET_UPDATE_DOCS_SCREENSHOTS") == "1":
            DOCS_IMG.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(DOCS_IMG / name))


@pytest.mark.slow
def test_overview_has_one_cell_per_kernel_and_gpu_type(browser, server, filled_store):
    engine = create_engine(filled_store)
    with engine.connect() as c:  # straight from the tables, not through the dashboard's queries
        expected = set(
            c.execute(
                text(
                    "SELECT DISTINCT j.kernel, d.gpu_type FROM measurements m "
                    "JOIN job_attempts a ON a.job_id = m.job_id AND a.attempt = m.attempt "
                    "JOIN jobs j ON j.id = m.job_id JOIN devices d ON d.hardware_key = a.hardware_key "
                    "WHERE j.kind = 'micro' AND m.impl = 'triton' AND m.metric = 'time_us' "
                    "AND a.status IN ('ok', 'incorrect', 'skipped')"
                )
            ).all()
        )
    engine.dispose()
    assert {g for _, g in expected} >= {"cpu", "h200"}
    load(browser, server + "/")
    traces = wait_figure(browser, "overview-heatmap")
    heat = _speedups(traces)
    assert len(heat) == 2
    for trace in heat:
        shown = {
            (k, g) for i, k in enumerate(trace["y"]) for j, g in enumerate(trace["x"]) if trace["text"][i][j] != ""
        }
        assert shown == expected
    # the CPU column (all a CPU-only store has): Triton's interpreter, drawn as grey cells that say so, per panel
    grey = [t for t in traces if t["name"] == MARKED]
    assert len(grey) == 2
    for trace, speed in zip(grey, heat):
        cells = [(i, j, k, g) for i, k in enumerate(trace["y"]) for j, g in enumerate(trace["x"])]
        cpu = [(i, j) for i, j, k, g in cells if (k, g) in expected and g == "cpu"]
        assert cpu and all(trace["z"][i][j] is not None and trace["text"][i][j] == "interpreted" for i, j in cpu)
        assert all(speed["z"][i][j] is None for i, j in cpu), "an interpreter's time is never coloured as a speed"


@pytest.mark.slow
def test_overview_marks_failed_correctness_and_clicks_through_to_the_trend(browser, server, filled_store):
    load(browser, server + "/")
    heat = wait_figure(browser, "overview-heatmap")[0]
    for i, row in enumerate(heat["text"]):
        for j, label in enumerate(row):
            if label == "✗ incorrect":
                assert heat["z"][i][j] is None  # marked, never coloured as a win
    from selenium.webdriver.common.action_chains import ActionChains

    # a cell with a timing (which cell lies at the area's centre depends on the kernels the store holds)
    kernel, gpu_type = next(
        (k, g)
        for i, k in enumerate(heat["y"])
        for j, g in enumerate(heat["x"])
        if heat["text"][i][j] != "" and heat["z"][i][j] is not None
    )
    plot = browser.find_element("css selector", "#overview-heatmap .nsewdrag")  # the first heat-map's area
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", plot)
    x, y = browser.execute_script(
        "var gd = document.querySelector('#overview-heatmap .js-plotly-plot'), L = gd._fullLayout;"
        "return [L.xaxis.d2p(arguments[0]), L.yaxis.d2p(arguments[1])];",
        gpu_type,
        kernel,
    )
    size = plot.size
    ActionChains(browser).move_to_element_with_offset(
        plot, int(x - size["width"] / 2), int(y - size["height"] / 2)
    ).click().perform()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 60).until(lambda d: "/trends?" in d.current_url)
    wait_idle(browser)
    params = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(browser.current_url).query, keep_blank_values=True))
    assert (params["kernel"], params["gpu_type"], params["impl"]) == (kernel, gpu_type, "triton"), params
    assert params["shape"] == "" and filter_value(browser, "shape") == "all", "every shape, not the first"
    assert filter_value(browser, "kernel") == params["kernel"]
    assert wait_figure(browser, "trend-figure")
    plotted = {r["shape"] for r in _csv(browser.find_element("css selector", "#csv-points").get_attribute("href"))}
    engine = create_engine(filled_store)
    with engine.connect() as c:  # the shapes of the series, straight from the tables
        measured = set(
            c.execute(
                text(
                    "SELECT DISTINCT j.shape_key FROM measurements m JOIN job_attempts a ON a.job_id = m.job_id "
                    "AND a.attempt = m.attempt JOIN jobs j ON j.id = m.job_id JOIN devices d "
                    "ON d.hardware_key = a.hardware_key WHERE j.kind = 'micro' AND m.impl = 'triton' "
                    "AND m.metric = 'time_us' AND j.kernel = :k AND d.gpu_type = :g"
                ),
                {"k": kernel, "g": gpu_type},
            ).scalars()
        )
    engine.dispose()
    assert len(measured) > 1 and plotted == measured


@pytest.mark.slow
def test_trend_filter_changes_the_figure_and_the_url_reproduces_the_view(browser, server):
    load(browser, server + "/trends?kernel=rmsnorm&gpu_type=h200")
    before = wait_figure(browser, "trend-figure")
    choose(browser, "impl", "triton")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 60).until(lambda d: "impl=triton" in d.current_url)
    wait_idle(browser)
    after = wait_figure(browser, "trend-figure")
    assert after != before
    assert {t["name"].split(" · ")[0] for t in _series(after)} == {"triton"}
    assert len({t["name"] for t in before}) > len({t["name"] for t in after})
    url = browser.current_url
    load(browser, server + "/runs")
    load(browser, url)  # a fresh load of the link shows the same view
    assert filter_value(browser, "impl") == "triton"
    assert wait_figure(browser, "trend-figure") == after


@pytest.mark.slow
def test_csv_download_equals_what_the_page_shows(browser, server):
    load(browser, server + "/trends?kernel=rmsnorm&gpu_type=h200&impl=triton")
    traces = _series(wait_figure(browser, "trend-figure"))
    link = browser.find_element("css selector", "#csv-points").get_attribute("href")
    rows = _csv(link)
    assert rows and len(rows) == sum(len(t["y"]) for t in traces)
    plotted = sorted((t["name"], x, y) for t in traces for x, y in zip(t["x"], t["y"]))
    from_csv = sorted(
        (f"{r['impl']} · {r['shape']} · {r['dtype']} · {r['gpu_type']}", r["measured_at"], _num(r["median"]))
        for r in rows
    )
    assert plotted == from_csv
    load(browser, server + "/")
    heat = wait_figure(browser, "overview-heatmap")[0]
    cells = _csv(browser.find_element("css selector", "#csv-cells").get_attribute("href"))
    by = {(r["kernel"], r["gpu_type"]): _num(r["speedup_vs_eager"]) for r in cells}
    shown = {
        (k, g): heat["z"][i][j]
        for i, k in enumerate(heat["y"])
        for j, g in enumerate(heat["x"])
        if heat["text"][i][j] != ""
    }
    assert set(shown) == set(by)
    labels = {(k, g): heat["text"][i][j] for i, k in enumerate(heat["y"]) for j, g in enumerate(heat["x"])}
    for key, value in shown.items():  # the colour is the log2 of the speed-up (a log colour scale)
        assert (value is None and by[key] is None) or math.isclose(2**value, by[key], rel_tol=1e-9), key
        if value is not None:
            assert labels[key] == f"{by[key]:.2f}×", "the value is printed in its cell"


@pytest.mark.slow
def test_overview_table_has_readable_headers_and_rounded_speedups(browser, server):
    load(browser, server + "/")
    WebDriverWait(browser, 60).until(lambda d: d.find_elements("css selector", "#table-cells th"))
    headers = [h.text for h in browser.find_elements("css selector", "#table-cells th")]
    assert "GPU type" in headers and "× eager" in headers and "speedup_vs_eager" not in headers, headers
    column = headers.index("× eager")
    cells = [
        r.find_elements("css selector", "td")[column].text
        for r in browser.find_elements("css selector", "#table-cells tbody tr")
        if r.find_elements("css selector", "td")
    ]
    numbers = [c for c in cells if c]
    assert numbers and all(len(c.split(".")[1]) == 2 for c in numbers), cells
    rows = _csv(browser.find_element("css selector", "#csv-cells").get_attribute("href"))
    assert "speedup_vs_eager" in rows[0], "the CSV keeps the column names and every digit"


def _times_by_impl(url: str, run_id: int, kernel: str, gpu_type: str) -> dict[str, dict[int, float]]:
    """impl -> job id -> time_us of ``kernel`` on ``gpu_type`` in run ``run_id``, straight from the tables."""
    engine = create_engine(url)
    with engine.connect() as c:
        rows = c.execute(
            text(
                "SELECT m.impl, j.id, m.value FROM measurements m JOIN job_attempts a ON a.job_id = m.job_id "
                "AND a.attempt = m.attempt JOIN jobs j ON j.id = m.job_id JOIN devices d "
                "ON d.hardware_key = a.hardware_key WHERE j.kind = 'micro' AND m.metric = 'time_us' "
                "AND a.run_id = :r AND j.kernel = :k AND d.gpu_type = :g AND a.status IN ('ok', 'incorrect') "
                "AND m.value IS NOT NULL"
            ),
            {"r": run_id, "k": kernel, "g": gpu_type},
        ).all()
    engine.dispose()
    out: dict[str, dict[int, float]] = {}
    for impl, job, value in rows:
        out.setdefault(impl, {})[job] = value
    return out


@pytest.mark.slow
def test_overview_shows_the_fastest_implementation_per_kernel_and_gpu_type(browser, server, filled_store):
    from dashboard.colors import impl_color

    load(browser, server + "/?view=fastest")
    (heat,) = [t for t in wait_figure(browser, "overview-heatmap") if t["type"] == "heatmap"]
    rows = _csv(browser.find_element("css selector", "#csv-fastest").get_attribute("href"))
    assert {(r["kernel"], r["gpu_type"]) for r in rows} >= {("rmsnorm", "cpu"), ("rmsnorm", "h200")}
    for r in rows:
        times = _times_by_impl(filled_store, int(r["run_id"]), r["kernel"], r["gpu_type"])
        competing = [i for i in r["competitors"].split(", ") if i]
        jobs = set().union(*(t.keys() for t in times.values()))
        assert all(set(times[i]) == jobs for i in competing), r
        geo = {i: math.exp(sum(math.log(times[i][j]) for j in jobs) / len(jobs)) for i in competing}
        assert r["fastest"] == min(geo, key=geo.get), r
        if r["gpu_type"] == "cpu":
            assert "triton" not in competing and "triton (interpreted)" in r["left_out"], "the interpreter never wins"
        i, j = heat["y"].index(r["kernel"]), heat["x"].index(r["gpu_type"])
        assert heat["text"][i][j].startswith(f"<b>{r['fastest']}</b>")
    # a cell's colour is its implementation's colour on every page
    colours = browser.execute_script(
        "var gd = document.querySelector('#overview-heatmap .js-plotly-plot'), t = gd._fullData[0];"
        "return t.colorscale.map(function (s) { return s[1]; });"
    )
    winners = sorted({r["fastest"] for r in rows})
    assert [c.lower() for c in colours[::2]] == [impl_color(w).lower() for w in winners]


@pytest.mark.slow
def test_trends_marks_exactly_the_regressions_commands_verdicts_in_its_words(browser, server, filled_store):
    load(browser, server + "/trends?kernel=rmsnorm&gpu_type=h200&last=all")
    traces = wait_figure(browser, "trend-figure")
    rows = _csv(browser.find_element("css selector", "#csv-points").get_attribute("href"))
    on_page = {
        (r["impl"], r["shape"], r["dtype"], r["hardware_key"], int(r["run_id"])): r["verdict"]
        for r in rows
        if r["verdict"]
    }
    markers = [t for t in traces if t["name"] and t["name"].startswith(VERDICT_MARKERS)]
    assert sum(len(t["y"]) for t in markers) == len(on_page)
    for t in markers:  # a marker's legend entry names the verdict in the rule's words
        assert any(t["name"].startswith(w) for w in VERDICT_MARKERS)
    from_cli = {}
    for run in sorted({int(r["run_id"]) for r in rows}):
        report = regression_queries.regression_report(
            filled_store, run, kernel="rmsnorm", include_improvements=True, include_cpu=True
        )
        for f in report["flags"]:
            if f["run_id"] == run and is_cpu_device(f["hardware_key"]) is False:
                key = (f["impl"], "x".join(map(str, f["shape"])), f["dtype"], f["hardware_key"], run)
                from_cli[key] = f["verdict"]
    series_shown = {(r["impl"], r["shape"], r["dtype"], r["hardware_key"]) for r in rows}  # at most MAX_SERIES
    points_shown = {(r["impl"], r["shape"], r["dtype"], r["hardware_key"], int(r["run_id"])) for r in rows}
    assert on_page == {k: v for k, v in from_cli.items() if k[:4] in series_shown and k in points_shown}
    note = browser.find_element("css selector", "#page").text
    assert "verdicts of the regression rule" in note


@pytest.mark.slow
def test_every_page_has_a_csv_per_table_and_sortable_tables(browser, server):
    for path in PAGE_PATHS:
        load(browser, server + path)
        links = browser.find_elements("css selector", "a[id^=csv-]")
        # a table's component (DataTable, AG Grid) loads its script on demand: wait for every table to be drawn
        WebDriverWait(browser, 60).until(lambda d: len(d.find_elements("css selector", "[id^=table-]")) >= len(links))
        tables = browser.find_elements("css selector", "[id^=table-]")
        assert links and len(links) == len(tables), path
        for a in links:
            assert _csv(a.get_attribute("href")) is not None
        # DataTable's sort buttons, or AG Grid's sortable headers (the Compare page)
        assert browser.find_elements("css selector", ".column-header--sort, .ag-header-cell-sortable"), path


@pytest.mark.slow
def test_profiles_page_offers_the_raw_capture(browser, server):
    load(browser, server + "/profiles")
    jobs = _csv(browser.find_element("css selector", "#csv-jobs").get_attribute("href"))
    assert any(j["kind"] == "profile" for j in jobs) and any(j["kind"] == "e2e" for j in jobs)
    profile_job = next(j for j in jobs if j["kind"] == "profile" and j["status"] == "ok")
    load(browser, server + f"/profiles?job={profile_job['job_id']}")
    assert wait_figure(browser, "profile-figure")
    arts = _csv(browser.find_element("css selector", "#csv-artifacts").get_attribute("href"))
    assert arts
    with urllib.request.urlopen(server + arts[0]["download"], timeout=60) as r:
        data = r.read()
    assert len(data) == int(arts[0]["size"]) > 0


@pytest.mark.slow
def test_the_server_never_writes_the_store(browser, filled_store, tmp_path):
    path = Path(urllib.parse.urlparse(filled_store).path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    proc, base = start_server(filled_store)
    try:
        for p in PAGE_PATHS:
            load(browser, base + p)
    finally:
        stop_server(proc)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@pytest.mark.slow
def test_empty_store_shows_the_fill_command_then_new_runs_appear_without_restart(browser, upgraded_store):
    proc, base = start_server(upgraded_store)
    try:
        for p in PAGE_PATHS:
            load(browser, base + p)
            command = browser.find_element("css selector", "#fill-command").text
            assert command.startswith("python -m orchestrator +sweep=smoke store.url=")
        import_files(upgraded_store, [f for f in h200_files() if "e2e" not in f.name][:1])
        load(browser, base + "/")
        assert not browser.find_elements("css selector", "#empty-store")
        assert wait_figure(browser, "overview-heatmap")
    finally:
        stop_server(proc)


def _plot(browser, figure_id: str) -> dict:
    """The drawn figure's y-axis type and, per trace, its name and line/marker colour."""
    import json

    raw = browser.execute_script(
        "var gd = document.getElementById(arguments[0]).getElementsByClassName('js-plotly-plot')[0];"
        "return JSON.stringify({ytype: gd._fullLayout.yaxis.type, traces: gd._fullData.map(function (t) {"
        " return {name: t.name, line: t.line && t.line.color, marker: t.marker && t.marker.color}; })});",
        figure_id,
    )
    return json.loads(raw)


@pytest.mark.slow
def test_an_implementation_keeps_its_colour_and_trends_has_a_log_scale(browser, server):
    from dashboard.colors import class_color, impl_color, mode_color

    load(browser, server + "/trends?kernel=rmsnorm&gpu_type=h200&scale=log")
    wait_figure(browser, "trend-figure")
    trend = _plot(browser, "trend-figure")
    assert trend["ytype"] == "log"
    lines = [t for t in trend["traces"] if t["name"] and " · " in t["name"] and not t["name"].endswith(" IQR")]
    lines = [t for t in lines if not t["name"].startswith(VERDICT_MARKERS)]
    assert lines and all(t["line"] == impl_color(t["name"].split(" · ")[0]) for t in lines)
    load(browser, server + "/bandwidth?kernel=rmsnorm")
    wait_figure(browser, "bandwidth-figure")
    points = [t for t in _plot(browser, "bandwidth-figure")["traces"] if not t["name"].startswith("copy ceiling")]
    assert points and all(t["marker"] == impl_color(t["name"]) for t in points)
    load(browser, server + "/e2e")
    wait_figure(browser, "e2e-trend")
    modes = _plot(browser, "e2e-trend")["traces"]
    assert modes and all(t["line"] == mode_color(t["name"].split(" · ")[-1]) for t in modes)  # setting · mode
    assert filter_value(browser, "job").startswith("run ")  # the newest job by default, not every job at once
    # Profiles: a profile job's bars in the colour of the implementation, an end-to-end step's by kernel class
    load(browser, server + "/profiles")
    jobs = _csv(browser.find_element("css selector", "#csv-jobs").get_attribute("href"))
    for kind in ("profile", "e2e"):
        job = next(j for j in jobs if j["kind"] == kind and j["status"] == "ok")
        load(browser, server + f"/profiles?job={job['job_id']}")
        wait_figure(browser, "profile-figure")
        (bars,) = _plot(browser, "profile-figure")["traces"]
        top = _csv(browser.find_element("css selector", "#csv-top").get_attribute("href"))
        part = filter_value(browser, "part")
        shown = [r for r in top if r["part"] == part][:20][::-1]
        expected = [class_color(r["class"]) if kind == "e2e" else impl_color(part) for r in shown]
        assert bars["marker"] == expected, kind
    # Compare: each implementation's baseline and current points
    load(browser, server + "/compare")
    wait_figure(browser, "compare-0")
    points = _plot(browser, "compare-0")["traces"]
    assert points and all(t["marker"] == impl_color(t["name"].rsplit(" ", 1)[0]) for t in points)


@pytest.mark.slow
def test_isa_page_draws_registers_spills_occupancy_and_load_width_per_target(browser, server):
    load(browser, server + "/isa?kernel=rmsnorm")
    traces = wait_figure(browser, "isa-figure")
    archs = {t["name"] for t in traces}
    assert any(a.startswith("gfx") for a in archs) and any(a.startswith("sm_") for a in archs), archs
    rows = _csv(browser.find_element("css selector", "#csv-isa").get_attribute("href"))
    assert rows and {r["kernel"] for r in rows} == {"rmsnorm"}
    assert {r["arch"] for r in rows} == archs


# The pages that leave marked runs out unless their "marked runs" filter shows them, and the table whose CSV says a
# row's marks (column marked).  The filled store's marked runs: the ISA results' two experiments on uncommitted trees
# (results/isa/conditions.json).
MARKED_PAGES = {"/bandwidth": "points", "/e2e": "modes", "/profiles": "jobs", "/isa?kernel=rmsnorm": "isa"}


@pytest.mark.slow
def test_pages_leave_marked_runs_out_until_the_filter_shows_them_marked(browser, server, filled_store):
    from dashboard.pages._common import MARKED_RUNS
    from orchestrator.store.query import run_queries

    marks = {str(r["id"]): r["marked"] for r in run_queries.list_runs(filled_store) if r["marked"]}
    assert marks, "the filled store holds marked runs"
    for path, table in MARKED_PAGES.items():
        load(browser, server + path)
        assert filter_value(browser, "marked") == MARKED_RUNS["leave"], path
        rows = _csv(browser.find_element("css selector", f"#csv-{table}").get_attribute("href"))
        assert not {r["run_id"] for r in rows} & set(marks), path
        assert all(r["marked"] == "" for r in rows), path
        choose(browser, "marked", MARKED_RUNS["show"])
        WebDriverWait(browser, 60).until(lambda d: "marked=show" in d.current_url)
        wait_idle(browser)
        assert filter_value(browser, "marked") == MARKED_RUNS["show"], path
        rows = _csv(browser.find_element("css selector", f"#csv-{table}").get_attribute("href"))
        assert all(r["marked"] == marks.get(r["run_id"], "") for r in rows), path
        if table == "isa":  # the experiments are shown, in their words, on the page too
            shown = {r["run_id"] for r in rows} & set(marks)
            page = browser.find_element("css selector", "#page").text
            assert shown and all(f"run {run}: {marks[run]}" in page for run in shown)
        assert not console_errors(browser), path


@pytest.mark.slow
def test_the_dashboard_is_served_by_a_production_server(server):
    with urllib.request.urlopen(server + "/", timeout=60) as r:
        assert r.headers["Server"] == "waitress", dict(r.headers)
    with urllib.request.urlopen(server + "/_dash-layout", timeout=60) as r:  # Dash's own routes through it too
        assert r.status == 200 and b"kernelfleet" in r.read()
