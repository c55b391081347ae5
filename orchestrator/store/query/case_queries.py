"""The input cases a run's correctness jobs checked (workers/jobs/input_cases.py), per job and implementation.

The correctness job keeps each case's figures in its attempt's details (``details.cases``: case -> implementation ->
rel_err, max_abs, ok, note; ``{"applies": false}`` where a case does not apply to the kernel); results from before the
cases were declared have none, and their rows say so (``cases`` empty).
"""

from __future__ import annotations

from typing import Any

from orchestrator.store.models import Job
from orchestrator.store.query.access import Source, read_session
from orchestrator.store.query.picked import pick_for_run, run_jobs, run_or_raise
from workers.kinds.correctness import NAME as CORRECTNESS


def case_results(src: Source, run_id: int) -> list[dict[str, Any]]:
    """One row per correctness job of run ``run_id``: kernel, shape, dtype, status, ``cases`` (the names checked, in
    order), ``skipped`` (cases that do not apply) and ``failed`` (implementation -> [(case, note)])."""
    with read_session(src) as s:
        run_or_raise(s, run_id)
        jobs = run_jobs(s, run_id, Job.kind == CORRECTNESS, order_by=(Job.kernel, Job.shape_key, Job.dtype, Job.id))
        picked = pick_for_run(s, run_id, jobs)
        rows = []
        for p in picked:
            details = (p.attempt.details if p.attempt else p.job.details) or {}
            cases = details.get("cases") or {}
            order = [c for c in details.get("case_names") or [] if c in cases]  # as checked (a file sorts the keys)
            cases = {c: cases[c] for c in [*order, *(c for c in cases if c not in order)]}
            failed: dict[str, list[tuple[str, str]]] = {}
            for case, figures in cases.items():
                for impl, f in figures.items():
                    if isinstance(f, dict) and not f.get("ok", True):
                        failed.setdefault(impl, []).append((case, str(f.get("note") or "")))
            rows.append(
                {
                    "kernel": p.job.kernel,
                    "shape": list(p.job.shape or []),
                    "dtype": p.job.dtype,
                    "status": p.status,
                    "cases": [c for c, f in cases.items() if f.get("applies", True) is not False],
                    "skipped": [c for c, f in cases.items() if f.get("applies", True) is False],
                    "failed": failed,
                }
            )
    return rows
