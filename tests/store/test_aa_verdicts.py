"""One verdict everywhere, on the shipped H200 history: every A/A pair (identical code run again) confirms nothing,
and the Trends page's per-point verdicts are exactly what ``regressions RUN`` says for each run."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.interchange.importer import import_results
from orchestrator.stats.regression_rule import CONFIRMED
from orchestrator.store import migrate, session
from orchestrator.store.query import regression_queries, trend_queries
from orchestrator.store.query.access import read_session
from orchestrator.store.query.series_queries import series_by_key

H200 = Path(__file__).resolve().parents[2] / "results" / "h200"
# The A/A runs of results/h200: each group is one plan run again with the same code (docs/perf/regressions-h200.md).
AA_GROUPS = {
    "rmsnorm, picks not recorded": [
        "2026-12-01-1348-rmsnorm-aa-1",
        "2026-12-01-1350-rmsnorm-aa-2",
        "2026-12-01-1453-rmsnorm-aa-3",
        "2026-12-01-1455-rmsnorm-aa-4",
    ],
    "rmsnorm, picks recorded": [
        "2026-12-01-1657-rmsnorm-aa-5",
        "2026-12-01-1659-rmsnorm-aa-6",
        "2026-12-01-1700-rmsnorm-aa-7",
        "2026-12-01-1702-rmsnorm-aa-8",
    ],
    "kernels": ["2026-12-01-1351-kernels-aa-1", "2026-12-01-1441-kernels-aa-2"],
}
# Per call (the rule's default reading) and by the profiler's kernel time.  By graph replay two A/A comparisons still
# confirm a torch.compile step (docs/perf/regressions-h200.md lists them): not yet a reading the rule can gate on.
READINGS = ("time_us", "kernel_time_us")


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[str, dict[str, int]]:
    """Every kernel (non-e2e) results file of results/h200 imported in time order; the run id of each file."""
    url = session.sqlite_url_for(tmp_path_factory.mktemp("h200") / "h200.db")
    migrate.upgrade(url)
    kernels = tmp_path_factory.mktemp("kernel-results")  # a folder: each plan a run, in the order measured
    for f in H200.glob("*.jsonl.gz"):
        if "e2e" not in f.name:
            (kernels / f.name).symlink_to(f)
    out = io.StringIO()
    assert import_results([str(kernels)], url, Console(file=out, width=300)) == 0, out.getvalue()[-2000:]
    runs = {
        name: int(run_id) for run_id, name in re.findall(r"run (\d+) .*? from \S*?([^/\s]+)\.jsonl\.gz", out.getvalue())
    }
    session.dispose_engines()
    return url, runs


def _comparisons(runs: list[int]) -> list[tuple[list[int], list[int]]]:
    """Each run against the one before it, and for four runs the newer two against the older two."""
    pairs = [([b], [a]) for a, b in zip(runs, runs[1:])]
    if len(runs) == 4:
        pairs.append((runs[2:], runs[:2]))
    return pairs


@pytest.mark.slow
def test_every_aa_pair_of_the_shipped_history_confirms_nothing(history):
    url, run_of = history
    checked = 0
    for group, files in AA_GROUPS.items():
        runs = [run_of[f] for f in files]
        for current, baseline in _comparisons(runs):
            for reading in READINGS:
                report = regression_queries.regression_report(
                    url, current, baseline_run_ids=baseline, metric=reading, include_improvements=True
                )
                confirmed = [f for f in report["flags"] if f["status"] == CONFIRMED]
                assert not confirmed, (group, current, baseline, reading, confirmed)
                checked += report["series"]
    assert checked > 1000  # the comparisons judged real series
    # the example: four rmsnorm runs without picks, two a side: compile_max's step is "picks unknown"
    rms = [run_of[f] for f in AA_GROUPS["rmsnorm, picks not recorded"]]
    report = regression_queries.regression_report(url, rms[2:], baseline_run_ids=rms[:2], include_improvements=True)
    assert any(f["impl"] == "compile_max" and f["verdict"].endswith("(picks unknown)") for f in report["flags"])


@pytest.mark.slow
def test_trend_verdicts_are_the_regressions_commands_verdicts(history):
    url, run_of = history
    for kernel in ("rmsnorm", "qk_norm_rope"):
        verdicts = trend_queries.trend_judged(url, kernel)[0]
        with read_session(url) as s:
            series = series_by_key(s, "time_us", kernel, None)
        runs = sorted({p["run_id"] for pts in series.values() for p in pts})
        assert len(runs) >= 5
        seen = 0
        for run in runs:
            report = regression_queries.regression_report(
                url, run, kernel=kernel, include_improvements=True, include_cpu=True
            )
            from_cli = {
                (f["kernel"], "x".join(map(str, f["shape"])), f["dtype"], f["impl"], f["hardware_key"]): f
                for f in report["flags"]
            }
            from_page = {}
            for key, points in series.items():
                mine = [p for p in points if p["run_id"] == run]
                if not mine:
                    continue
                last = mine[-1]
                flag = verdicts.get(key, {}).get((last["run_id"], last["attempt"], last["job_key"]))
                if flag is not None:
                    from_page[key] = flag
            assert {k: (f["status"], f["verdict"], f["reason"]) for k, f in from_cli.items()} == {
                k: (f["status"], f["verdict"], f["reason"]) for k, f in from_page.items()
            }, run
            seen += len(from_cli)
        assert seen  # some verdicts were compared
