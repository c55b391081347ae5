"""python -m orchestrator import RESULTS.jsonl [MORE.jsonl ...]: store results run elsewhere (``python -m workers
run``) as a run.

All or nothing: every line of every file is checked before anything is written (each spec's key must be the
planner's hash of its content and code version, each value of the type and size the store holds, no line cut
off), then the run, its jobs and its results are written in one transaction.  A bad line stops the import with
``FILE:LINE: problem`` and exit 2, and the store stays as it was; the corrected file then imports completely.  A file
of an older results format is upgraded as it is read, one of a newer format refused in one line
(workers/runtime/file_formats.py).

Several files are the shards of one plan (``--shard I/N``, possibly on several machines): they must come from
the same plan (same plan key and commit) and are stored as one run.  A job found in several lines (overlapping
shards, a file resumed after a failure) is taken in the order the files are named, then line by line: its first
good result (ok, incorrect, skipped) is kept and later lines for it add nothing; a failed result before it is
kept as an earlier attempt.  A result the store holds already (the same result, byte for byte: see
orchestrator/store/writer.py) adds nothing; a job measured again (another result of a job the store holds, e.g.
the same plan run twice for an A/A comparison) is stored as a new attempt, in the new run.  Files that add nothing
create no run ("nothing new").

python -m orchestrator import DIR: every results file under DIR (``.jsonl``, ``.jsonl.gz``, recursively), e.g. the
repository's ``results/``: all files are checked first, then each run is written in its own transaction, in the
order they were measured: the shards of one plan (same plan key and commit, no job in common) as one run, a file
that measures jobs of an earlier file again as a run of its own.  An imported run is dated by its results (the
first job's start, the last job's end), not by the import.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rich.console import Console

from orchestrator.plan.jobs import CodeVersion, job_key
from orchestrator.reports import summary as report
from orchestrator.run import conditions as run_conditions
from orchestrator.store import conditions as store_conditions
from orchestrator.store.checks import Invalid, check_result, check_spec, plain_text
from orchestrator.store.errors import user_error_line
from orchestrator.store.models import Run
from orchestrator.store.open import open_writer
from orchestrator.store.session import display_url, public_config
from workers.errors import UserError
from workers.runtime import file_formats, runner
from workers.spec import STATUS_INCORRECT, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec

HEADER_FIELDS = {"sweep": Run.sweep, "plan_key": Run.plan_key, "commit": Run.commit}
GOOD = (STATUS_OK, STATUS_INCORRECT, STATUS_SKIPPED)


class ShardMismatch(UserError, ValueError):
    """Results files that cannot be stored together."""


class BadResults(UserError, ValueError):
    """A results file the store must not take; the message starts with FILE:LINE."""


class _NothingNew(Exception):
    """Every result is in the store already: the import's transaction is rolled back."""


class _ImportedBefore(Exception):
    """These files were imported before, as run ``args[0]``."""


def _code_hash(plan: dict):
    """The plan's code version as the run records it (``kernels_hash`` in plans of key scheme 1)."""
    return plan.get("code_hash", plan.get("kernels_hash"))


def _check_header(path: str, n: int, obj: dict) -> tuple[dict, Callable[[dict], dict]]:
    """The file's plan header, in the current results format, and the upgrade of its further lines (an older
    format's file is upgraded as it is read: workers/runtime/file_formats.py)."""
    if obj.get("kernelfleet") != "results":
        raise BadResults(f"{path}:{n}: no results header; results files come from `python -m workers run`")
    try:
        obj, upgrade = file_formats.RESULTS.reader(path, obj)
    except file_formats.FormatError as exc:
        raise BadResults(f"{path}:{n}: {str(exc).removeprefix(f'{path}: ')}") from None
    if not isinstance(obj.get("plan"), dict):
        raise BadResults(f"{path}:{n}: no results header; results files come from `python -m workers run`")
    plan = obj["plan"]
    try:
        plain_text("plan", plan)
        for name, column in HEADER_FIELDS.items():
            value = plan.get(name)
            if not isinstance(value, str) or len(value) > column.type.length:
                raise Invalid(
                    f"plan.{name}: expected a string of at most {column.type.length} characters, got {value!r:.60}"
                )
        code = _code_hash(plan)
        if not isinstance(code, str) or len(code) > Run.code_hash.type.length:
            raise Invalid(
                f"plan.code_hash: expected a string of at most {Run.code_hash.type.length} characters, got {code!r:.60}"
            )
        if not isinstance(plan.get("config", {}), dict):
            raise Invalid("plan.config: expected an object")
        store_conditions.checked(plan.get("conditions"), "plan.conditions")
        CodeVersion.from_dict(plan)
    except (Invalid, ValueError) as exc:
        raise BadResults(f"{path}:{n}: {exc}") from None
    return plan, upgrade


