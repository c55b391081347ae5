"""rocprofv3's rocpd SQLite output (workers.device.parsers.rocpd) and the profile job's use of it.

No rocpd database written on AMD hardware was found in a public repository (rocprofiler-sdk's repository holds the
schema, not a sample database), so the databases here are built from the documented schema: rocprofiler-sdk's
``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql`` (schema version 3: data tables named with a per-session
``_<uuid>`` suffix; ``rocpd_kernel_dispatch`` rows pointing at ``rocpd_timestamp`` rows through ``start_id`` and
``end_id``, at ``rocpd_info_kernel_symbol`` through ``kernel_id`` and at ``rocpd_track`` through ``track_id``),
``rocpd_views.sql`` (a view without the suffix over each table) and ``data_views.sql`` (the ``kernels`` view:
``name`` = the symbol's ``display_name``, ``start``/``end`` from the timestamps, ``grid_x`` = the dispatch's
``grid_size_x`` in work-items), as "Using rocpd output format" in ROCm's rocprofiler-sdk documentation describes.
Only the columns the parser reads are created.  The dispatches are those of the documentation's sdk 1.0 kernel trace
(tests/fixtures/tool-output/rocprofv3_sdk1.0.0_docs_kernel_trace.csv), so the database and the CSV must give the same
records.
"""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pytest

from workers.device.parsers import rocpd, rocprofv3
from workers.jobs import profile, profile_target

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool-output"
TRACE_CSV = (FIXTURES / "rocprofv3_sdk1.0.0_docs_kernel_trace.csv").read_text()
UUID = "_0000ddb5_8903_7903_b269_cd8d3745bb8a"
GUID = "0000ddb5-8903-7903-b269-cd8d3745bb8a"

TABLES = {
    "rocpd_string": "id INTEGER PRIMARY KEY, guid TEXT, string TEXT",
    "rocpd_info_agent": "id INTEGER PRIMARY KEY, guid TEXT, type TEXT, absolute_index INTEGER",
    "rocpd_info_kernel_symbol": "id INTEGER PRIMARY KEY, guid TEXT, kernel_name TEXT, display_name TEXT, "
    "arch_vgpr_count INTEGER, accum_vgpr_count INTEGER, sgpr_count INTEGER",
    "rocpd_track": "id INTEGER PRIMARY KEY, guid TEXT, tid INTEGER, agent_id INTEGER, queue_id INTEGER, "
    "stream_id INTEGER",
    "rocpd_timestamp": "id INTEGER PRIMARY KEY, guid TEXT, value BIGINT, phase INTEGER, track_id INTEGER",
    "rocpd_event": "id INTEGER PRIMARY KEY, guid TEXT, correlation_id INTEGER",
    "rocpd_kernel_dispatch": "id INTEGER PRIMARY KEY, guid TEXT, track_id INTEGER, kernel_id INTEGER, "
    "dispatch_id INTEGER, start_id INTEGER, end_id INTEGER, private_segment_size INTEGER, group_segment_size INTEGER, "
    "workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER, grid_size_x INTEGER, "
    "grid_size_y INTEGER, grid_size_z INTEGER, region_name_id INTEGER, event_id INTEGER",
}

KERNELS_VIEW = """
CREATE VIEW kernels AS SELECT K.id, K.guid, T.tid, S.display_name AS name, A.absolute_index AS agent_absolute_index,
  T.queue_id, T.stream_id, K.kernel_id, K.dispatch_id, DS.value AS start, DE.value AS "end",
  (DE.value - DS.value) AS duration, K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
  K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
  K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size, S.arch_vgpr_count, S.accum_vgpr_count,
  S.sgpr_count, E.correlation_id
FROM rocpd_kernel_dispatch K
  JOIN rocpd_track T ON T.id = K.track_id AND T.guid = K.guid
  JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
  JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
  JOIN rocpd_info_agent A ON A.id = T.agent_id AND A.guid = T.guid
  JOIN rocpd_timestamp DS ON DS.id = K.start_id AND DS.guid = K.guid
  JOIN rocpd_timestamp DE ON DE.id = K.end_id AND DE.guid = K.guid
"""


