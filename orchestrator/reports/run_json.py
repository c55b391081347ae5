"""One run as the JSON document ``kernelfleet.report`` (docs/json.md): what `python -m orchestrator report --json`
prints and what a sweep writes to ``summary_json=PATH`` when it ends."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

SCHEMA = "kernelfleet.report"
SCHEMA_VERSION = 1
RUN_FIELDS = ("id", "sweep", "commit", "code_hash", "status", "source", "started_at", "finished_at", "counts")


def plain(value: Any) -> Any:
    """A value as JSON holds it: times as ISO text, NaN and infinities as null, tuples as lists."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def run_document(url: str, run_id: int) -> dict[str, Any]:
    """The document of run ``run_id``; KeyError when the store has no such run."""
    from orchestrator.store.query import result_queries, run_queries
    from orchestrator.store.session import display_url

    info = run_queries.run_info(url, run_id)
    if info is None:
        raise KeyError(f"no run {run_id}")
    measured = run_queries.run_measured(url, run_id)
    return plain(
        {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "store": display_url(url),
            "run": {k: info.get(k) for k in RUN_FIELDS},
            "measured": {k: measured[k] for k in ("devices", "measured_from", "measured_to")},
            "results": run_queries.run_summary(url, run_id),
            "e2e": result_queries.e2e_results(url, run_id),
            "isa": result_queries.isa_results(url, run_id),
        }
    )


def write(url: str, run_id: int, path: str | Path) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(run_document(url, run_id), sort_keys=True, allow_nan=False) + "\n")
