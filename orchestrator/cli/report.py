"""``python -m orchestrator report``: a run's summary again (the newest run by default), as Markdown for docs/perf/
(``--markdown``) or as the ``kernelfleet.report`` JSON document (``--json``, orchestrator/reports/run_json.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from orchestrator.cli import arg_types
from orchestrator.cli.db import URL_HELP
from orchestrator.cli.subcommand import Subcommand
from workers.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", nargs="?", type=arg_types.run_id, help="run id (default: the newest run)")
    p.add_argument("--url", help=URL_HELP)
    p.add_argument("--markdown", metavar="FILE", help="write the summary as Markdown to FILE")
    p.add_argument("--wide", action="store_true", help="every column (the default fits 120 columns)")
    p.add_argument(
        "--json", action="store_true", help="print the run as JSON (schema kernelfleet.report, docs/json.md)"
    )


def run(args: argparse.Namespace, console: Console) -> int:
    if args.json:
        return _json(args)
    from orchestrator.reports.summary import show_run

    return show_run(args.url, args.run, args.markdown, console, wide=args.wide)


def _json(args: argparse.Namespace) -> int:
    import json

    from orchestrator.reports import run_json
    from orchestrator.store.query import run_queries
    from orchestrator.store.session import display_url, resolve_url

    url = resolve_url(args.url)
    run_id = args.run if args.run is not None else next((r["id"] for r in run_queries.list_runs(url, 1)), None)
    if run_id is None:
        raise UserError(f"the store {display_url(url)} holds no run yet")
    if run_queries.run_info(url, run_id) is None:
        raise UserError(f"no run {run_id} in {display_url(url)}; list the runs with `python -m orchestrator runs`")
    print(json.dumps(run_json.run_document(url, run_id), sort_keys=True, allow_nan=False))
    return 0


COMMAND = Subcommand(
    name="report",
    help="show a run's summary again (the newest run by default), or write it as Markdown for docs/perf/",
    add_arguments=add_arguments,
    run=run,
)
