"""`python -m orchestrator runs`: the runs of the store, newest first — the ids `report` and `regressions` take."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from orchestrator.cli import arg_types
from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=arg_types.count, default=20, help="how many runs to list (default 20)")
    p.add_argument("--json", action="store_true", help="print the runs as JSON (schema kernelfleet.runs, docs/json.md)")
    p.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")


RUNS_SCHEMA_VERSION = 1


def as_json(url: str, runs: list[dict], devices: dict[int, list[str]]) -> dict:
    """The `runs --json` document (docs/json.md)."""
    from orchestrator.store.session import display_url

    keep = ("id", "sweep", "commit", "status", "source", "started_at", "finished_at", "counts", "n_jobs", "conditions")
    return {
        "schema": "kernelfleet.runs",
        "schema_version": RUNS_SCHEMA_VERSION,
        "store": display_url(url),
        "runs": [
            {
                **{k: r.get(k) for k in keep},
                "started_at": r["started_at"].isoformat() if r.get("started_at") else None,
                "finished_at": r["finished_at"].isoformat() if r.get("finished_at") else None,
                "devices": devices[r["id"]],
            }
            for r in runs
        ],
    }


def run(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table
    from rich.text import Text

    from orchestrator.reports.summary import counts_in_words, plain
    from orchestrator.store.query import run_queries
    from orchestrator.store.session import display_url, resolve_url

    url = resolve_url(args.url)
    runs = run_queries.list_runs(url, limit=max(args.limit, 1))
    devices = run_queries.run_devices(url, [r["id"] for r in runs])  # a few queries, however many runs
    if getattr(args, "json", False):
        import json

        print(json.dumps(as_json(url, runs, devices), sort_keys=True))
        return 0
    if not runs:
        console.print(
            f"the store {display_url(url)} holds no run yet; start one with `python -m orchestrator +sweep=smoke`",
            highlight=False,
            markup=False,
        )
        return 0
    t = Table(title=Text(f"runs in {display_url(url)} (newest first)"))
    for c in ("id", "sweep", "started", "device", "status", "jobs", "source", "marked"):
        t.add_column(c, justify="right" if c == "id" else "left", overflow="fold")
    for r in runs:
        started = r["started_at"].strftime("%Y-%m-%d %H:%M") if r.get("started_at") else "–"
        t.add_row(
            *plain(
                [
                    str(r["id"]),
                    r["sweep"],
                    started,
                    ", ".join(devices[r["id"]]) or "–",
                    r["status"],
                    counts_in_words(r.get("counts") or {"planned": r.get("n_jobs") or 0}),
                    r["source"],
                    r.get("marked") or "",
                ]
            )
        )
    console.print(t)
    total = run_queries.store_counts(url).get("runs", len(runs))
    if total > len(runs):
        console.print(f"the newest {len(runs)} of {total} runs; --limit N lists more", highlight=False)
    if any(r.get("marked") for r in runs):
        console.print(
            "a marked run was made under conditions its commit and device do not say (uncommitted changes, a GPU "
            "shared with other nodes, a rehearsal): trends, regressions and compare leave it out unless asked",
            highlight=False,
        )
    console.print("show one with `python -m orchestrator report RUN`", highlight=False)
    return 0


COMMAND = Subcommand(
    name="runs",
    help="list the runs (id, sweep, date, device, status, counts), newest first",
    add_arguments=add_arguments,
    run=run,
)
