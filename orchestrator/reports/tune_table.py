"""``python -m orchestrator tune table``: from tune runs in the store to a reviewed change of the launch tables.

For a GPU type, each tunable kernel's newest tune run is read with every other run of the same plan (a plan run
twice: ``python -m workers run`` into two results files, each imported as a run; or ``--run`` names the runs).  Per
job (kernel, shape, dtype) the winner is the correct candidate of the lowest median (``--metric``, ``time_us`` by
default), and its margin over the current table's choice is judged with the regression rule
(orchestrator/stats/regression_rule.py, :func:`judge`): the current choice's points are the reference, the winner's
the current side; the winner counts only when the change is large (``--threshold``, 5 %), significant on the stored
repeats (one-sided Mann-Whitney U, p < 0.01) and large against the between-run spread, pooled over the kernel's
series (every candidate at every shape, each measured once per run) as the rule pools it for two runs per side.  One
run cannot measure that spread: every row then keeps the current choice, and the table says so.

Per width bucket (a launch-table row's key) the proposal is the candidate, among those measured at every shape of
the bucket and never confirmed slower than the current choice at any of them, that is confirmed faster at one
shape at least, with the best geometric-mean margin; otherwise the current choice.  The arch row of each kernel's
table is rewritten with the bucket choices, ``measured=True`` and ``source="docs/perf/tune-<gpu>.md, run N (date,
device, commit)"``, and printed as a unified diff of the kernel's module; ``--write`` applies it.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import math
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestrator.stats import regression_rule as rule
from orchestrator.store.query import tune_queries
from workers.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[2]


class TuneTableError(UserError, ValueError):
    prefix = "error"


# ------------------------------------------------------------------------------------------------ the margin rule


@dataclass
class Judged:
    """One job's outcome: the current choice, the winner, its margin (current median / winner median - 1), whether
    that is beyond the noise, and why."""

    shape: list[int]
    dtype: str
    current: str
    winner: str
    margin: float
    beyond_noise: bool
    reason: str
    medians: dict[str, float] = field(default_factory=dict)
    slower: set[str] = field(default_factory=set)  # candidates confirmed slower than the current choice
    faster: set[str] = field(default_factory=set)  # candidates confirmed faster than the current choice


def _points(series: list[dict[str, Any]], metric: str) -> list[rule.Point]:
    return [rule.Point(p.get(f"{metric}_samples") or [], p.get(metric)) for p in series]


def pooled_spread(jobs: list[dict[str, list[dict[str, Any]]]], metric: str) -> tuple[float | None, int]:
    """The between-run scale of a kernel's series (each candidate at each shape, one point per run) and its dof:
    replicate groups pooled as the regression rule pools two runs per side (:func:`rule.between_run_scale`)."""
    groups = []
    for per_impl in jobs:
        for series in per_impl.values():
            levels = [lv for lv in (p.level() for p in _points(series, metric)) if lv is not None]
            if len(levels) >= 2:
                groups.append(levels)
    return rule.between_run_scale(groups=groups)


def judge_job(
    per_impl: dict[str, list[dict[str, Any]]],
    current: str,
    spread: tuple[float | None, int],
    metric: str = "time_us",
    threshold: float = rule.DEFAULT_THRESHOLD,
    alpha: float = rule.DEFAULT_ALPHA,
    shape: list[int] | None = None,
    dtype: str = "",
) -> Judged:
    """``per_impl``: candidate -> its points (one per run: ``{metric, metric_samples, correct}``).  The winner and
    whether its margin over ``current`` is beyond the noise (:func:`rule.judge`, with ``spread``)."""
    correct = {
        impl: pts
        for impl, pts in per_impl.items()
        if pts and all(p.get("correct", 1.0) == 1.0 and p.get(metric) is not None for p in pts)
    }
    medians = {impl: statistics.median(p[metric] for p in pts) for impl, pts in correct.items()}
    if current not in medians:
        return Judged(shape or [], dtype, current, current, 0.0, False, "the current choice has no correct timing")
    winner = min(medians, key=lambda i: (medians[i], i != current))
    reference = _points(correct[current], metric)
    slower, faster = set(), set()
    for impl, pts in correct.items():
        if impl == current:
            continue
        v = rule.judge(reference, _points(pts, metric), spread=spread, threshold=threshold, alpha=alpha)
        if v is not None and v.status == rule.CONFIRMED:
            (slower if v.worse else faster).add(impl)
    margin = medians[current] / medians[winner] - 1.0
    if winner == current:
        return Judged(shape or [], dtype, current, winner, 0.0, False, "the current choice is fastest", medians, slower)
    v = rule.judge(reference, _points(correct[winner], metric), spread=spread, threshold=threshold, alpha=alpha)
    if v is None:
        reason = _why_not(reference, _points(correct[winner], metric), margin, spread, threshold, alpha)
        return Judged(shape or [], dtype, current, winner, margin, False, reason, medians, slower, faster)
    beyond = v.status == rule.CONFIRMED and not v.worse
    reason = v.reason if beyond else f"within noise: {v.reason}"
    return Judged(shape or [], dtype, current, winner, margin, beyond, reason, medians, slower, faster)


def _why_not(reference, current, margin: float, spread, threshold: float, alpha: float) -> str:
    """Which of the rule's conditions a margin the rule does not confirm fails."""
    if abs(margin) < threshold / (1 - threshold):
        return f"within noise: {margin:+.1%} is under the {threshold:.0%} threshold"
    pooled = [x for p in reference for x in p.samples]
    ps = [rule.compare(pooled, p.samples, threshold=threshold, alpha=alpha) for p in current]
    if any(c is None or not c.significant for c in ps):
        p = max((c.p_value for c in ps if c is not None), default=float("nan"))
        return f"within noise: not significant on the repeats (Mann-Whitney p = {p:.2g})"
    if spread[0] is None or spread[1] < rule.MIN_DOF:
        return f"within noise: between-run spread unknown ({spread[1]} dof): tune twice (two runs of the plan)"
    return f"within noise: inside the between-run spread ({spread[0]:.1%}, {spread[1]} dof)"


