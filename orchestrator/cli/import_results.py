"""``python -m orchestrator import``: results files of ``python -m workers run`` stored as runs
(orchestrator/interchange/importer.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from orchestrator.cli.db import URL_HELP
from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "results",
        nargs="+",
        help="RESULTS.jsonl [MORE.jsonl ...], or a directory (every results file "
        "under it, each plan a run, in the order measured)",
    )
    p.add_argument("--url", help=URL_HELP)


def run(args: argparse.Namespace, console: Console) -> int:
    from orchestrator.interchange.importer import import_results

    return import_results(args.results, args.url, console)


COMMAND = Subcommand(
    name="import",
    help="store results files of `python -m workers run` as a run (several files: the shards of one plan, stored "
    "as one run)",
    add_arguments=add_arguments,
    run=run,
)
