"""``python -m orchestrator db upgrade|current``: create or upgrade the store's schema, or say which it has."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console

URL_HELP = "store URL (default: $KERNELFLEET_DB, else the default SQLite file)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["upgrade", "current"])
    p.add_argument("--url", help=URL_HELP)


def run(args: argparse.Namespace, console: Console) -> int:
    from orchestrator.store import migrate
    from orchestrator.store.session import display_url, resolve_url

    url = resolve_url(args.url)
    shown = display_url(url)
    if args.action == "upgrade":
        from orchestrator.store.pg_database import ensure_database

        if ensure_database(url):
            console.print(f"created the database of {shown}", markup=False)
        before = migrate.current(url)
        migrate.upgrade(url)
        console.print(f"store {shown}: schema {before or 'empty'} -> {migrate.current(url)} (head)", markup=False)
    else:
        cur = migrate.current(url)
        console.print(f"store {shown}: schema {cur or 'empty'}; head {migrate.head()}", markup=False)
    return 0


COMMAND = Subcommand(
    name="db",
    help="create or upgrade the store's schema (upgrade), or show its version (current)",
    add_arguments=add_arguments,
    run=run,
)