@dataclass
class BucketChoice:
    kernel: str
    bucket: str
    dtype: str
    current: str
    choice: str
    margin: float  # geometric mean over the bucket's shapes of current / choice - 1
    changed: bool
    reason: str
    jobs: list[Judged]


def choose_bucket(kernel: str, bucket: str, dtype: str, jobs: list[Judged]) -> BucketChoice:
    """The bucket's proposal (module docstring): a candidate confirmed faster somewhere and slower nowhere, measured
    at every shape, with the best geometric-mean margin; else the current choice."""
    currents = {j.current for j in jobs}
    current = jobs[0].current
    if len(currents) > 1:
        return BucketChoice(
            kernel, bucket, dtype, current, current, 0.0, False, "the shapes disagree on the current choice", jobs
        )
    common = set.intersection(*(set(j.medians) for j in jobs)) if jobs else set()

    def gain(impl: str) -> float:
        logs = [math.log(j.medians[current] / j.medians[impl]) for j in jobs]
        return math.exp(statistics.fmean(logs)) - 1.0

    ok = [
        impl
        for impl in common - {current}
        if not any(impl in j.slower for j in jobs) and any(impl in j.faster for j in jobs)
    ]
    if not ok or current not in common:
        why = "no candidate is faster beyond noise at one shape and not slower at any"
        return BucketChoice(kernel, bucket, dtype, current, current, 0.0, False, why, jobs)
    best = max(ok, key=gain)
    g = gain(best)
    if g <= 0:
        return BucketChoice(kernel, bucket, dtype, current, current, 0.0, False, "no candidate is faster overall", jobs)
    n = sum(best in j.faster for j in jobs)
    why = f"faster beyond noise at {n} of {len(jobs)} shapes, slower at none"
    return BucketChoice(kernel, bucket, dtype, current, best, g, True, why, jobs)


# ---------------------------------------------------------------------------------------------- the table writer


def table_location(table) -> tuple[Path, str]:
    """The module file that declares ``table`` (a LaunchTable named ``table.kernel``) and its module name."""
    import importlib

    from kernels import registry

    for name in registry.kernel_names():
        entry = registry.get(name)
        if entry.launch_table is table and entry.function is not None:
            module = importlib.import_module(entry.function.__module__)
            return Path(module.__file__), entry.function.__module__
    raise TuneTableError(f"no kernel module declares the launch table {table.kernel!r}")


