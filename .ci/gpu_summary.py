"""The GPU suite's one-screen summary (.ci/gpu): counts, every failure with its first line, the device, torch and
Triton versions, the commit and the date, as Markdown, from pytest's junit file.

    python .ci/gpu_summary.py gpu-suite/junit.xml [--exit-code N]

The commit is ``$KERNELFLEET_COMMIT`` where it is set (a copy of the tree sent to a GPU machine), else ``git rev-parse
--short HEAD`` (with ``+dirty`` when the tree has changes).
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter


def commit() -> str:
    given = os.environ.get("KERNELFLEET_COMMIT")
    if given:  # a copy of the tree sent elsewhere, perhaps put in a fresh repository of its own there
        return given
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
        return head + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("KERNELFLEET_COMMIT", "unknown")


def device() -> str:
    import torch
    import triton

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    stack = f"ROCm {torch.version.hip}" if torch.version.hip else f"CUDA {torch.version.cuda}"
    return f"{name}, torch {torch.__version__} ({stack}), Triton {triton.__version__}, Python {sys.version.split()[0]}"


def outcomes(junit: str) -> tuple[Counter, list[tuple[str, str, str]], float]:
    """Counts by outcome, the failed and errored tests (id, outcome, first line of the message), seconds."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts: Counter = Counter()
    bad: list[tuple[str, str, str]] = []
    seconds = 0.0
    for suite in suites:
        seconds += float(suite.get("time") or 0)
        for case in suite.iter("testcase"):
            test = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                node = case.find(tag)
                if node is not None:
                    counts[outcome] += 1
                    if outcome != "skipped":
                        first = (node.get("message") or node.text or "").strip().splitlines()
                        bad.append((test, outcome, first[0][:200] if first else ""))
                    break
            else:
                counts["passed"] += 1
    return counts, bad, seconds


def summary(junit: str, exit_code: int | None) -> str:
    counts, bad, seconds = outcomes(junit)
    lines = [
        f"## GPU suite, {datetime.date.today().isoformat()}, commit `{commit()}`",
        "",
        f"- device: {device()}",
        f"- {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped in {seconds:.0f} s"
        + (f" (pytest exit {exit_code})" if exit_code is not None else ""),
    ]
    if bad:
        lines += ["", "| test | outcome | first line |", "|---|---|---|"]
        lines += [f"| `{t}` | {o} | {m.replace('|', '/')} |" for t, o, m in bad]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit")
    ap.add_argument("--exit-code", type=int)
    args = ap.parse_args(argv)
    print(summary(args.junit, args.exit_code))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
