"""python -m orchestrator bisect: the commit(s) between a good and a bad commit where a series changed.

    python -m orchestrator bisect --good GOOD --bad BAD --kernel rmsnorm --shape 2x1320x2048 --dtype bf16 \\
        --impl triton +sweep=rmsnorm target=h200 [sweep overrides...]

The commits from GOOD to BAD (first parents) are planned each with its own code (orchestrator/bisect/run.py);
consecutive commits whose plans have the same keys form a segment, measured once (the store's results under those
keys are reused, whoever measured them).  The search (orchestrator/bisect/search.py) measures segments in rounds and
judges two segments with the regression rule against the between-run spread of the segments' replicate runs
(``--runs`` per segment, one more a side while the spread is unknown, up to ``--max-runs``).  It reports every
confirmed step: the first commit of its segment, the change with its 95 % interval, and the runs it took.  Runs
marked by their conditions (a fleet with several GPU nodes on one host, a rehearsal) are left out unless
``--include-marked``, as in ``regressions``; a commit whose runs are all marked is skipped, saying so.

Exit codes: 0 the search ended (steps found or none), 1 an end could not be measured, 2 a usage error, 3 with
``--dry-run DIR``: plans written for ``python -m workers run``; import their results and run the command again.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.bisect.bisector import Bisect, NeedResults
from orchestrator.bisect.git import BisectError
from orchestrator.cli import arg_types
from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console

EXIT_DONE, EXIT_UNMEASURED, EXIT_USAGE, EXIT_PLANS_WRITTEN = 0, 1, 2, 3
SCHEMA, SCHEMA_VERSION = "kernelfleet.bisect", 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--good", required=True, help="a commit (or branch, tag) or a run id measured at the good commit")
    p.add_argument("--bad", required=True, help="a commit or a run id measured at the bad commit")
    p.add_argument("--kernel", required=True, help="the series' kernel")
    p.add_argument("--impl", required=True, help="the series' implementation (triton, eager, compile...)")
    p.add_argument("--shape", help="the series' shape, e.g. 2x1320x2048 (needed when the sweep has several)")
    p.add_argument("--dtype", help="the series' dtype (needed when the sweep has several)")
    p.add_argument("--device", help="part of the series' hardware key, e.g. h200 (needed when several measured it)")
    p.add_argument("--metric", default="time_us", help="the reading judged: time_us (default), kernel_time_us...")
    p.add_argument("--threshold", type=float, default=0.05, help="smallest relative change that counts (0.05)")
    p.add_argument("--runs", type=arg_types.count, default=2, help="runs per segment (2: the between-run spread)")
    p.add_argument("--max-runs", type=arg_types.count, default=4, help="runs per segment at most (4)")
    p.add_argument("--all-parents", action="store_true", help="walk every commit, not only first parents")
    p.add_argument(
        "--include-marked",
        action="store_true",
        help="judge runs marked by their conditions too (GPU shared with other nodes: several nodes on one host; "
        "a rehearsal fleet), as regressions and compare do; by default they are left out",
    )
    p.add_argument("--repo", default=".", help="the git repository (default: the current folder)")
    p.add_argument(
        "--explain",
        action="store_true",
        help="for each step, capture both sides' profile (and, for triton, machine code) and say what changed",
    )
    p.add_argument("--dry-run", metavar="DIR", help="write the plans that need runs to DIR instead of running them")
    p.add_argument("--json", action="store_true", help="print the result as JSON (schema kernelfleet.bisect)")
    p.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")
    p.add_argument("overrides", nargs="*", help="the sweep: +sweep=NAME and overrides, as for a sweep")


def run(args: argparse.Namespace, console: Console) -> int:
    if arg_types.bad_threshold(args.threshold):
        return EXIT_USAGE
    if args.dry_run and not Path(args.dry_run).is_dir():
        print(f"error: --dry-run {args.dry_run}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    from rich.console import Console

    from orchestrator.bisect import report as bisect_report

    if args.json:  # stdout holds the JSON alone; the progress and the summary lines go to stderr
        console = Console(stderr=True, soft_wrap=True, width=200)
    from orchestrator.store.open import open_writer

    writer, url = open_writer(args.url, console)  # the steps' sweeps write to it: created now when it is new
    writer.close()
    try:
        with tempfile.TemporaryDirectory(prefix="kf-bisect-") as workdir:
            b = Bisect(args, url, console, Path(workdir))
            b.plan_all()
            try:
                out = b.search()
            except NeedResults:
                bisect_report.print_pending(b, console)
                return EXIT_PLANS_WRITTEN
            doc = bisect_report.document(b, out)
            if args.explain and not args.dry_run:
                for st, (lo, hi) in zip(doc["steps"], out.steps):
                    st["explanation"] = b.explain_step(lo, hi)
    except BisectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    bisect_report.print_document(doc, console)
    if args.json:
        print(json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **doc}, sort_keys=True, default=str))
    return EXIT_UNMEASURED if doc["changed"] is None else EXIT_DONE


COMMAND = Subcommand(
    name="bisect",
    help="find the commit(s) between a good and a bad commit where a series changed, planning each commit with "
    "its own code and running only what its job keys have not measured yet",
    add_arguments=add_arguments,
    run=run,
)