def _launch_table_call(tree: ast.AST, kernel: str) -> ast.Call:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "LaunchTable"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == kernel
        ):
            return node
    raise TuneTableError(f"no LaunchTable({kernel!r}, ...) in the kernel's module")


def _offset(lines: list[str], lineno: int, col: int) -> int:
    """The character offset of an ast position (``col`` counts UTF-8 bytes)."""
    return sum(len(line) for line in lines[: lineno - 1]) + len(lines[lineno - 1].encode()[:col].decode())


def rewrite_rows(text: str, table, arch: str, new_row) -> str:
    """``text`` (a kernel module's source) with the ``arch`` row of its ``LaunchTable(table.kernel, ...)`` replaced
    by ``new_row`` (added when the table has no such row, or no rows at all); the rest untouched."""
    entry = f"{json.dumps(arch)}: {table.row_source(new_row)}"  # double quotes, as ruff writes them
    tree = ast.parse(text)
    call = _launch_table_call(tree, table.kernel)
    lines = text.splitlines(keepends=True)
    rows = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "rows"), None)
    if rows is None:
        end = _offset(lines, call.end_lineno, call.end_col_offset) - 1  # the closing parenthesis
        return text[:end] + f", {{{entry}}}" + text[end:]
    if not isinstance(rows, ast.Dict):
        raise TuneTableError(f"the rows of LaunchTable({table.kernel!r}, ...) are not a dict literal; edit by hand")
    for key, value in zip(rows.keys, rows.values):
        if isinstance(key, ast.Constant) and key.value == arch:
            start = _offset(lines, key.lineno, key.col_offset)
            end = _offset(lines, value.end_lineno, value.end_col_offset)
            return text[:start] + entry + text[end:]
    end = _offset(lines, rows.end_lineno, rows.end_col_offset) - 1  # the closing brace
    before = text[:end].rstrip()
    sep = " " if before.endswith(("{", ",")) else ", "
    return before + sep + entry + ",\n" + text[end:]


