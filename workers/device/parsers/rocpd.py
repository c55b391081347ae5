"""rocprofv3's ``rocpd`` output: the SQLite database (``<pid>_results.db``) that rocprofv3 writes by default since
ROCm 7.0 (CSV is the older default, and since then a deprecated option).

The database holds its data in tables named with a per-session suffix (``rocpd_kernel_dispatch_<uuid>``...) and
exposes them through views without it (``rocpd_kernel_dispatch``, ``rocpd_info_kernel_symbol``, ``rocpd_timestamp``,
``rocpd_track``, ``rocpd_info_agent``), plus the convenience view ``kernels`` (one row per dispatch: ``name``,
``start``, ``end``, agent, queue, stream, grid and workgroup sizes, register counts).  The schema is ROCm's:
rocprofiler-sdk's ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql``, ``rocpd_views.sql`` and
``data_views.sql`` (schema version 3), described in "Using rocpd output format" (rocprofiler-sdk documentation).

:func:`read_kernel_dispatches` reads the ``kernels`` view where it exists, else joins the base views itself (a
database without the convenience views, or one whose dispatch rows carry ``start``/``end`` directly), and returns the
same :class:`~workers.device.parsers.rocprofv3.KernelDispatch` records as the CSV parser, so one summary serves both.
The database is opened read-only.  Not yet run on a database written on AMD hardware: tested on databases built from the
documented schema.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from workers.device.parsers.rocprofv3 import KernelDispatch

KERNELS_VIEW = """
SELECT name, start, "end", agent_absolute_index, queue_id, kernel_id, correlation_id, dispatch_id, tid, stream_id,
       workgroup_x, workgroup_y, workgroup_z, grid_x, grid_y, grid_z, lds_size, scratch_size,
       arch_vgpr_count, accum_vgpr_count, sgpr_count
FROM kernels ORDER BY start, "end"
"""


def _base_query(dispatch_columns: set[str]) -> str:
    """The ``kernels`` view's columns from the base views (timestamps through ``rocpd_timestamp`` where the dispatch
    row holds their ids, else its own ``start``/``end``)."""
    if {"start_id", "end_id"} <= dispatch_columns:
        times = "DS.value, DE.value"
        joins = (
            "JOIN rocpd_timestamp DS ON DS.id = K.start_id AND DS.guid = K.guid "
            "JOIN rocpd_timestamp DE ON DE.id = K.end_id AND DE.guid = K.guid"
        )
    else:
        times, joins = 'K.start, K."end"', ""
    return f"""
SELECT COALESCE(S.display_name, S.kernel_name), {times}, A.absolute_index, T.queue_id, K.kernel_id, E.correlation_id,
       K.dispatch_id, T.tid, T.stream_id, K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z,
       K.grid_size_x, K.grid_size_y, K.grid_size_z, K.group_segment_size, K.private_segment_size,
       S.arch_vgpr_count, S.accum_vgpr_count, S.sgpr_count
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
{joins}
LEFT JOIN rocpd_track T ON T.id = K.track_id AND T.guid = K.guid
LEFT JOIN rocpd_info_agent A ON A.id = T.agent_id AND A.guid = K.guid
LEFT JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
"""


def _int(value) -> int | None:
    return int(value) if value is not None else None


def read_kernel_dispatches(path: str | Path) -> list[KernelDispatch]:
    """Every kernel dispatch in a rocpd database, ordered by start.  ValueError for a file that is not one (not
    SQLite, or without the ``kernels`` view and the ``rocpd_kernel_dispatch`` view or table)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise ValueError(f"{path}: cannot open as SQLite: {exc}") from None
    try:
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{path}: not an SQLite database: {exc}") from None
        if "kernels" in names:
            rows = con.execute(KERNELS_VIEW).fetchall()
        elif "rocpd_kernel_dispatch" in names:
            columns = {r[1] for r in con.execute("PRAGMA table_info(rocpd_kernel_dispatch)")}
            rows = sorted(con.execute(_base_query(columns)).fetchall(), key=lambda r: (r[1], r[2]))
        else:
            raise ValueError(f"{path}: not a rocpd database (no `kernels` view, no `rocpd_kernel_dispatch`)")
    except sqlite3.Error as exc:
        raise ValueError(f"{path}: unreadable rocpd database: {exc}") from None
    finally:
        con.close()
    out = []
    for r in rows:
        name, start, end, agent, *rest = r
        if start is None or end is None:
            continue
        queue, kernel_id, corr, dispatch, tid, stream, wx, wy, wz, gx, gy, gz, lds, scratch, vgpr, accum, sgpr = rest
        out.append(
            KernelDispatch(
                name=str(name),
                start_ns=int(start),
                end_ns=int(end),
                agent=f"Agent {agent}" if agent is not None else "",
                queue_id=_int(queue),
                kernel_id=_int(kernel_id),
                correlation_id=_int(corr),
                dispatch_id=_int(dispatch),
                thread_id=_int(tid),
                stream_id=_int(stream),
                workgroup=(int(wx), int(wy), int(wz)) if None not in (wx, wy, wz) else None,
                grid_work_items=(int(gx), int(gy), int(gz)) if None not in (gx, gy, gz) else None,
                lds_bytes=_int(lds),
                scratch_bytes=_int(scratch),
                vgpr=_int(vgpr),
                accum_vgpr=_int(accum),
                sgpr=_int(sgpr),
            )
        )
    return out


def holds_kernel(path: str | Path, fragment: str) -> bool:
    """Whether any dispatch in the database runs a kernel whose name contains ``fragment`` (False for a file that
    cannot be read)."""
    try:
        return any(fragment in d.name for d in read_kernel_dispatches(path))
    except ValueError:
        return False
