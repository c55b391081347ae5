"""Measurements written as they stream from the store: CSV, JSON lines or Parquet, to a file replaced only when complete
(out_file.py) or to standard output.  The command line is orchestrator/cli/export.py; the long format's columns are
result_queries.EXPORT_COLUMNS."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

from orchestrator.interchange import out_file
from workers.errors import UserError

FORMATS = ("csv", "parquet", "jsonl", "liger", "tritonbench")
BATCH = 20000


def export(rows: Iterable[dict[str, Any]], fmt: str, out: str | None) -> int:
    """Write ``rows`` to ``out`` (a path, replaced when complete: out_file.py; None: standard output) in ``fmt``;
    returns how many."""
    if out is None:
        return _csv(rows, sys.stdout) if fmt == "csv" else _jsonl(rows, sys.stdout)
    from pathlib import Path

    with out_file.replaced(Path(out)) as tmp:
        if fmt == "parquet":
            return _parquet(rows, str(tmp))
        with open(tmp, "w", newline="", encoding="utf-8") as stream:
            return _csv(rows, stream) if fmt == "csv" else _jsonl(rows, stream)


def _text(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.datetime) else value


def _json_value(value: Any) -> Any:
    """A value strict JSON can hold: an infinite or NaN float becomes null (JSON has no Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return _text(value)


def _csv(rows: Iterable[dict[str, Any]], stream: IO[str]) -> int:
    from orchestrator.store.query.csv_cells import csv_cell
    from orchestrator.store.query.result_queries import EXPORT_COLUMNS

    w = csv.writer(stream, lineterminator="\n")
    w.writerow(EXPORT_COLUMNS)
    n = 0
    for r in rows:
        w.writerow(["" if r[c] is None else csv_cell(_text(r[c])) for c in EXPORT_COLUMNS])
        n += 1
    return n


def _jsonl(rows: Iterable[dict[str, Any]], stream: IO[str]) -> int:
    n = 0
    for r in rows:
        stream.write(
            json.dumps({k: _json_value(v) for k, v in r.items()}, separators=(",", ":"), allow_nan=False) + "\n"
        )
        n += 1
    return n


def _batches(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for r in rows:
        batch.append(r)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def parquet_schema():
    import pyarrow as pa

    text = pa.string()
    return pa.schema(
        [
            ("kind", text),
            ("kernel", text),
            ("model", text),
            ("shape", text),
            ("dtype", text),
            ("impl", text),
            ("target", text),
            ("gpu_type", text),
            ("hardware_key", text),
            ("commit", text),
            ("run_id", pa.int64()),
            ("job_key", text),
            ("attempt", pa.int64()),
            ("status", text),
            ("measured_at", pa.timestamp("us", tz="UTC")),
            ("metric", text),
            ("value", pa.float64()),
            ("unit", text),
            ("correct", pa.bool_()),
            ("marked", text),
        ]
    )


def _parquet(rows: Iterable[dict[str, Any]], out: str | None) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("--format parquet needs pyarrow: pip install 'kernelfleet[export]'") from None
    schema = parquet_schema()
    n = 0
    with pq.ParquetWriter(out, schema) as writer:
        for batch in _batches(rows, BATCH):
            writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
            n += len(batch)
    if n == 0:  # an empty store still gives a readable file with the schema
        pq.write_table(schema.empty_table(), out)
    return n
