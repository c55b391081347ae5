"""python -m orchestrator explain: why a series changed between two sides, from their captures side by side.

    python -m orchestrator explain --baseline B1 B2 --current C1 C2 --kernel rmsnorm --shape 2x1320x2048 \\
        --dtype bf16 --impl triton [--markdown FILE] [--json]

The sides are REFs as ``compare`` takes them (run ids, a commit of stored runs, a branch): for a confirmed
regression, ``regressions --json`` gives its ``reference_runs`` and ``run_id``, ``bisect --json`` each step's
``baseline_runs`` and ``current_runs``.  What the sides' runs hold
of the series is read (orchestrator/store/query/explain_queries.py) and compared (orchestrator/stats/explain.py): the
autotuner's pick, the profile's kernels, launches and device time, the isa jobs' launch configuration and resources.
Capture what a side lacks with the same sweep and ``sweep.kinds=[profile,isa]`` at its commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console

SCHEMA, SCHEMA_VERSION = "kernelfleet.explain", 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline", nargs="+", required=True, metavar="REF", help="run ids, a commit or a branch (compare)"
    )
    p.add_argument("--current", nargs="+", required=True, metavar="REF", help="run ids, a commit or a branch")
    p.add_argument("--kernel", required=True)
    p.add_argument("--shape", required=True, help="e.g. 2x1320x2048")
    p.add_argument("--dtype", required=True)
    p.add_argument("--impl", required=True)
    p.add_argument("--markdown", metavar="FILE", help="write the explanation as Markdown (a pull-request comment)")
    p.add_argument("--json", action="store_true", help="print it as JSON (schema kernelfleet.explain)")
    p.add_argument("--url", help="store URL (default: $KERNELFLEET_DB, else the default SQLite file)")


def run(args: argparse.Namespace, console: Console) -> int:
    from orchestrator.cli import compare_refs
    from orchestrator.stats.explain import markdown
    from orchestrator.store.query.compare_queries import RefError
    from orchestrator.store.query.explain_queries import explanation
    from orchestrator.store.session import resolve_url

    url = resolve_url(args.url)
    try:
        baseline, current = compare_refs.resolve(url, args.baseline)[0], compare_refs.resolve(url, args.current)[0]
        doc = explanation(url, baseline, current, args.kernel, args.shape, args.dtype, args.impl)
    except RefError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    series = f"{args.kernel} {args.shape} {args.dtype} {args.impl}"
    if doc["time_us"] == [None, None]:
        print(f"error: the runs hold no micro result of {series}", file=sys.stderr)
        return 2
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(series, doc))
    if args.json:
        print(json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **doc}, sort_keys=True, default=str))
        return 0
    p = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    t0, t1 = doc["time_us"]
    if doc["change"] is not None:
        p(f"{series}: {t0:.2f} -> {t1:.2f} µs ({doc['change']:+.1%})")
    for line in doc["changes"] or ["no difference in the captures"]:
        p(f"  {line}")
    for line in doc["missing"]:
        p(f"  not captured: {line}")
    if args.markdown:
        p(f"wrote {args.markdown}")
    return 0


COMMAND = Subcommand(
    name="explain",
    help="why a series changed: the two sides' profiles and machine code side by side",
    add_arguments=add_arguments,
    run=run,
)
