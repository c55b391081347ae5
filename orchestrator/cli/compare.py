"""python -m orchestrator compare --baseline REF --current REF: every series of two sets of runs side by side (the
ratio and its confidence interval, the regression rule's verdict, correctness changes, new and vanished series)
and a geometric-mean summary per kernel × GPU type; as a table, as JSON (``--json``) or as Markdown for a pull
request (``--markdown FILE``, SVG plots beside it).

Exit codes: 0 no confirmed regression and no correctness loss, 1 at least one of them, 2 a usage error (a REF that
names no run, the same run on both sides, a bad threshold).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli import arg_types
from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    ref = "run ids (12 or 12,13), a commit (prefix) of stored runs, or a branch/tag git resolves; several add up"
    p.add_argument("--baseline", nargs="+", required=True, metavar="REF", help=ref)
    p.add_argument("--current", nargs="+", required=True, metavar="REF", help=ref)
    p.add_argument("--metric", default="time_us", help="the measurement compared (time_us)")
    p.add_argument("--threshold", type=float, default=0.05, help="smallest relative change the rule counts (0.05)")
    p.add_argument(
        "--include-cpu",
        action="store_true",
        help="compare timings measured on a CPU too (Triton's interpreter: not a kernel's speed)",
    )
    p.add_argument(
        "--include-marked",
        action="store_true",
        help="let a commit or branch stand also for its runs marked by their conditions (uncommitted changes, a GPU "
        "shared with other nodes, a rehearsal: see `runs`); a run named by id is always taken",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON (docs/json.md)")
    p.add_argument("--markdown", metavar="FILE", help="write the report as Markdown to FILE, SVG plots beside it")
    p.add_argument("--plots-dir", metavar="DIR", help="where the Markdown's SVG plots go (default FILE-plots/)")
    p.add_argument("--repo", metavar="DIR", help="git repository that resolves branch names (default: the cwd)")
    p.add_argument("--all", action="store_true", help="list every series, not only changes, in the table")
    p.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")


def run(args: argparse.Namespace, console: Console) -> int:
    from orchestrator.cli import compare_refs
    from orchestrator.store.query import compare_queries
    from orchestrator.store.session import display_url, resolve_url
    from workers.metrics import UnknownMetricError

    url = resolve_url(args.url)
    if arg_types.bad_threshold(args.threshold):
        return EXIT_USAGE
    try:
        base, base_notes = compare_refs.resolve(url, args.baseline, args.repo, args.include_marked)
        cur, cur_notes = compare_refs.resolve(url, args.current, args.repo, args.include_marked)
        report = compare_queries.compare(
            url, base, cur, metric=args.metric, threshold=args.threshold, include_cpu=args.include_cpu
        )
    except compare_queries.RefError as exc:
        print(f"error: {exc} (store {display_url(url)})", file=sys.stderr)
        return EXIT_USAGE
    except UnknownMetricError as exc:
        print(f"error: --metric: {exc}", file=sys.stderr)
        return EXIT_USAGE
    code = EXIT_FAIL if compare_queries.failing(report) else EXIT_OK
    report["refs"] = {"baseline": base_notes, "current": cur_notes}
    if args.markdown:
        from orchestrator.reports import compare_markdown

        plots = compare_markdown.write(report, Path(args.markdown), Path(args.plots_dir) if args.plots_dir else None)
        if not args.json:
            console.print(f"wrote {args.markdown} and {len(plots)} plot(s)", highlight=False)
    if args.json:
        print(json.dumps({**report, "exit_code": code}, sort_keys=True, default=str))
        return code
    _print(report, console, every=args.all)
    return code


def _print(report: dict, console: Console, every: bool) -> None:
    from rich.table import Table

    from orchestrator.reports.compare_markdown import ratio_text, series_cells
    from orchestrator.reports.summary import plain
    from orchestrator.store.query.compare_queries import verdict_text

    for side in ("baseline", "current"):
        for note in report["refs"][side]:
            console.print(f"{side}: {note}", highlight=False, markup=False)
    if report["cpu_series"]:
        console.print(
            f"{report['cpu_series']} series timed on a CPU not compared: interpreter timings (--include-cpu "
            "compares them)",
            highlight=False,
        )
    t = Table(title=f"{report['metric']}: geometric mean of current / baseline per kernel × GPU type")
    for c in ("kernel", "GPU", "impl", "geomean", "series", "regressions", "improvements", "correctness lost"):
        t.add_column(c)
    for s in report["summary"]:
        t.add_row(
            *plain(
                [
                    s["kernel"],
                    s["gpu_type"],
                    s["impl"],
                    ratio_text(s["geomean_ratio"]),
                    s["series"],
                    s["confirmed_regressions"],
                    s["confirmed_improvements"],
                    s["correctness_lost"],
                ]
            )
        )
    console.print(t)
    rows = report["series"] if every else [r for r in report["series"] if verdict_text(r)]
    if rows:
        unit = report["unit"] or report["metric"]
        d = Table(title="every series" if every else "changes")
        for c in (
            "kernel",
            "GPU",
            "impl",
            "shape",
            "dtype",
            f"was {unit}",
            f"now {unit}",
            "ratio",
            "95% CI",
            "verdict",
        ):
            d.add_column(c)
        for r in rows:
            d.add_row(*plain(series_cells(r)))
        console.print(d)
    c = report["counts"]
    console.print(
        f"{c['confirmed_regressions']} confirmed regression(s), {c['correctness_lost']} correctness loss(es), "
        f"{c['confirmed_improvements']} confirmed improvement(s), {c['unconfirmed']} unconfirmed of "
        f"{c['series']} series; {c['new']} new, {c['vanished']} vanished",
        highlight=False,
    )
    if c["unconfirmed"] and not c["confirmed_regressions"]:
        console.print(
            "unconfirmed: one run a side gives no between-run spread; run each side twice (docs/ci.md)",
            highlight=False,
        )


COMMAND = Subcommand(
    name="compare",
    help="compare the current runs with baseline runs (run ids, commits or branches): ratios with confidence "
    "intervals, the regression rule's verdicts, correctness changes; exit 1 on a confirmed regression",
    add_arguments=add_arguments,
    run=run,
)
