"""Run a list of JobSpecs on this machine's device through the sandbox, and the JSON-lines files around it.

The same runner serves a Ray task on a fleet node and ``python -m workers run PLAN.jsonl`` on a machine outside
the cluster.  A plan file is a header line (``{"kernelfleet": "plan", ...}``: sweep, composed config, plan key,
code version) followed by one JobSpec per line; a results file is a header (``{"kernelfleet": "results",
"plan": <plan header>}``) followed by one ``{"spec": ..., "result": ...}`` line per job, written as each job ends.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Iterable, Iterator

from workers.child import COMPILE_ONLY_ENV
from workers.sandbox import ChildInfo, run_jobs
from workers.spec import COMPILE_ONLY_KINDS, JobResult, JobSpec

PLAN_FORMAT = 1


def run(specs: Iterable[JobSpec], node_id: str | None = None, env: dict[str, str] | None = None,
        info: ChildInfo | None = None) -> Iterator[JobResult]:
    """Results of ``specs``: the jobs that run kernels first, in one sandbox, then the compile-only jobs (``isa``)
    in a sandbox of their own, which compiles the kernels instead of interpreting them and measures nothing."""
    specs = list(specs)
    measured = [s for s in specs if s.kind not in COMPILE_ONLY_KINDS]
    compile_only = [s for s in specs if s.kind in COMPILE_ONLY_KINDS]
    groups = [(measured, env, info)]
    if compile_only:
        base = dict(os.environ if env is None else env)
        groups.append((compile_only, {**base, COMPILE_ONLY_ENV: "1", "KERNELFLEET_MEASURE_CEILING": "0"}, None))
    for group, group_env, group_info in groups:
        if not group:
            continue
        for result in run_jobs(group, env=group_env, info=group_info):
            result.node_id = node_id
            yield result


def _open(path: str | Path, mode: str = "r"):
    """A plan or results file, read decompressed when its name ends in ``.gz`` (results kept in docs/perf/)."""
    return gzip.open(path, mode + "t" if mode == "r" else mode) if str(path).endswith(".gz") else open(path, mode)


def content(path: str | Path) -> bytes:
    """A plan's or results file's bytes (decompressed)."""
    with _open(path, "rb") as f:
        return f.read()


def _json_lines(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-empty line; a last line cut short by an interrupted writer is dropped.
    A ``.gz`` file is read decompressed."""
    with _open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as exc:
                if n > 1 and not line.endswith("\n"):
                    return  # the lines before it stand
                raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None


def read_plan(path: str | Path) -> tuple[dict, list[JobSpec]]:
    header: dict | None = None
    specs: list[JobSpec] = []
    for n, obj in _json_lines(path):
        if n == 1 and obj.get("kernelfleet") == "plan":
            header = obj
            continue
        try:
            specs.append(JobSpec.from_dict(obj))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{n}: not a JobSpec: {exc}") from None
    if header is None:
        raise ValueError(f"{path}: no plan header; write plans with `python -m orchestrator +sweep=NAME dry_run=true`")
    return header, specs


def write_plan(path: str | Path, header: dict, specs: list[JobSpec]) -> None:
    with open(path, "w") as f:
        f.write(json.dumps({"kernelfleet": "plan", "format": PLAN_FORMAT, **header}, sort_keys=True) + "\n")
        for s in specs:
            f.write(s.to_json() + "\n")


def read_results(path: str | Path) -> tuple[dict, list[tuple[JobSpec, JobResult]]]:
    header: dict | None = None
    rows: list[tuple[JobSpec, JobResult]] = []
    for n, obj in _json_lines(path):
        if obj.get("kernelfleet") == "results":
            header = obj
            continue
        if "spec" not in obj or "result" not in obj:
            raise ValueError(f"{path}:{n}: expected a {{'spec', 'result'}} line")
        rows.append((JobSpec.from_dict(obj["spec"]), JobResult.from_dict(obj["result"])))
    if header is None:
        raise ValueError(f"{path}: no results header; results files come from `python -m workers run`")
    return header, rows
