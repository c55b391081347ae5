"""python -m orchestrator import RESULTS.jsonl [MORE.jsonl ...]: store results run elsewhere (``python -m workers
run``) as a run.  Several files are the shards of one plan (``--shard I/N``, possibly on several machines): they
must come from the same plan (same plan key and commit) and are stored as one run; a job found in more than one
file keeps its last result."""
from __future__ import annotations

import hashlib
from collections import Counter

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


def import_results(paths: str | list[str], url: str | None, console: Console) -> int:
    paths = [paths] if isinstance(paths, str) else list(paths)
    if len(set(paths)) != len(paths):
        console.print("[red]error:[/red] the same results file is named twice")
        return 2
    try:
        header, rows = read_shards(paths)
    except ShardMismatch as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    digests = sorted(hashlib.sha256(runner.content(p)).hexdigest() for p in paths)
    digest = digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()
    path = ", ".join(paths)
    writer, url = open_writer(url, console)
    earlier = writer.find_import_run(digest)
    if earlier is not None:
        console.print(f"{path} was imported before as run {earlier}; nothing added (store {url})")
        return 0
    plan = header.get("plan") or {}
    specs = list({s.key: s for s, _ in rows}.values())
    run_id = writer.start_run(plan.get("sweep") or "imported", plan.get("config") or {},
                              plan.get("plan_key") or "", plan.get("commit") or "unknown",
                              plan.get("kernels_hash") or "", source="import", source_digest=digest)
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
        added += bool(writer.record_result(run_id, res.to_dict()))
    statuses = Counter(writer.job_statuses([s.key for s in specs]).values())
    bad = sum(v for k, v in statuses.items() if k not in (STATUS_OK, STATUS_SKIPPED))
    writer.finish_run(run_id, "failed" if bad else "complete",
                      {"planned": len(specs), "imported": added, **{f"status_{k}": v for k, v in statuses.items()}})
    from orchestrator.store import queries

    report.print_summary(console, queries.run_summary(url, run_id), f"run {run_id} · imported from {path}",
                         queries.e2e_results(url, run_id), queries.isa_results(url, run_id))
    console.print(f"imported {added} results of {len(rows)} jobs from {path} as run {run_id} (store {url})")
    return 0