def formatted(text: str, path: Path) -> str:
    """``text`` as ``ruff format`` writes it (the project's style), when ruff is installed."""
    ruff = shutil.which("ruff")
    if not ruff:
        return text
    out = subprocess.run(
        [ruff, "format", "--stdin-filename", str(path), "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    return out.stdout if out.returncode == 0 else text


def unified(old: str, new: str, path: Path) -> str:
    rel = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}"))


def proposed_row(entry, arch: str, choices: dict[str, dict[str, int]], source: str):
    """The kernel table's ``arch`` row with ``choices`` (bucket -> candidate knobs), measured, with ``source``; the
    table rebuilt from records (``records``/``with_records``) round-trips it."""
    tune = entry.tune
    table = tune.table
    row = tune.with_choices(table.for_arch(arch), choices)
    row = dataclasses.replace(row, measured=True, source=source)
    records = [r for r in table.records() if r["arch"] != arch]
    records.append({"arch": arch, **{f.name: getattr(row, f.name) for f in dataclasses.fields(row)}})
    rebuilt = table.with_records(records)
    return rebuilt.for_arch(arch)


# ------------------------------------------------------------------------------------------------- the command


def _runs_for(url: str, gpu_type: str, runs: list[int] | None, kernel: str | None) -> dict[str, list[dict]]:
    """kernel -> the runs judged for it (newest first)."""
    all_runs = tune_queries.tune_runs(url, gpu_type)
    if runs:
        by_id = {r["id"]: r for r in all_runs}
        missing = [r for r in runs if r not in by_id]
        if missing:
            raise TuneTableError(f"run {missing[0]} holds no tune results measured on {gpu_type}")
        chosen = [by_id[r] for r in runs]
        kernels = sorted({k for r in chosen for k in r["kernels"]})
        return {k: [r for r in chosen if k in r["kernels"]] for k in kernels if kernel in (None, k)}
    out: dict[str, list[dict]] = {}
    for r in all_runs:  # newest first
        for k in r["kernels"]:
            if kernel not in (None, k):
                continue
            if k not in out:
                out[k] = [r]
            elif r["plan_key"] == out[k][0]["plan_key"]:
                out[k].append(r)
    return out


def build(
    url: str,
    gpu_type: str,
    runs: list[int] | None = None,
    kernel: str | None = None,
    metric: str = "time_us",
    threshold: float = rule.DEFAULT_THRESHOLD,
    include_cpu: bool = False,
) -> dict[str, Any]:
    """Everything ``tune table`` prints and writes: per kernel the judged jobs, the bucket choices, the proposed
    row and the module diff."""
    from kernels import registry

    if metric not in tune_queries.TIMINGS:
        raise TuneTableError(f"--metric {metric}: not a timing; allowed: {', '.join(tune_queries.TIMINGS)}")
    if gpu_type == "cpu" and not include_cpu:
        raise TuneTableError(
            "--gpu-type cpu: timings from Triton's interpreter are not a kernel's speed; --include-cpu to read them"
        )
    known = {t for r in tune_queries.tune_runs(url) for t in r["gpu_types"]}
    if gpu_type not in known:
        raise TuneTableError(
            f"no tune run measured on GPU type {gpu_type!r}; GPU types with tune runs: "
            f"{', '.join(sorted(known)) or 'none'} (run `python -m orchestrator +sweep=tune target={gpu_type}` first)"
        )
    if kernel is not None:
        try:
            registry.get(kernel)
        except registry.UnknownKernelError as exc:
            raise TuneTableError(str(exc)) from None
    per_kernel = _runs_for(url, gpu_type, runs, kernel)
    if not per_kernel:
        raise TuneTableError(f"no tune run of {kernel or 'any kernel'} measured on {gpu_type}")
    out: dict[str, Any] = {"gpu_type": gpu_type, "metric": metric, "kernels": {}}
    # path -> (the module as read, as every kernel so far left it): a module may hold several kernels' tables, and
    # each kernel's change is made on the text the one before it left
    files: dict[Path, tuple[str, str]] = {}
    for kname, kruns in sorted(per_kernel.items()):
        entry = registry.get(kname)
        if entry.tune is None or entry.tune.table is None:
            continue
        newest = kruns[0]
        by_job: dict[tuple, dict[str, Any]] = {}
        for r in kruns:
            for row in tune_queries.tune_results(url, r["id"], kname, gpu_type):
                job = by_job.setdefault(
                    (row["shape_key"], row["dtype"]),
                    {"row": row, "points": {}, "bucket": row["bucket"], "current": row["current"]},
                )
                for impl, figures in row["candidates"].items():
                    job["points"].setdefault(impl, []).append(figures)
        jobs = sorted(by_job.values(), key=lambda j: (j["row"]["dtype"], [int(x) for x in j["row"]["shape"]]))
        if not jobs:
            continue
        spread = pooled_spread([j["points"] for j in jobs], metric)
        judged = [
            judge_job(
                j["points"], j["current"], spread, metric, threshold, shape=j["row"]["shape"], dtype=j["row"]["dtype"]
            )
            for j in jobs
        ]
        buckets: dict[tuple[str, str], list[Judged]] = {}
        for j, jd in zip(jobs, judged):
            buckets.setdefault((j["bucket"], jd.dtype), []).append(jd)
        choices = [choose_bucket(kname, b, dt, js) for (b, dt), js in sorted(buckets.items())]
        arch = jobs[0]["row"]["arch"]  # the launch tables' key (sm_90, gfx950...; "cpu" on the interpreter)
        device = jobs[0]["row"]["device"]["name"]
        # one choice per bucket: the launch tables do not key by dtype; the first dtype's (the grid's) decides
        per_bucket: dict[str, BucketChoice] = {}
        for c in choices:
            per_bucket.setdefault(c.bucket, c)
        date = newest["started_at"].date().isoformat() if newest["started_at"] else "unknown date"
        commit = (newest["commit"] or "unknown")[:10]
        run_ids = ", ".join(str(r["id"]) for r in sorted(kruns, key=lambda r: r["id"]))
        word = "run" if len(kruns) == 1 else "runs"
        source = f"docs/perf/tune-{gpu_type}.md, {word} {run_ids} ({date}, {device}, {commit})"
        knobs_of = {c.bucket: _knobs(entry, c.choice) for c in per_bucket.values()}
        row = proposed_row(entry, arch, knobs_of, source)
        path, module = table_location(entry.tune.table)
        original, old = files.get(path) or (path.read_text(),) * 2
        new = formatted(rewrite_rows(old, entry.tune.table, arch, row), path)
        files[path] = (original, new)
        out["kernels"][kname] = {
            "runs": [r["id"] for r in kruns],
            "arch": arch,
            "device": device,
            "spread": spread,
            "jobs": judged,
            "buckets": choices,
            "row": row,
            "path": path,
            "module": module,
            "old": old,
            "new": new,
            "diff": unified(old, new, path),
        }
    out["files"] = files
    return out


def _knobs(entry, impl: str) -> dict[str, int]:
    from kernels import tune as kernel_tune

    return kernel_tune.parse_impl(entry.tune, impl)


def run_table(rows: list[dict[str, Any]], title: str) -> Table:
    """A tune run's jobs (tune_queries.tune_results rows): candidates timed and dropped, the current choice, the
    fastest correct candidate by time_us and its margin (not yet judged against noise: ``tune table`` does)."""
    t = Table(title=title, title_justify="left")
    for col in ("kernel", "shape", "dtype", "bucket", "timed", "dropped", "current", "fastest", "margin", "status"):
        t.add_column(col, overflow="fold")
    for r in rows:
        best = tune_queries.fastest(r)
        current = r["candidates"].get(r["current"], {})
        correct = current.get("time_us") is not None and current.get("correct", 1.0) == 1.0
        margin = current["time_us"] / r["candidates"][best]["time_us"] - 1 if best and correct else None
        cells = (
            r["kernel"],
            r["shape_key"],
            r["dtype"],
            r["bucket"],
            str(len(r["candidates"])),
            str(len(r["dropped"])),
        )
        cells += (r["current"] or "", best or "", f"{margin:+.1%}" if margin is not None else "", r["status"])
        t.add_row(*map(Text, cells))
    return t


def run_notes(rows: list[dict[str, Any]]) -> list[str]:
    types = sorted({r["device"]["gpu_type"] for r in rows if r["device"]["gpu_type"]})
    return [
        f"judge the margins against the between-run spread and propose the launch-table change: "
        f"python -m orchestrator tune table --gpu-type {t}" + (" --include-cpu" if t == "cpu" else "")
        for t in types
    ]


def print_table(result: dict[str, Any], console: Console) -> None:
    for kname, k in result["kernels"].items():
        scale, dof = k["spread"]
        spread = f"{scale:.2%} ({dof} dof)" if scale is not None else f"unknown ({dof} dof: one run)"
        t = Table(
            title=f"{kname} on {result['gpu_type']} ({k['arch']}), runs {', '.join(map(str, sorted(k['runs'])))}: "
            f"{result['metric']}, between-run spread {spread}",
            title_justify="left",
        )
        for col in ("bucket", "dtype", "shape", "current", "winner", "margin", "beyond noise", "why"):
            t.add_column(col, overflow="fold")
        for c in k["buckets"]:
            for j in c.jobs:
                cells = (c.bucket, j.dtype, "x".join(map(str, j.shape)), j.current, j.winner, f"{j.margin:+.1%}")
                t.add_row(*map(Text, (*cells, "yes" if j.beyond_noise else "no", j.reason)))
            verdict = f"-> {c.choice} ({c.margin:+.1%})" if c.changed else f"-> keep {c.current}"
            cells = (c.bucket, c.dtype, "bucket", c.current, c.choice, f"{c.margin:+.1%}", "", f"{verdict}: {c.reason}")
            t.add_row(*map(Text, cells), style="bold")
        console.print(t)
    for k in result["kernels"].values():
        if k["diff"]:
            console.print(k["diff"], markup=False, highlight=False, end="")
        else:
            console.print(f"{k['path']}: no change", markup=False)


def run(args, console: Console) -> int:
    from orchestrator.store.session import resolve_url

    url = resolve_url(getattr(args, "url", None))
    result = build(url, args.gpu_type, args.run or None, args.kernel, args.metric, args.threshold, args.include_cpu)
    print_table(result, console)
    if args.write:
        for path, (original, new) in result["files"].items():
            if new != original:
                path.write_text(new)
                console.print(f"wrote {path}", markup=False)
    return 0
