"""Driving the dashboard in the browser: load a page and wait for Dash to finish, read a figure's data, pick a
filter value, read the console."""

from __future__ import annotations

import json
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT_S = 60

_IDLE_JS = (
    "return document.querySelector('#page h2') !== null && "
    "document.querySelector('[data-dash-is-loading=\"true\"]') === null && "
    "document.querySelectorAll('._dash-loading, ._dash-loading-callback').length === 0"
)


def wait_idle(driver, timeout: float = TIMEOUT_S) -> None:
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(_IDLE_JS))
    time.sleep(0.3)
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(_IDLE_JS))


def load(driver, url: str) -> float:
    """Open ``url`` and wait until the page is rendered; seconds taken."""
    t0 = time.perf_counter()
    driver.get(url)
    wait_idle(driver)
    return time.perf_counter() - t0


def console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def figure_data(driver, figure_id: str) -> list[dict]:
    """The traces of the Plotly figure in the dcc.Graph ``figure_id`` (name, x, y, z, text)."""
    raw = driver.execute_script(
        "var g = document.getElementById(arguments[0]);"
        "var gd = g && g.getElementsByClassName('js-plotly-plot')[0];"
        "if (!gd || !gd.data) return null;"
        "return JSON.stringify(gd.data.map(function (t) { return {name: t.name, type: t.type, x: t.x, y: t.y,"
        " z: t.z, text: t.text}; }));",
        figure_id,
    )
    return json.loads(raw) if raw else []


def wait_figure(driver, figure_id: str, timeout: float = TIMEOUT_S) -> list[dict]:
    WebDriverWait(driver, timeout).until(lambda d: figure_data(d, figure_id))
    return figure_data(driver, figure_id)


def choose(driver, name: str, label: str) -> None:
    """Pick ``label`` in the filter ``name``."""
    driver.find_element(By.CSS_SELECTOR, f"#filter-{name} button.dash-dropdown").click()
    WebDriverWait(driver, TIMEOUT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[role=option]"))
    options = [o for o in driver.find_elements(By.CSS_SELECTOR, "[role=option]") if o.text == label]
    assert options, f"filter {name} has no option {label!r}"
    options[0].click()


def filter_value(driver, name: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, f"#filter-{name} .dash-dropdown-value").text
