"""python -m orchestrator import RESULTS.jsonl [MORE.jsonl ...]: store results run elsewhere (``python -m workers
run``) as a run.  Several files are the shards of one plan (``--shard I/N``, possibly on several machines): they
must come from the same plan (same plan key and commit) and are stored as one run; a job found in more than one
file keeps its last result.

python -m orchestrator import DIR: every results file under DIR (``.jsonl``, ``.jsonl.gz``, recursively), e.g. the
repository's ``results/``: the shards of each plan as one run, a file that measures again jobs of an earlier file
as a run of its own (its results stored as new attempts), the runs in the order they were measured.  An imported
run is dated by its results (the first job's start, the last job's end), not by the import."""
from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter
from pathlib import Path

from rich.console import Console

from orchestrator import report
from orchestrator.store_access import open_writer
from workers import runner
from workers.spec import STATUS_OK, STATUS_SKIPPED


class ShardMismatch(ValueError):
    """Results files that cannot be stored together."""


def read_shards(paths: list[str]) -> tuple[dict, list]:
    """The header of the first file and every (spec, result) row of all files, checked to share one plan."""
    header, rows = runner.read_results(paths[0])
    plan = header.get("plan") or {}
    for path in paths[1:]:
        other, more = runner.read_results(path)
        o = other.get("plan") or {}
        for key in ("plan_key", "commit"):
            if o.get(key) != plan.get(key):
                raise ShardMismatch(f"{path} is from another plan than {paths[0]} ({key} {o.get(key)!r} != "
                                   f"{plan.get(key)!r}); import it on its own")
        rows += more
    return header, rows


def _measured_span(rows: list) -> tuple[dt.datetime | None, dt.datetime | None]:
    """When the results were measured: the first job's start and the last job's end (None when they carry no time)."""
    spans = [(r.started_at, r.started_at + (r.duration_s or 0.0)) for _, r in rows if r.started_at is not None]
    if not spans:
        return None, None
    return (dt.datetime.fromtimestamp(min(a for a, _ in spans), dt.timezone.utc),
            dt.datetime.fromtimestamp(max(b for _, b in spans), dt.timezone.utc))


def _digest(paths: list[str]) -> str:
    digests = sorted(hashlib.sha256(runner.content(p)).hexdigest() for p in paths)
    return digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()


def _store(writer, header: dict, rows: list, digest: str, force: bool = False) -> tuple[int, int, list]:
    """Store the rows as one imported run; returns (run id, results added, the run's specs)."""
    plan = header.get("plan") or {}
    specs = list({s.key: s for s, _ in rows}.values())
    started, finished = _measured_span(rows)
    run_id = writer.start_run(plan.get("sweep") or "imported", plan.get("config") or {},
                              plan.get("plan_key") or "", plan.get("commit") or "unknown",
                              plan.get("code_hash") or plan.get("kernels_hash") or "", source="import",
                              source_digest=digest, started_at=started)
    writer.add_jobs(run_id, [s.to_dict() for s in specs])
    added = 0
    ceilings: set[str] = set()
    for spec, res in rows:
        if res.device is not None:
            hw = writer.record_device(res.device.to_dict())
            gbs = res.details.get("copy_gbs")
            if gbs and hw not in ceilings and writer.copy_bandwidth(hw) is None:
                writer.set_copy_bandwidth(hw, float(gbs))
            ceilings.add(hw)
        added += bool(writer.record_result(run_id, res.to_dict(), force=force))
    statuses = Counter(writer.job_statuses([s.key for s in specs]).values())
    bad = sum(v for k, v in statuses.items() if k not in (STATUS_OK, STATUS_SKIPPED))
    writer.finish_run(run_id, "failed" if bad else "complete",
                      {"planned": len(specs), "imported": added, **{f"status_{k}": v for k, v in statuses.items()}},
                      finished_at=finished)
    return run_id, added, specs


def results_files(directory: str | Path) -> list[Path]:
    """Every results file under a directory (``.jsonl``, ``.jsonl.gz``), recursively, sorted by path."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))


def group_runs(files: list[tuple[str, dict, list]]) -> list[list[tuple[str, dict, list]]]:
    """(path, header, rows) of many results files -> the runs they make, in the order they were measured: files of
    one plan (plan key and commit) with no job in common are its shards (one run); a file that holds a job of an
    earlier file of its plan measured it again and is a run of its own."""
    def when(item):
        start, _ = _measured_span(item[2])
        return (start or dt.datetime.max.replace(tzinfo=dt.timezone.utc), item[0])

    runs: list[list] = []
    open_runs: dict[tuple, tuple[list, set]] = {}
    for item in sorted(files, key=when):
        plan = item[1].get("plan") or {}
        ident = (plan.get("plan_key"), plan.get("commit"))
        keys = {s.key for s, _ in item[2]}
        current = open_runs.get(ident)
        if current is not None and not keys & current[1]:
            current[0].append(item)
            current[1].update(keys)
            continue
        runs.append([item])
        open_runs[ident] = (runs[-1], set(keys))
    return runs


def import_directory(directory: str, url: str | None, console: Console) -> int:
    files = results_files(directory)
    if not files:
        console.print(f"[red]error:[/red] no results files (.jsonl, .jsonl.gz) under {directory}")
        return 2
    read, failed = [], 0
    for path in files:
        try:
            header, rows = runner.read_results(path)
        except (OSError, ValueError) as exc:
            console.print(f"[red]error:[/red] {exc}")
            failed += 1
            continue
        read.append((str(path), header, rows))
    writer, url = open_writer(url, console)
    runs = jobs = 0
    for group in group_runs(read):
        paths = [p for p, _, _ in group]
        names = ", ".join(paths)
        digest = _digest(paths)
        earlier = writer.find_import_run(digest)
        if earlier is not None:
            console.print(f"{names}: imported before as run {earlier}")
            continue
        rows = [row for _, _, r in group for row in r]
        run_id, added, specs = _store(writer, group[0][1], rows, digest, force=True)
        started, _ = _measured_span(rows)
        when = f" ({started:%Y-%m-%d %H:%M} UTC)" if started else ""
        console.print(f"run {run_id}{when}: {added} results of {len(specs)} jobs from {names}")
        runs += 1
        jobs += len(specs)
    console.print(f"imported {runs} runs ({jobs} jobs) from {len(read)} files under {directory}"
                  f"{f'; {failed} files unreadable' if failed else ''} (store {url})")
    return 2 if failed else 0


def import_results(paths: str | list[str], url: str | None, console: Console) -> int:
    paths = [paths] if isinstance(paths, str) else list(paths)
    if any(Path(p).is_dir() for p in paths):
        if len(paths) != 1:
            console.print("[red]error:[/red] name one directory, or results files (the shards of one plan)")
            return 2
        return import_directory(paths[0], url, console)
    if len(set(paths)) != len(paths):
        console.print("[red]error:[/red] the same results file is named twice")
        return 2
    try:
        header, rows = read_shards(paths)
    except ShardMismatch as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    digest = _digest(paths)
    path = ", ".join(paths)
    writer, url = open_writer(url, console)
    earlier = writer.find_import_run(digest)
    if earlier is not None:
        console.print(f"{path} was imported before as run {earlier}; nothing added (store {url})")
        return 0
    run_id, added, _ = _store(writer, header, rows, digest)
    from orchestrator.store import queries

    report.print_summary(console, queries.run_summary(url, run_id), f"run {run_id} · imported from {path}",
                         queries.e2e_results(url, run_id))
    console.print(f"imported {added} results of {len(rows)} jobs from {path} as run {run_id} (store {url})")
    return 0