def _check_row(path: str, n: int, obj: dict, code: CodeVersion) -> tuple[JobSpec, JobResult]:
    if obj.get("kernelfleet") == "results":
        raise BadResults(f"{path}:{n}: a second results header (files joined together? import them side by side)")
    extra = sorted(set(obj) - {"spec", "result"})
    missing = sorted({"spec", "result"} - set(obj))
    if extra or missing:
        raise BadResults(
            f"{path}:{n}: expected a {{spec, result}} line; "
            + (
                "; ".join(
                    filter(None, (missing and f"missing {', '.join(missing)}", extra and f"unknown {', '.join(extra)}"))
                )
            )
        )
    try:
        spec = check_spec(obj["spec"])
        result = check_result(obj["result"])
    except (Invalid, ValueError, TypeError) as exc:  # ValueError: an unknown metric, raised as the row is built
        raise BadResults(f"{path}:{n}: {exc}") from None
    expected = job_key(spec, code)
    if spec.key != expected:
        raise BadResults(
            f"{path}:{n}: spec.key {spec.key!r} is not the key of the spec's content and code version "
            f"({expected!r}): the spec was changed after planning"
        )
    if result.key != spec.key:
        raise BadResults(
            f"{path}:{n}: result.key {result.key!r} is not its spec's key {spec.key!r} (a result of no planned job)"
        )
    return spec, result


def read_file(path: str) -> tuple[dict, list[tuple[JobSpec, JobResult]]]:
    """The plan header and every (spec, result) row of one results file, each line checked (BadResults)."""
    plan: dict | None = None
    code: CodeVersion | None = None
    upgrade: Callable[[dict], dict] | None = None
    rows: list[tuple[JobSpec, JobResult]] = []
    try:
        for n, obj in runner.json_lines(path):
            if plan is None:
                plan, upgrade = _check_header(path, n, obj)
                code = CodeVersion.from_dict(plan)
                continue
            rows.append(_check_row(path, n, upgrade(obj), code))
    except ValueError as exc:
        if isinstance(exc, BadResults):
            raise
        raise BadResults(str(exc)) from None
    if plan is None:
        raise BadResults(f"{path}: empty; results files come from `python -m workers run`")
    return plan, rows


def read_shards(paths: list[str]) -> tuple[dict, list[tuple[JobSpec, JobResult]]]:
    """The plan header of the first file and every (spec, result) row of all files, checked to share one plan."""
    plan, rows = read_file(paths[0])
    for path in paths[1:]:
        other, more = read_file(path)
        for key in ("plan_key", "commit"):
            if other.get(key) != plan.get(key):
                raise ShardMismatch(
                    f"{path} is from another plan than {paths[0]} ({key} {other.get(key)!r} != "
                    f"{plan.get(key)!r}); import it on its own"
                )
        rows += more
    return plan, rows


def import_results(paths: str | list[str], url: str | None, console: Console) -> int:
    """Import the files (see the module doc); 0 when stored or already stored, 2 (one line on stderr) when not: a
    user error (orchestrator/cli/errors.py), such as a file that is missing or not a results file; any other exception
    is a bug and propagates."""
    try:
        return _import(paths if isinstance(paths, list) else [paths], url, console)
    except Exception as exc:
        line = user_error_line(exc)
        if line is None:
            raise
        print(f"error: {' '.join(line.split())}", file=sys.stderr)
        return 2


