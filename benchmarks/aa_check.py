"""The A/A figure of the regression rule: how far identical runs of a sweep land apart, and what the rule says.
The figures of docs/perf/regressions-h200.md come from this script.

    python -m benchmarks.aa_check --url STORE --runs A1 A2 [A3 A4] [--slowed S1 S2] [--markdown FILE] [--json]

``--runs``: runs of the same sweep on the same code and device (the A runs).  ``--slowed``: runs of the same sweep
with one kernel slowed on purpose (tests/support/slow_kernel.py), judged against the first A runs.

Prints, per implementation, over the GPU series of the A runs (CPU timings only with --include-cpu):
  * how many series there are, the share whose medians of ``--metric`` (time_us) lie within 2 % and within 5 % of
    each other across the A runs (max/min - 1), and the largest such spread;
  * the rule's alerts between identical runs (both directions; every one is a false alarm): A2 against A1, and with
    four A runs, A3 A4 against A1 A2 (two runs per side, the CI recipe);
  * with ``--slowed``: what the rule confirms for S against as many A runs (the slowed series should be the only
    ones).
Exit 0 when the A runs raise no alert and (with --slowed) the rule confirms at least one regression, else 1; 2 on a
usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.stats.regression_rule import CONFIRMED  # noqa: E402
from orchestrator.stats.series_verdicts import is_cpu_device  # noqa: E402
from orchestrator.store.query import regression_queries, run_queries  # noqa: E402
from orchestrator.store.session import resolve_url  # noqa: E402

SUMMARY_COLUMN = {"time_us": "median_us", "graph_time_us": "graph_time_us", "kernel_time_us": "kernel_time_us"}


def spreads(url: str, runs: list[int], metric: str, include_cpu: bool) -> dict[str, list[float]]:
    """impl -> the spread (max/min - 1) of each of its series over the runs (series measured in all of them)."""
    column = SUMMARY_COLUMN[metric]
    values: dict[tuple, list[float]] = defaultdict(list)
    for run in runs:
        for r in run_queries.run_summary(url, run):
            if r["kind"] != "micro" or r.get(column) is None:
                continue
            if is_cpu_device(r["hardware_key"]) and not include_cpu:
                continue
            values[(r["kernel"], tuple(r["shape"]), r["dtype"], r["impl"], r["hardware_key"])].append(r[column])
    out: dict[str, list[float]] = defaultdict(list)
    for (_k, _s, _d, impl, _hw), v in sorted(values.items()):
        if len(v) == len(runs) and min(v) > 0:
            out[impl].append(max(v) / min(v) - 1.0)
    return dict(out)


def _alerts(report: dict) -> list[dict]:
    return [f for f in report["flags"] if f["status"] == CONFIRMED]


def check(url: str, runs: list[int], slowed: list[int], metric: str = "time_us", include_cpu: bool = False) -> dict:
    table = []
    for impl, values in sorted(spreads(url, runs, metric, include_cpu).items()):
        n = len(values)
        table.append(
            {
                "impl": impl,
                "series": n,
                "within_2pct": sum(v <= 0.02 for v in values) / n,
                "within_5pct": sum(v <= 0.05 for v in values) / n,
                "largest": max(values),
            }
        )
    kw = dict(metric=metric, include_improvements=True, include_cpu=include_cpu)
    aa = {"A2 vs A1": regression_queries.regression_report(url, runs[1], baseline_run_ids=runs[0], **kw)}
    if len(runs) >= 4:
        aa["A3 A4 vs A1 A2"] = regression_queries.regression_report(url, runs[2:4], baseline_run_ids=runs[:2], **kw)
    out = {
        "metric": metric,
        "runs": runs,
        "slowed_runs": slowed,
        "spread": table,
        "aa": {
            name: {
                "series": r["series"],
                "alerts": _alerts(r),
                "unconfirmed": sum(f["status"] != CONFIRMED for f in r["flags"]),
            }
            for name, r in aa.items()
        },
    }
    if slowed:
        r = regression_queries.regression_report(url, slowed, baseline_run_ids=runs[: len(slowed)], **kw)
        out["slowed"] = {
            "series": r["series"],
            "confirmed": _alerts(r),
            "unconfirmed": sum(f["status"] != CONFIRMED for f in r["flags"]),
        }
    return out


def markdown(result: dict) -> str:
    lines = [
        f"A/A of runs {', '.join(map(str, result['runs']))} ({result['metric']}; series = kernel x shape x "
        "dtype x device)",
        "",
        "| impl | series | within 2 % | within 5 % | largest spread |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["spread"]:
        lines.append(
            f"| {row['impl']} | {row['series']} | {row['within_2pct']:.0%} | {row['within_5pct']:.0%} | "
            f"{row['largest']:.1%} |"
        )
    lines.append("")
    for name, r in result["aa"].items():
        lines.append(
            f"- rule, {name}: {len(r['alerts'])} alert(s) of {r['series']} series "
            f"({r['unconfirmed']} unconfirmed candidate(s))"
        )
        for f in r["alerts"]:
            lines.append(
                f"  - {f['kernel']} {f['impl']} {'x'.join(map(str, f['shape']))} {f['dtype']}: "
                f"{f['change']:+.1%} ({f['reason']})"
            )
    if "slowed" in result:
        s = result["slowed"]
        lines.append(
            f"- rule, slowed runs {', '.join(map(str, result['slowed_runs']))}: {len(s['confirmed'])} "
            f"confirmed of {s['series']} series ({s['unconfirmed']} unconfirmed)"
        )
        for f in s["confirmed"]:
            lines.append(
                f"  - {f['kernel']} {f['impl']} {'x'.join(map(str, f['shape']))} {f['dtype']}: "
                f"{f['change']:+.1%} ({f['direction']}, {f['reason']})"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.aa_check", description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")
    ap.add_argument("--runs", type=int, nargs="+", required=True, help="identical runs A1 A2 [A3 A4]")
    ap.add_argument("--slowed", type=int, nargs="*", default=[], help="runs with one kernel slowed on purpose")
    ap.add_argument("--metric", default="time_us", choices=sorted(SUMMARY_COLUMN))
    ap.add_argument("--include-cpu", action="store_true", help="count series measured on a CPU too")
    ap.add_argument("--markdown", metavar="FILE", help="also write the figure as Markdown")
    ap.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = ap.parse_args(argv)
    if len(args.runs) < 2 or len(args.slowed) > len(args.runs):
        print("error: give at least two A runs, and no more slowed runs than A runs", file=sys.stderr)
        return 2
    url = resolve_url(args.url)
    try:
        result = check(url, args.runs, args.slowed, args.metric, args.include_cpu)
    except (KeyError, ValueError) as exc:
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    text = markdown(result)
    print(json.dumps(result, sort_keys=True, default=str) if args.json else text, end="" if not args.json else "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)
    aa_ok = all(not r["alerts"] for r in result["aa"].values())
    slowed_ok = "slowed" not in result or bool(result["slowed"]["confirmed"])
    return 0 if aa_ok and slowed_ok else 1


if __name__ == "__main__":
    sys.exit(main())
