"""The orchestrator's subcommands other than a sweep: db, import, node, cluster."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from orchestrator import arg_types, runs_cli
from orchestrator.config import ConfigError
from orchestrator.errors import exit_on_user_error
from orchestrator.store.migrate import SchemaOutOfDate


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m orchestrator")
    sub = ap.add_subparsers(dest="cmd", required=True)
    db = sub.add_parser("db", help="the store's schema")
    db.add_argument("action", choices=["upgrade", "current"])
    db.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")
    imp = sub.add_parser(
        "import",
        help="store results files of `python -m workers run` as a run (several files: "
        "the shards of one plan, stored as one run)",
    )
    imp.add_argument(
        "results",
        nargs="+",
        help="RESULTS.jsonl [MORE.jsonl ...], or a directory (every results file "
        "under it, each plan a run, in the order measured)",
    )
    imp.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")
    rep = sub.add_parser(
        "report", help="show a run's summary again (the newest run by default), or write it as Markdown for docs/perf/"
    )
    rep.add_argument("run", nargs="?", type=arg_types.run_id, help="run id (default: the newest run)")
    rep.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")
    rep.add_argument("--markdown", metavar="FILE", help="write the summary as Markdown to FILE")
    rep.add_argument("--wide", action="store_true", help="every column (the default fits 120 columns)")
    rep.add_argument(
        "--json", action="store_true", help="print the run as JSON (schema kernelfleet.report, docs/json.md)"
    )
    from orchestrator import regressions_cli

    regressions_cli.add_parser(sub)
    from orchestrator import compare_cli

    compare_cli.add_parser(sub)
    from orchestrator import bisect_cli

    bisect_cli.add_parser(sub)
    from orchestrator import explain_cli

    explain_cli.add_parser(sub)
    from orchestrator import export

    export.add_parser(sub)
    runs_cli.add_parser(sub)
    from orchestrator import tune_table

    tune_table.add_parser(sub)
    try:
        from orchestrator import fleet_cli

        fleet_cli.add_parsers(sub)
    except ImportError:
        pass
    return ap


def main(argv: list[str], console: Console) -> int:
    args = _parser().parse_args(argv)
    return exit_on_user_error(lambda: _dispatch(args, console))


def _dispatch(args: argparse.Namespace, console: Console) -> int:
    try:
        if args.cmd == "db":
            from orchestrator.store import migrate
            from orchestrator.store.query import run_queries
            from orchestrator.store.session import display_url, resolve_url

            url = resolve_url(args.url)
            shown = display_url(url)
            if args.action == "upgrade":
                from orchestrator.pg_database import ensure_database

                if ensure_database(url):
                    console.print(f"created the database of {shown}", markup=False)
                before = migrate.current(url)
                migrate.upgrade(url)
                console.print(
                    f"store {shown}: schema {before or 'empty'} -> {migrate.current(url)} (head)", markup=False
                )
            else:
                cur = migrate.current(url)
                console.print(f"store {shown}: schema {cur or 'empty'}; head {migrate.head()}", markup=False)
            return 0
        if args.cmd == "report" and args.json:
            import json

            from orchestrator import run_json
            from orchestrator.store.query import run_queries
            from orchestrator.store.session import display_url, resolve_url

            url = resolve_url(args.url)
            run_id = args.run if args.run is not None else next((r["id"] for r in run_queries.list_runs(url, 1)), None)
            if run_id is None:
                raise ValueError(f"the store {display_url(url)} holds no run yet")
            if run_queries.run_info(url, run_id) is None:
                raise ValueError(
                    f"no run {run_id} in {display_url(url)}; list the runs with `python -m orchestrator runs`"
                )
            print(json.dumps(run_json.run_document(url, run_id), sort_keys=True, allow_nan=False))
            return 0
        if args.cmd == "report":
            from orchestrator.report import show_run

            return show_run(args.url, args.run, args.markdown, console, wide=args.wide)
        if args.cmd == "regressions":
            from orchestrator import regressions_cli

            return regressions_cli.run(args, console)
        if args.cmd == "tune":
            from orchestrator import tune_table

            return tune_table.run(args, console)
        if args.cmd == "compare":
            from orchestrator import compare_cli

            return compare_cli.run(args, console)
        if args.cmd == "bisect":
            from orchestrator import bisect_cli

            return bisect_cli.run(args, console)
        if args.cmd == "explain":
            from orchestrator import explain_cli

            return explain_cli.run(args, console)
        if args.cmd == "export":
            from orchestrator import export

            return export.run(args)
        if args.cmd == "runs":
            return runs_cli.run(args, console)
        if args.cmd == "import":
            from orchestrator.importer import import_results

            return import_results(args.results, args.url, console)
        from orchestrator import fleet_cli

        return fleet_cli.run(args, console)
    except (ConfigError, ValueError, OSError, SchemaOutOfDate) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