def _import(paths: list[str], url: str | None, console: Console) -> int:
    if any(Path(p).is_dir() for p in paths):
        if len(paths) != 1:
            raise BadResults("name one directory, or results files (the shards of one plan)")
        return _import_directory(paths[0], url, console)
    if len(set(paths)) != len(paths):
        raise BadResults("the same results file is named twice")
    stored = _store_files(paths, url, console)
    path, shown = ", ".join(paths), display_url(stored.url)
    if stored.earlier is not None:
        said = f"{path} was imported before as run {stored.earlier}; nothing added (store {shown})"
        console.print(said, markup=False)
    elif stored.run_id is None:
        where = f"already in run {', '.join(map(str, stored.held))}" if stored.held else "already in the store"
        console.print(f"{path}: nothing new; {where} (store {shown})", markup=False)
    else:
        report.print_run_summary(console, stored.url, stored.run_id, f"run {stored.run_id} · imported from {path}")
        console.print(
            f"imported {stored.added} results of {stored.jobs} jobs from {path} as run {stored.run_id} (store {shown})",
            markup=False,
        )
    return 0


def import_as_run(paths: list[str], url: str, console: Console) -> int:
    """Import results files (the shards of one plan) and return the id of the run that holds them: the new run, or
    the run of an earlier import of the same files, or the run already holding every result.  Errors are raised
    (BadResults, ShardMismatch, StoreError), not printed: for callers that go on with the run (bisect)."""
    stored = _store_files(paths, url, console)
    if stored.run_id is not None:
        return stored.run_id
    if stored.earlier is not None:
        return stored.earlier
    if not stored.held:
        raise BadResults(f"{', '.join(paths)}: no result to import")
    return max(stored.held)


@dataclass(frozen=True)
class _Stored:
    """What importing one plan's results files did: the new run (``run_id``, ``added`` results of ``jobs`` rows), or
    the run of an earlier import of the same files (``earlier``), or nothing new (``held``: the runs holding them)."""

    url: str
    jobs: int
    run_id: int | None = None
    added: int = 0
    earlier: int | None = None
    held: tuple[int, ...] = ()


def _store_files(paths: list[str], url: str | None, console: Console) -> _Stored:
    plan, rows = read_shards(paths)
    digest = _digest(paths)
    writer, url = open_writer(url, console)
    try:
        specs = list({s.key: s for s, _ in rows}.values())
        try:
            run_id, added = _write(writer, plan, specs, rows, digest, file_conditions(plan, paths))
        except _ImportedBefore as earlier:
            return _Stored(url, len(rows), earlier=int(earlier.args[0]))
        except _NothingNew:
            return _Stored(url, len(rows), held=tuple(writer.runs_holding([s.key for s in specs])))
    finally:
        writer.close()
    return _Stored(url, len(rows), run_id=run_id, added=added)


def _digest(paths: list[str]) -> str:
    digests = sorted(runner.digest(p) for p in paths)
    return digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()


def _measured_span(rows: list) -> tuple[dt.datetime | None, dt.datetime | None]:
    """When the results were measured: the first job's start and the last job's end (None when they carry no time)."""
    spans = [(r.started_at, r.started_at + (r.duration_s or 0.0)) for _, r in rows if r.started_at is not None]
    if not spans:
        return None, None
    return (
        dt.datetime.fromtimestamp(min(a for a, _ in spans), dt.timezone.utc),
        dt.datetime.fromtimestamp(max(b for _, b in spans), dt.timezone.utc),
    )


def _first_good(rows: list[tuple[JobSpec, JobResult]]) -> list[tuple[JobSpec, JobResult]]:
    """The rows an import stores: per job, every line up to and including its first good result."""
    done: set[str] = set()
    kept = []
    for spec, res in rows:
        if spec.key in done:
            continue
        kept.append((spec, res))
        if res.status in GOOD:
            done.add(spec.key)
    return kept


def file_conditions(plan: dict, paths: list[str]) -> dict | None:
    """What the run of these files was made under: the header's conditions (a sweep or plan made from a dirty
    checkout) and what the ``conditions.json`` beside them says (orchestrator/run/conditions.py)."""
    try:
        return store_conditions.merged(plan.get("conditions"), *(run_conditions.manifest_conditions(p) for p in paths))
    except ValueError as exc:
        raise BadResults(str(exc)) from None


