"""python -m orchestrator regressions: changes that are large against a series' between-run spread
(orchestrator/stats/regression_rule.py), as a table or as JSON, with an exit code CI can gate on.

Exit codes: 0 no confirmed regression (unconfirmed candidates and kernel changes are listed, not counted), 1 at
least one confirmed regression, 2 a usage error (an unknown run id, a bad combination of runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from orchestrator.cli import arg_types
from orchestrator.cli.errors import UsageError
from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console

EXIT_NONE, EXIT_REGRESSION, EXIT_USAGE = 0, 1, 2
SCHEMA, SCHEMA_VERSION = "kernelfleet.regressions", 1  # the --json document (docs/json.md)
RECIPE = (
    "to confirm one run against another, give the rule a between-run spread: run each side twice "
    "(`regressions C1 C2 --baseline B1 B2`), or judge against history (five or more earlier runs)"
)


def add_arguments(reg: argparse.ArgumentParser) -> None:
    reg.add_argument(
        "run",
        nargs="*",
        type=arg_types.run_id,
        help="the run(s) to judge (default: the newest point of each series; several with --baseline)",
    )
    reg.add_argument(
        "--baseline",
        type=arg_types.run_id,
        nargs="+",
        metavar="RUN",
        help="compare RUN(s) with these runs (two runs per side measure the between-run spread)",
    )
    reg.add_argument("--threshold", type=float, default=0.05, help="smallest relative change that counts (0.05)")
    reg.add_argument("--metric", default="time_us", help="the measurement judged (time_us)")
    reg.add_argument("--improvements", action="store_true", help="list improvements too")
    reg.add_argument(
        "--include-cpu",
        action="store_true",
        help="judge timings measured on a CPU too (Triton's interpreter: not a kernel's speed)",
    )
    reg.add_argument(
        "--include-marked",
        action="store_true",
        help="judge runs marked by their conditions too (uncommitted changes, GPU shared with other nodes, "
        "rehearsal: see `runs`); a run named on the command line is always judged",
    )
    reg.add_argument(
        "--json", action="store_true", help="print the report as JSON (schema kernelfleet.regressions, docs/json.md)"
    )
    reg.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")


def exit_code(report: dict) -> int:
    from orchestrator.stats.regression_rule import CONFIRMED

    return (
        EXIT_REGRESSION
        if any(f["status"] == CONFIRMED and f["direction"] == "regression" for f in report["flags"])
        else EXIT_NONE
    )


def json_document(report: dict, code: int) -> str:
    """The ``--json`` output: the report in the versioned envelope every --json output has (docs/json.md)."""
    doc = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **report, "exit_code": code}
    return json.dumps(doc, sort_keys=True, default=str)


def run(args: argparse.Namespace, console: Console) -> int:
    from orchestrator.stats.regression_rule import RegressionRule
    from orchestrator.store.query import regression_queries
    from orchestrator.store.session import display_url, resolve_url
    from workers.metrics import UnknownMetricError

    url = resolve_url(args.url)
    if arg_types.bad_threshold(args.threshold):
        return EXIT_USAGE
    check_runs(args.run, args.baseline)
    try:
        report = regression_queries.regression_report(
            url,
            args.run or None,
            baseline_run_ids=args.baseline,
            metric=args.metric,
            rule=RegressionRule(threshold=args.threshold),
            include_improvements=args.improvements,
            include_cpu=args.include_cpu,
            include_marked=args.include_marked,
        )
    except KeyError as exc:
        print(
            f"error: {exc.args[0] if exc.args else exc} in {display_url(url)}; "
            "list the runs with `python -m orchestrator runs`",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except UnknownMetricError as exc:
        raise UsageError(f"--metric: {exc}") from None
    code = exit_code(report)
    if args.json:
        print(json_document(report, code))
        return code
    _print(report, args.threshold, url, console)
    return code


def _ids(run_ids: list[int], most: int = 8) -> str:
    shown = ", ".join(map(str, run_ids[:most]))
    return f"runs {shown}" + (f" and {len(run_ids) - most} more" if len(run_ids) > most else "")


def check_runs(runs: list[int] | None, baselines: list[int] | None) -> None:
    """The runs named on the command line make one comparison, else UsageError: a baseline needs the runs to
    compare with it, several runs need a baseline, no run on both sides."""
    runs, baselines = runs or [], baselines or []
    if baselines and not runs:
        raise UsageError("a baseline needs the run(s) to compare with it")
    if len(runs) > 1 and not baselines:
        raise UsageError("several runs are compared with a baseline (--baseline); against history give one run")
    if set(runs) & set(baselines):
        raise UsageError(f"run(s) {sorted(set(runs) & set(baselines))} on both sides of the comparison")


def _print(report: dict, threshold: float, url: str, console: Console) -> None:
    from rich.table import Table

    from orchestrator.reports.summary import _fmt, plain
    from orchestrator.stats.regression_rule import CONFIRMED, KERNEL_CHANGED, PICKS_UNKNOWN, UNCONFIRMED
    from orchestrator.store.session import display_url

    flags = report["flags"]
    against = f"run(s) {', '.join(map(str, report['baseline_runs']))}" if report["baseline_runs"] else "history"
    if report["cpu_series"]:
        console.print(
            f"{report['cpu_series']} series measured on a CPU not judged: interpreter timings "
            "(--include-cpu judges them)"
        )
    if report.get("marked_runs"):
        console.print(
            f"{len(report['marked_runs'])} marked run(s) left out ({_ids(report['marked_runs'])}: uncommitted "
            "changes, GPU shared with other nodes or rehearsal; `runs` says which; --include-marked judges them)",
            markup=False,
        )
    if not flags:
        console.print(
            f"no change of {threshold:.0%} or more beyond the between-run spread, against {against} "
            f"({report['series']} series judged; store {display_url(url)})",
            markup=False,
        )
        return
    t = Table(
        title=f"changes against {against} (>= {threshold:.0%}, Mann-Whitney p < 0.01, beyond the between-run spread)"
    )
    for c in (
        "kernel",
        "shape",
        "dtype",
        "impl",
        "device",
        "change",
        "was",
        "now",
        "spread",
        "verdict",
        "run",
        "commit",
    ):
        t.add_column(c)
    for f in flags:
        verdict = f["verdict"]
        device = (f.get("hardware_key") or "–") + (" (cpu timings)" if f["device"] == "cpu" else "")
        t.add_row(
            *plain(
                [
                    f["kernel"],
                    "x".join(str(s) for s in f["shape"]),
                    f["dtype"],
                    f["impl"],
                    device,
                    f"{f['change']:+.1%} ({f['direction']})",
                    _fmt(f.get("reference_median"), ".2f"),
                    _fmt(f.get("current_median"), ".2f"),
                    _fmt(f.get("noise"), ".2%"),
                    verdict,
                    str(f.get("run_id")),
                    (f.get("commit") or "")[:10],
                ]
            )
        )
    console.print(t)
    confirmed = sum(f["status"] == CONFIRMED and f["direction"] == "regression" for f in flags)
    unconfirmed = [f for f in flags if f["status"] == UNCONFIRMED]
    changed = [f for f in flags if f["status"] in (KERNEL_CHANGED, PICKS_UNKNOWN)]
    console.print(
        f"{confirmed} confirmed regression(s) of {report['series']} series judged (store {display_url(url)})",
        markup=False,
    )
    for reason in dict.fromkeys(f["reason"] for f in unconfirmed if f["reason"].startswith("between-run")):
        console.print(f"unconfirmed: {reason}; {RECIPE}", markup=False)
        break
    for f in unconfirmed:
        if not f["reason"].startswith("between-run"):
            console.print(
                f"{f['kernel']} {f['impl']} {'x'.join(map(str, f['shape']))}: unconfirmed: {f['reason']}", markup=False
            )
    for f in changed:
        console.print(f"{f['kernel']} {f['impl']} {'x'.join(map(str, f['shape']))}: {f['reason']}", markup=False)


COMMAND = Subcommand(
    name="regressions",
    help="flag changes that are large against the series' between-run spread (and significant on the repeats): "
    "against history, or runs against baseline runs; exit 1 on a confirmed regression",
    add_arguments=add_arguments,
    run=run,
)