def build_db(path: Path, trace_csv: str, kernels_view: bool = True) -> Path:
    """A rocpd database holding the dispatches of a rocprofv3 kernel trace CSV (sdk 1.0 layout)."""
    con = sqlite3.connect(path)
    for name, cols in TABLES.items():
        con.execute(f'CREATE TABLE "{name}{UUID}" ({cols})')
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM "{name}{UUID}"')
    if kernels_view:
        con.execute(KERNELS_VIEW)
    rows = list(csv.DictReader(io.StringIO(trace_csv)))
    agents, symbols, tracks = {}, {}, {}
    for i, r in enumerate(rows):
        agent = int(r["Agent_Id"].split()[-1])
        if agent not in agents:
            agents[agent] = len(agents) + 1
            con.execute(
                f'INSERT INTO "rocpd_info_agent{UUID}" VALUES (?, ?, ?, ?)', (agents[agent], GUID, "GPU", agent)
            )
        kid = int(r["Kernel_Id"])
        if kid not in symbols:
            symbols[kid] = True
            con.execute(
                f'INSERT INTO "rocpd_info_kernel_symbol{UUID}" VALUES (?, ?, ?, ?, ?, ?, ?)',
                (kid, GUID, "_Z" + r["Kernel_Name"], r["Kernel_Name"], r["VGPR_Count"], r["Accum_VGPR_Count"],
                 r["SGPR_Count"]),
            )  # fmt: skip
        track_key = (agents[agent], r["Queue_Id"], r["Stream_Id"], r["Thread_Id"])
        if track_key not in tracks:
            tracks[track_key] = len(tracks) + 1
            con.execute(
                f'INSERT INTO "rocpd_track{UUID}" VALUES (?, ?, ?, ?, ?, ?)',
                (tracks[track_key], GUID, r["Thread_Id"], agents[agent], r["Queue_Id"], r["Stream_Id"]),
            )
        start_id, end_id = 2 * i + 1, 2 * i + 2
        con.execute(f'INSERT INTO "rocpd_timestamp{UUID}" VALUES (?, ?, ?, 1, ?)', (start_id, GUID,
                    int(r["Start_Timestamp"]), tracks[track_key]))  # fmt: skip
        con.execute(f'INSERT INTO "rocpd_timestamp{UUID}" VALUES (?, ?, ?, 2, ?)', (end_id, GUID,
                    int(r["End_Timestamp"]), tracks[track_key]))  # fmt: skip
        con.execute(f'INSERT INTO "rocpd_event{UUID}" VALUES (?, ?, ?)', (i + 1, GUID, r["Correlation_Id"]))
        con.execute(
            f'INSERT INTO "rocpd_kernel_dispatch{UUID}" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)',
            (i + 1, GUID, tracks[track_key], kid, r["Dispatch_Id"], start_id, end_id, r["Scratch_Size"],
             r["LDS_Block_Size"], r["Workgroup_Size_X"], r["Workgroup_Size_Y"], r["Workgroup_Size_Z"],
             r["Grid_Size_X"], r["Grid_Size_Y"], r["Grid_Size_Z"], i + 1),
        )  # fmt: skip
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("kernels_view", [True, False], ids=["kernels view", "base views"])
def test_the_database_gives_the_csv_traces_dispatches(tmp_path, kernels_view):
    db = build_db(tmp_path / "1234_results.db", TRACE_CSV, kernels_view)
    assert rocpd.read_kernel_dispatches(db) == sorted(
        rocprofv3.parse_kernel_trace(TRACE_CSV), key=lambda d: (d.start_ns, d.end_ns)
    )
    assert len(rocpd.read_kernel_dispatches(db)) == 9


def test_not_a_rocpd_database(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(ValueError, match="not an SQLite database"):
        rocpd.read_kernel_dispatches(junk)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ValueError, match="not a rocpd database"):
        rocpd.read_kernel_dispatches(other)
    assert not rocpd.holds_kernel(junk, "x")


def _fenced(trace_csv: str, fence_rows: set[int]) -> str:
    """The trace with the dispatches of the given data rows made the profile target's fence kernel (its own name and
    kernel id)."""
    rows = list(csv.reader(io.StringIO(trace_csv)))
    name, kid = rows[0].index("Kernel_Name"), rows[0].index("Kernel_Id")
    for i in fence_rows:
        rows[i][name] = profile_target.FENCE_KERNEL + "_0d1d"
        rows[i][kid] = 99
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_NONNUMERIC).writerows(rows)
    return out.getvalue()


def test_the_profile_job_reads_the_fenced_database(tmp_path):
    """A rocprofv3 output directory holding two databases (a compile worker's and the target's): the job picks the
    one with the fence kernels and times the dispatches between them, keeping the database as an artifact."""
    out = tmp_path / "out" / "host"
    out.mkdir(parents=True)
    build_db(out / "111_results.db", TRACE_CSV)
    target = build_db(out / "222_results.db", _fenced(TRACE_CSV, {1, 9}))
    found = profile.find_rocpd_database(tmp_path / "out", profile_target.FENCE_KERNEL)
    assert found == target
    manifest = {"iters": 7, "warmup": 1, "fence": profile_target.FENCE_KERNEL}
    prof = profile.summarize_rocprofv3("triton", None, None, manifest, rocpd.read_kernel_dispatches(found),
                                       found.read_bytes())  # fmt: skip
    assert prof.source == "rocprofv3 rocpd database: dispatches between the fence kernels"
    assert prof.iters == 7 and 0 < prof.kernels_total < 7  # the window on the fences' agent, between them
    assert [a["kind"] for a in prof.artifacts] == ["rocprofv3_rocpd"]
    assert profile.artifact_bytes(prof.artifacts[0]) == target.read_bytes()
    csv_prof = profile.summarize_rocprofv3("triton", _fenced(TRACE_CSV, {1, 9}), None, manifest)
    assert (prof.rows, prof.kernel_ns_total, prof.kernels_total, prof.per_call_ns) == (
        csv_prof.rows,
        csv_prof.kernel_ns_total,
        csv_prof.kernels_total,
        csv_prof.per_call_ns,
    )
    assert profile.find_rocpd_database(tmp_path / "nothing", None) is None
