"""python -m orchestrator import RESULTS.jsonl: store results run elsewhere (``python -m workers run``) as a run."""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from rich.console import Console

from orchestrator import report
from orchestrator.store_access import open_writer
from workers import runner
from workers.spec import STATUS_OK, STATUS_SKIPPED


def import_results(path: str, url: str | None, console: Console) -> int:
    header, rows = runner.read_results(path)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    writer, url = open_writer(url, console)
    earlier = writer.find_import_run(digest)
    if earlier is not None:
        console.print(f"{path} was imported before as run {earlier}; nothing added (store {url})")
        return 0
    plan = header.get("plan") or {}
    specs = [s for s, _ in rows]
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
                         queries.e2e_results(url, run_id))
    console.print(f"imported {added} results of {len(rows)} jobs from {path} as run {run_id} (store {url})")
    return 0
