"""Run a list of JobSpecs on this machine's device through the sandbox, and the JSON-lines files around it.

The same runner serves a Ray task on a fleet node and ``python -m workers run PLAN.jsonl`` on a machine outside
the cluster.  A plan file is a header line (``{"kernelfleet": "plan", ...}``: sweep, composed config, plan key,
code version) followed by one JobSpec per line; a results file is a header (``{"kernelfleet": "results",
"plan": <plan header>}``) followed by one ``{"spec": ..., "result": ...}`` line per job, written as each job ends.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import math
import zlib
from pathlib import Path
from typing import Iterable, Iterator

from workers.errors import UserError
from workers.sandbox import ChildInfo, run_jobs
from workers.spec import JobResult, JobSpec

PLAN_FORMAT = 1


def run(specs: Iterable[JobSpec], node_id: str | None = None, env: dict[str, str] | None = None,
        info: ChildInfo | None = None) -> Iterator[JobResult]:
    for result in run_jobs(specs, env=env, info=info):
        result.node_id = node_id
        yield result


def _open(path: str | Path, mode: str = "r"):
    """A plan or results file, read decompressed when its name ends in ``.gz`` (results kept in docs/perf/)."""
    return gzip.open(path, mode + "t" if mode == "r" else mode) if str(path).endswith(".gz") else open(path, mode)


@contextlib.contextmanager
def _readable(path: str | Path) -> Iterator[None]:
    """A truncated or damaged ``.gz`` becomes a UserError naming the file (gzip raises EOFError or BadGzipFile)."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise UserError(f"{path}: the compressed file is truncated or damaged ({exc}); copy it again") from None


def content(path: str | Path) -> bytes:
    """A plan's or results file's bytes (decompressed)."""
    with _readable(path):
        with _open(path, "rb") as f:
            return f.read()


def _json_lines(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-empty line; a last line cut short by an interrupted writer is dropped.
    A ``.gz`` file is read decompressed."""
    with _readable(path), _open(path) as f:
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
            spec = JobSpec.from_dict(obj)
            check_params(spec.params)
        except (TypeError, ValueError, AttributeError) as exc:
            raise UserError(f"{path}:{n}: not a JobSpec: {exc}") from None
        specs.append(spec)
    if header is None:
        raise ValueError(f"{path}: no plan header; write plans with `python -m orchestrator +sweep=NAME dry_run=true`")
    return header, specs


# Job parameters the runner and the job kinds read as numbers: (name, smallest allowed, integer)
NUMERIC_PARAMS = (("timeout_s", 0.0, False), ("warmup_ms", 0.0, False), ("rep_ms", 0.0, False),
                  ("rounds", 1, True), ("seed", 0, True))


def check_params(params: dict) -> None:
    """ValueError naming the parameter when a numeric job parameter is not a finite number in range."""
    if not isinstance(params, dict):
        raise ValueError(f"params: expected an object, got {type(params).__name__}")
    for name, low, integer in NUMERIC_PARAMS:
        if name not in params or (name == "seed" and params[name] is None):
            continue
        v = params[name]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if ok and integer:
            ok = float(v).is_integer() and v >= low
        elif ok:
            ok = v > low
        if not ok:
            want = f"an integer >= {low}" if integer else f"a finite number > {low:g}"
            raise ValueError(f"params.{name}: {v!r} is not {want}")


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
