"""The Trends page's y range on a series with an old outlier: the recorded H200 rmsnorm results stored as eight
runs an hour apart, the third with triton 8× slower (a stale spike), the newest with triton 1.3× slower (a current
change).  The spike is left out of the range and drawn on its edge, the page says so, and the current change stays
in sight; "every point" gives the range back to Plotly."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from dashboard import pages
from dashboard.pages import trends
from orchestrator.interchange.importer import import_results
from orchestrator.plan.jobs import CodeVersion, job_key
from orchestrator.stats.series_verdicts import quartiles, quartiles_of
from orchestrator.store import session
from orchestrator.store.query import access
from tests.orchestrator.test_regressions_cli import RECORDED
from workers.spec import JobSpec

RUNS = 8
SPIKE_RUN, SPIKE = 3, 8.0
NOW = 1.3  # the newest run's triton: a change the range must keep
SHAPE = "2x4096x3072"


def _run_file(dst: Path, n: int, triton: float) -> Path:
    """The recorded results as run ``n``: its own plan and job keys, an hour after run n - 1, triton × ``triton``."""
    lines = gzip.open(RECORDED, "rt").read().splitlines()
    out, code = [], None
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if i == 0:
            obj["plan"]["plan_key"] = f"range-{n}"
            code = CodeVersion.from_dict(obj["plan"])
        else:
            obj["spec"]["params"]["seed"] = n
            obj["spec"]["key"] = obj["result"]["key"] = job_key(JobSpec.from_dict(obj["spec"]), code)
            obj["result"]["started_at"] += 3600 * n
            for m in obj["result"]["measurements"]:
                if m["metric"] == "time_us" and m["impl"] == "triton":
                    m["value"] *= triton
                    m["samples"] = [x * triton for x in m["samples"]]
        out.append(json.dumps(obj))
    dst.write_text("\n".join(out) + "\n")
    return dst


@pytest.fixture(scope="module")
def spiked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("range")
    url = session.sqlite_url_for(folder / "kf.db")
    for n in range(1, RUNS + 1):
        factor = SPIKE if n == SPIKE_RUN else NOW if n == RUNS else 1.0
        f = _run_file(folder / f"r{n}.jsonl", n, factor)
        assert import_results([str(f)], url, Console(file=io.StringIO())) == 0
    src = access.open_read_only(url)
    yield src, url
    src.dispose()
    session.dispose_engines()


def _view(spiked, **params):
    src, url = spiked
    return pages.build(src, "/trends", {"kernel": "rmsnorm", "shape": SHAPE, "scale": "linear", **params}, url)


def test_an_old_outlier_does_not_set_the_y_range_and_the_page_says_so(spiked):
    view = _view(spiked)
    rows = view.table("points").rows
    triton = [r for r in rows if r["impl"] == "triton"]
    assert len(triton) == RUNS
    spike, newest = triton[SPIKE_RUN - 1]["median"], triton[-1]["median"]
    others = [r["median"] for r in rows if r["median"] != spike]
    fig = view.figures[0].figure
    lo, hi = fig.layout.yaxis.range
    assert hi < spike, "the stale spike is outside the range"
    assert lo <= min(others) and max(others) <= hi and lo < newest < hi, "every other point, the newest change too"
    edge = [t for t in fig.data if t.name == trends.EDGE]
    assert len(edge) == 1 and list(edge[0].y) == [hi] and edge[0].marker.symbol == ("arrow-bar-up",)
    confirmed = {symbol for symbol, _ in trends.CONFIRMED_STYLE.values()}
    assert not confirmed & set(edge[0].marker.symbol), "an outlier's marker is not a regression's"
    assert f"{spike:.4g}" in edge[0].hovertext[0]
    assert any(n.startswith("y range: 1 old point(s)") and "left out of the range" in n for n in view.notes)


def test_every_point_gives_plotly_the_range_and_a_log_range_is_in_decades(spiked):
    every = _view(spiked, yrange="all").figures[0].figure
    assert every.layout.yaxis.range is None and not [t for t in every.data if t.name == trends.EDGE]
    log = _view(spiked, scale="log").figures[0].figure
    spike = max(v for t in log.data if t.name and " · " in t.name for v in t.y if v is not None)
    lo, hi = log.layout.yaxis.range
    assert 10**hi < spike


def test_a_current_change_is_never_an_outlier(spiked):
    view = _view(spiked, impl="triton")
    rows = view.table("points").rows
    flagged = trends.stale_outliers([{**r, "status": None, "direction": None} for r in rows], "time")
    assert [rows[i]["run_id"] for i in flagged] == [SPIKE_RUN]


def test_the_quartiles_of_all_points_at_once_are_each_points_to_the_bit():
    """series_verdicts.quartiles_of (one sort for every point) gives what series_verdicts.quartiles (numpy's weibull
    percentiles, one call a point) gives, on the recorded H200 repeats and on short, tied or empty ones."""
    samples = []
    for line in gzip.open(RECORDED, "rt").read().splitlines()[1:]:
        samples += [m["samples"] for m in json.loads(line)["result"]["measurements"] if m["samples"]]
    samples += [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0], [5.0, None, 1.0, 4.0, 2.0], [2.0] * 7, [], None]
    values = [float(i) for i in range(len(samples))]
    assert len(samples) > 40
    assert quartiles_of(samples, values) == [quartiles(s, v) for s, v in zip(samples, values)]