def _write(
    writer,
    plan: dict,
    specs: list[JobSpec],
    rows: list[tuple[JobSpec, JobResult]],
    digest: str,
    conditions: dict | None = None,
) -> tuple[int, int]:
    """The run, its jobs and results in one transaction (imports one at a time); _ImportedBefore or _NothingNew
    (rolled back) when nothing was added."""
    started, finished = _measured_span(rows)
    with writer.transaction("import"):
        earlier = writer.find_import_run(digest)  # recorded only by an import that succeeded
        if earlier is not None:
            raise _ImportedBefore(earlier)
        run_id = writer.start_run(
            plan["sweep"] or "imported",
            public_config(plan.get("config") or {}),  # a plan written before passwords were masked keeps none
            plan["plan_key"],
            plan["commit"],
            _code_hash(plan),
            source="import",
            source_digest=digest,
            started_at=started,
        )
        if conditions:
            writer.mark_run(run_id, conditions)
        writer.add_jobs(run_id, [s.to_dict() for s in specs])
        added = 0
        ceilings: set[str] = set()
        for _, res in _first_good(rows):
            if res.device is not None:
                hw = writer.record_device(res.device.to_dict())
                gbs = res.details.get("copy_gbs")
                if gbs and hw not in ceilings and writer.copy_bandwidth(hw) is None:
                    writer.set_copy_bandwidth(hw, float(gbs))
                ceilings.add(hw)
            # force: a job measured again is a new attempt; the same result twice still adds nothing
            added += bool(writer.record_result(run_id, res.to_dict(), force=True))
        if not added:
            raise _NothingNew
        statuses = Counter(writer.job_statuses([s.key for s in specs]).values())
        bad = sum(v for k, v in statuses.items() if k not in (STATUS_OK, STATUS_SKIPPED))
        writer.finish_run(
            run_id,
            "failed" if bad else "complete",
            {"planned": len(specs), "imported": added, **{f"status_{k}": v for k, v in statuses.items()}},
            finished_at=finished,
        )
    return run_id, added


def results_files(directory: str | Path) -> list[Path]:
    """Every results file under a directory (``.jsonl``, ``.jsonl.gz``), recursively, sorted by path."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))


def group_runs(files: list[tuple[str, dict, list]]) -> list[list[tuple[str, dict, list]]]:
    """(path, plan, rows) of many results files -> the runs they make, in the order they were measured: files of
    one plan (plan key and commit) with no job in common are its shards (one run); a file that holds a job of an
    earlier file of its plan measured it again and is a run of its own."""

    def when(item):
        start, _ = _measured_span(item[2])
        return (start or dt.datetime.max.replace(tzinfo=dt.timezone.utc), item[0])

    runs: list[list] = []
    open_runs: dict[tuple, tuple[list, set]] = {}
    for item in sorted(files, key=when):
        ident = (item[1].get("plan_key"), item[1].get("commit"))
        keys = {s.key for s, _ in item[2]}
        current = open_runs.get(ident)
        if current is not None and not keys & current[1]:
            current[0].append(item)
            current[1].update(keys)
            continue
        runs.append([item])
        open_runs[ident] = (runs[-1], set(keys))
    return runs


def _import_directory(directory: str, url: str | None, console: Console) -> int:
    files = results_files(directory)
    if not files:
        raise BadResults(f"no results files (.jsonl, .jsonl.gz) under {directory}")
    read = [(str(path), *read_file(str(path))) for path in files]  # every file checked before anything is written
    writer, url = open_writer(url, console)
    runs = jobs = 0
    try:
        for group in group_runs(read):
            paths = [p for p, _, _ in group]
            names = ", ".join(paths)
            rows = [row for _, _, r in group for row in r]
            specs = list({s.key: s for s, _ in rows}.values())
            try:
                run_id, added = _write(
                    writer, group[0][1], specs, rows, _digest(paths), file_conditions(group[0][1], paths)
                )
            except _ImportedBefore as earlier:
                console.print(f"{names}: imported before as run {earlier.args[0]}", markup=False)
                continue
            except _NothingNew:
                console.print(f"{names}: nothing new", markup=False)
                continue
            started, _ = _measured_span(rows)
            when = f" ({started:%Y-%m-%d %H:%M} UTC)" if started else ""
            console.print(f"run {run_id}{when}: {added} results of {len(specs)} jobs from {names}", markup=False)
            runs += 1
            jobs += len(specs)
    finally:
        writer.close()
    console.print(
        f"imported {runs} runs ({jobs} jobs) from {len(read)} files under {directory} (store {display_url(url)})",
        markup=False,
    )
    return 0
