"""python -m workers run PLAN.jsonl --out RESULTS.jsonl: run planned jobs on this machine, without Ray.

python -m workers upgrade PATH [PATH ...]: rewrite plan and results files (every ``.jsonl`` and ``.jsonl.gz`` under a
folder) in the current format of their kind (workers/runtime/file_formats.py; docs/json.md); files in it already are
left as they are."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from workers.errors import UserError, exit_on_user_error
from workers.runtime import file_formats, keys, runner
from workers.spec import GOOD_STATUSES, STATUS_OK


def _run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    try:
        header, specs = runner.read_plan(args.plan)
        differs = keys.check_plan(header, specs)
    except ValueError as exc:  # one line, exit 2 (exit_on_user_error)
        raise UserError(" ".join(str(exc).split())) from None
    if differs:
        console.print(f"[yellow]warning:[/] software differs from the plan's: {escape('; '.join(differs))}")
    if args.keys:
        wanted = set(args.keys.split(","))
        unknown = wanted - {s.key for s in specs}
        if unknown:
            console.print(f"[red]error:[/] --keys: not in the plan: {escape(', '.join(sorted(unknown)))}")
            return 2
        specs = [s for s in specs if s.key in wanted]
    if args.shard:
        try:
            i, n = (int(v) for v in args.shard.split("/"))
            if not 1 <= i <= n:
                raise ValueError
        except ValueError:
            console.print(f"[red]error:[/] --shard {escape(args.shard)}: expected I/N with 1 <= I <= N, e.g. 2/3")
            return 2
        specs = specs[i - 1 :: n]
    out_path = Path(args.out)
    if out_path.exists() and not args.resume:
        raise UserError(
            f"--out {args.out} exists: add --resume to go on with it (the jobs it holds are skipped), or "
            f"name another file; it is not overwritten"
        )
    if not out_path.parent.is_dir():
        raise UserError(f"--out {args.out}: the folder {out_path.parent} does not exist")
    done: set[str] = set()
    mode = "w"
    if args.resume:
        done, mode = resume_point(args.out, header, console)
    todo = [s for s in specs if s.key not in done]
    console.print(
        f"{len(specs)} jobs in {args.plan}: {len(specs) - len(todo)} done earlier, {len(todo)} to run", markup=False
    )
    counts: Counter[str] = Counter()
    node = f"local:{socket.gethostname()}"
    with (
        open(args.out, mode) as out,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[state]}"),
            TimeRemainingColumn(),
            console=console,
        ) as bar,
    ):
        if mode == "w":
            out.write(runner.results_header(header))
            out.flush()
        task = bar.add_task("jobs", total=len(todo), state="")
        by_key = {s.key: s for s in todo}
        for result in runner.run(todo, node_id=node):
            out.write(
                json.dumps({"spec": by_key[result.key].to_dict(), "result": result.to_dict()}, sort_keys=True) + "\n"
            )
            out.flush()
            counts[result.status] += 1
            if result.status != STATUS_OK:
                console.print(
                    f"[yellow]{escape(by_key[result.key].label())}[/]: {result.status}: "
                    f"{escape((result.error or '')[:300])}"
                )
            bar.update(task, advance=1, state=" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    console.print(
        f"results: {args.out} ({', '.join(f'{k}={v}' for k, v in sorted(counts.items())) or 'nothing run'});"
        f" store them with `python -m orchestrator import {args.out}`",
        markup=False,
    )
    return 0 if all(k == STATUS_OK for k in counts) else 1


def resume_point(out: str, plan_header: dict, console: Console) -> tuple[set[str], str]:
    """Where ``--resume`` goes on in ``out``: (keys with a good result, open mode).  A missing or empty file (a full
    disk, a run killed before its header was written whole) starts afresh with a new header ("w"); a file of another
    plan is refused, so one results file never mixes two plans."""
    try:
        cut = runner.cut_partial_line(out)
    except FileNotFoundError:
        return set(), "w"
    if cut:
        console.print(f"{escape(out)}: its last line was cut off ({cut} bytes, an interrupted run); removed it")
    if Path(out).stat().st_size == 0:
        return set(), "w"
    try:
        results, rows = runner.read_results(out)
    except ValueError as exc:
        raise UserError(" ".join(str(exc).split())) from None
    theirs = results.get("plan") or {}
    for field in ("plan_key", "commit"):
        if theirs.get(field) != plan_header.get(field):
            raise UserError(
                f"--out {out} holds results of another plan ({field} {theirs.get(field)!r}, this plan's is "
                f"{plan_header.get(field)!r}); name another --out file, nothing was appended"
            )
    return {s.key for s, r in rows if r.status in GOOD_STATUSES}, "a"


def _upgrade(args: argparse.Namespace) -> int:
    """Every file first checked readable (a newer format, or no header: one line, exit 2, nothing rewritten), then
    each older one rewritten."""
    files: list[Path] = []
    for name in args.paths:
        path = Path(name)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.name.endswith((".jsonl", ".jsonl.gz")) and p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{name}: no such file or folder")
    for path in files:
        first = next(runner.json_lines(path), None)
        kind = file_formats.of_header(first[1]) if first else None
        if kind is None:
            raise UserError(f"{path}: no plan or results header; not a file `python -m workers upgrade` rewrites")
        kind.version(path, first[1])
    counts: Counter = Counter()
    for path in files:
        kind, was, now = runner.upgrade_file(path)
        counts[(kind, was, now)] += 1
        if was != now:
            print(f"{path}: {kind} format {was} -> {now}")
    upgraded = sum(n for (_, was, now), n in counts.items() if was != now)
    print(f"{upgraded} of {len(files)} files upgraded; the others were in the current format already")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m workers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the jobs of a plan file on this machine's device, one sandbox, no Ray")
    r.add_argument("plan", help="plan file from `python -m orchestrator +sweep=NAME dry_run=true`")
    r.add_argument("--out", required=True, help="results file (JSON lines), written as each job ends")
    r.add_argument("--keys", help="comma-separated job keys: run only these (to reproduce one failing job)")
    r.add_argument(
        "--resume",
        action="store_true",
        help="append to --out, skipping jobs it already holds (without "
        "it an existing --out is refused, never overwritten)",
    )
    r.add_argument(
        "--shard",
        metavar="I/N",
        help="run only every N-th job starting at the I-th (split a long plan over several calls)",
    )
    u = sub.add_parser(
        "upgrade", help="rewrite plan and results files (or every one under a folder) in the current format"
    )
    u.add_argument("paths", nargs="+", help="files, or folders searched for .jsonl and .jsonl.gz files (e.g. results/)")
    args = ap.parse_args(argv)
    if args.cmd == "upgrade":
        try:
            return exit_on_user_error(lambda: _upgrade(args))
        except ValueError as exc:  # a file json_lines cannot read (FILE:LINE: why)
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
    try:
        return exit_on_user_error(lambda: _run(args))
    except KeyboardInterrupt:
        print(
            f"interrupted (Ctrl-C): {args.out} holds the jobs finished so far; go on with "
            f"`python -m workers run {args.plan} --out {args.out} --resume`",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
