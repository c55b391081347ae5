"""python -m orchestrator export --format csv|parquet|jsonl|liger|tritonbench [--run RUN] [--since DATE] [--out FILE]
[--force]

One row per measurement in a long format a pandas user pivots (result_queries.EXPORT_COLUMNS: the series key columns
kind, kernel/model, shape, dtype, impl, target, gpu_type, hardware_key; then commit, run_id, job_key, attempt,
status, measured_at, metric, value, unit, then correct: the implementation's own correctness verdict in that
attempt, false where it failed (its times are no speed-up), and marked: the run's conditions, as `runs` shows
them).  Rows stream from the database in batches and are written as they come, so a store of millions of
measurements never sits in memory.  The store is opened read-only.

``liger`` and ``tritonbench`` write the micro timings in the shapes Liger-Kernel's and TritonBench's tools read
(orchestrator/interchange/tool_formats.py): ``liger`` a CSV (FILE or standard output), ``tritonbench`` a folder
(``--out DIR``: one ``op_<operator>.csv`` per kernel, dtype and GPU type, and ``tritonbench.json``).  The rows
themselves are written by orchestrator/interchange/export.py.

``--out`` is written under a temporary name and renamed when complete (an interrupted export leaves the path as it
was) and an existing one is replaced only with ``--force`` (orchestrator/interchange/out_file.py)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys

from orchestrator.cli import arg_types
from orchestrator.cli.errors import UsageError
from orchestrator.cli.subcommand import Subcommand
from orchestrator.interchange import out_file
from orchestrator.interchange.export import BATCH, FORMATS, export


def add_arguments(ex: argparse.ArgumentParser) -> None:
    ex.add_argument("--format", choices=FORMATS, default="csv", help="output format (default csv)")
    ex.add_argument("--run", type=arg_types.run_id, help="only the attempts this run recorded")
    ex.add_argument(
        "--since", help="only attempts measured at or after DATE (YYYY-MM-DD or ISO time; UTC unless it names a zone)"
    )
    ex.add_argument(
        "--out",
        help="file to write (default: standard output; parquet needs a file, tritonbench a folder); written under "
        "a temporary name and renamed when complete",
    )
    ex.add_argument("--force", action="store_true", help="replace an existing --out (refused without it)")
    ex.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")


def parse_since(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--since {text!r}: not a date (YYYY-MM-DD or an ISO time)") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def run(args: argparse.Namespace, console=None) -> int:
    """The export (``console`` unused: rows go to standard output or ``--out``, progress to stderr)."""
    from orchestrator.store.query import access, result_queries, run_queries

    since = parse_since(args.since)
    if args.format == "parquet" and not args.out:
        raise UsageError("--format parquet writes a binary file: give --out FILE")
    if args.out:  # before the store is read: an existing file is not replaced unasked
        out_file.check(args.out, args.force, folder=args.format == "tritonbench")
    engine = access.open_read_only(access.store_url(args.url))
    if args.run is not None and run_queries.run_info(engine, args.run) is None:
        raise UsageError(f"--run {args.run}: no such run in the store")
    if args.format in ("liger", "tritonbench"):
        return _tool_export(engine, args, since)
    rows = result_queries.iter_measurements(engine, run_id=args.run, since=since, batch=BATCH)
    try:
        n = export(rows, args.format, args.out)
    except BrokenPipeError:  # the reader went away (`| head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0
    if args.out:
        print(f"exported {n} measurements to {args.out}", file=sys.stderr)
    return 0


def _tool_export(engine, args: argparse.Namespace, since: dt.datetime | None) -> int:
    from pathlib import Path

    from orchestrator.interchange import tool_formats
    from orchestrator.store.query.timing_queries import iter_timings

    if args.format == "tritonbench" and not args.out:
        raise UsageError("--format tritonbench writes a folder (op_<operator>.csv, tritonbench.json): give --out DIR")
    rows = tool_formats.newest_per_series(iter_timings(engine, run_id=args.run, since=since))
    if args.format == "tritonbench":
        with out_file.replaced(Path(args.out), folder=True) as tmp:
            n = tool_formats.write_tritonbench(rows, tmp)
    elif args.out:
        with out_file.replaced(Path(args.out)) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
            n = tool_formats.write_liger(rows, f)
    else:
        try:
            n = tool_formats.write_liger(rows, sys.stdout)
        except BrokenPipeError:  # the reader went away (`| head`): not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    if args.out:
        print(f"exported {n} timings to {args.out}", file=sys.stderr)
    return 0


COMMAND = Subcommand(
    name="export",
    help="every measurement as long-format rows (csv, parquet or jsonl), streamed; or the micro timings as "
    "Liger-Kernel's benchmark CSV (liger) or TritonBench's CSV and JSON (tritonbench)",
    add_arguments=add_arguments,
    run=run,
)
