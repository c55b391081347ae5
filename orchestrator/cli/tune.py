"""``python -m orchestrator tune table``: launch tables from tune runs (orchestrator/reports/tune_table.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from orchestrator.cli import arg_types
from orchestrator.cli.db import URL_HELP
from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console


def add_arguments(tune: argparse.ArgumentParser) -> None:
    tsub = tune.add_subparsers(dest="tune_cmd", required=True)
    tab = tsub.add_parser(
        "table",
        help="per kernel and width bucket: the winner, its margin over the current table's choice and whether it is "
        "beyond noise (the regression rule); the proposed launch-table rows as a diff of the kernel modules",
    )
    tab.add_argument("--gpu-type", required=True, help="the GPU type whose tune runs to read (h200, mi355x, r9700)")
    tab.add_argument(
        "--run",
        type=arg_types.run_id,
        nargs="+",
        metavar="RUN",
        help="the tune run(s) to read (default: each kernel's newest and the other runs of its plan)",
    )
    tab.add_argument("--kernel", help="only this kernel")
    tab.add_argument("--metric", default="time_us", help="the timing judged: time_us, graph_time_us, kernel_time_us")
    tab.add_argument(
        "--threshold", type=float, help="smallest margin that counts (default: the regression rule's, 0.05)"
    )
    tab.add_argument("--write", action="store_true", help="apply the diff to the kernel modules")
    tab.add_argument(
        "--include-cpu", action="store_true", help="read tune runs measured on a CPU (Triton's interpreter) too"
    )
    tab.add_argument("--url", help=URL_HELP)


def run(args: argparse.Namespace, console: Console) -> int:
    from orchestrator.reports import tune_table
    from orchestrator.stats.regression_rule import DEFAULT_THRESHOLD

    if args.threshold is None:
        args.threshold = DEFAULT_THRESHOLD
    return tune_table.run(args, console)


COMMAND = Subcommand(
    name="tune",
    help="launch tables from tune runs (+sweep=tune): `tune table --gpu-type TYPE [--write]`",
    add_arguments=add_arguments,
    run=run,
)
