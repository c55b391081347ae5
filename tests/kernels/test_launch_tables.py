"""A launch-table row marked ``measured`` has a tune run behind it: its source names the docs/perf page of that GPU
type's tune runs (which exists), the runs, and the date, device and commit they were measured with."""

from __future__ import annotations

import re
from pathlib import Path

from kernels import registry

REPO = Path(__file__).resolve().parents[2]
# what `python -m orchestrator tune table --write` writes (orchestrator/reports/tune_table.py)
TUNED = re.compile(r"^(docs/perf/tune-[a-z0-9_-]+\.md), runs? \d+(, \d+)* \(\d{4}-\d{2}-\d{2}, [^,]+, [0-9a-f]{7,}\)$")


def _tables():
    seen = {}
    for name in registry.kernel_names():
        entry = registry.get(name)
        for table in (entry.launch_table, entry.tune.table if entry.tune else None):
            if table is not None:
                seen.setdefault(id(table), table)
    return list(seen.values())


def test_every_measured_row_names_the_tune_run_behind_it():
    tables = _tables()
    assert len(tables) >= 8
    measured = 0
    for table in tables:
        for arch, row in table.rows.items():
            if not row.measured:
                continue
            measured += 1
            m = TUNED.match(row.source)
            assert m, f"{table.kernel} {arch}: measured=True needs a tune run as its source, not {row.source!r}"
            assert (REPO / m.group(1)).is_file(), f"{table.kernel} {arch}: {m.group(1)} does not exist"
    assert measured >= 1  # the H200 rows the tune sweep wrote
