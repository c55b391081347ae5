"""`python -m orchestrator import`: all or nothing, and only what the store may hold (issue 21, points 1 and 2),
on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from orchestrator.store import session
from tests.store import results_files as rf

REPO = Path(__file__).resolve().parents[2]


def _broken(objs: list[dict], how: str) -> list[dict]:
    """The file with its second job's line made bad in one way."""
    objs = copy.deepcopy(objs)
    row = objs[2]
    if how == "status":
        row["result"]["status"] = "bogus"
    elif how == "string_number":
        row["result"]["measurements"][0]["value"] = "fast"
    elif how == "base64":
        row["result"]["details"]["artifacts"] = [{"kind": "trace", "name": "t.json", "data_b64": "not base64!"}]
    elif how == "nul":
        row["result"]["status"] = "error"
        row["result"]["error"] = "segfault\x00 in kernel"
    elif how == "key_in_no_plan":
        row["result"]["key"] = "0123456789abcdef0123"
    elif how == "missing_field":
        del row["result"]["status"]
    elif how == "tampered_spec":
        row["spec"]["params"]["rep_ms"] = 2000.0
    elif how == "shape_abc":
        row["spec"]["shape"] = "abc"
    elif how == "huge_int":
        row["result"]["device"]["memory_bytes"] = 10**30
    elif how == "started_at":
        row["result"]["started_at"] = 1e300
    else:
        raise AssertionError(how)
    return objs


BREAKS = (
    "status",
    "string_number",
    "base64",
    "nul",
    "key_in_no_plan",
    "missing_field",
    "tampered_spec",
    "shape_abc",
    "huge_int",
    "started_at",
)


@pytest.mark.parametrize("how", BREAKS)
def test_a_bad_line_changes_nothing_and_the_corrected_file_imports_completely(store_url, tmp_path, how):
    good = rf.lines("a" * 40)
    path = rf.write(tmp_path / "results.jsonl", _broken(good, how))
    before = rf.counts(store_url)
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 2, out + err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}:3: "), err
    assert rf.counts(store_url) == before, "a failed import must leave the store as it was"
    rf.write(path, good)  # the same file, corrected
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 0, out + err
    assert "imported 3 results of 3 jobs" in out and "imported before" not in out
    after = rf.counts(store_url)
    assert after["runs"] == before["runs"] + 1 and after["jobs"] == before["jobs"] + 3
    assert after["job_attempts"] == before["job_attempts"] + 3 and after["artifacts"] == before["artifacts"] + 1
    engine = session.create_engine_for(store_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT status FROM runs")).scalars().all() == ["complete"]
    engine.dispose()


def test_a_cut_off_last_line_is_reported_not_dropped(store_url, tmp_path):
    path = rf.write(tmp_path / "results.jsonl", rf.lines("b" * 40))
    data = path.read_bytes()
    path.write_bytes(data[:-40])  # the writer stopped in the middle of the last line
    before = rf.counts(store_url)
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 2 and f"{path}:4: the last line is cut off" in err, out + err
    assert rf.counts(store_url) == before


def test_results_the_store_holds_create_no_new_run(store_url, tmp_path):
    objs = rf.lines("c" * 40)
    first = rf.write(tmp_path / "first.jsonl", objs)
    assert rf.run_import(str(first), "--url", store_url)[0] == 0
    before = rf.counts(store_url)
    # the same results in another order: another file (another digest), nothing new in it
    again = rf.write(tmp_path / "again.jsonl", [objs[0]] + objs[:0:-1])
    rc, out, err = rf.run_import(str(again), "--url", store_url)
    assert rc == 0, out + err
    assert "nothing new; already in run 1" in out
    assert rf.counts(store_url) == before


def test_the_first_good_result_of_a_job_wins(store_url, tmp_path):
    """What the module doc says: lines in file order; a failed result before a good one is an earlier attempt, a
    result after a good one adds nothing."""
    ss = rf.specs("d" * 40, 2)
    a, b = ss
    rows = [
        (a, rf.result(a, status="error", error="boom")),
        (a, rf.result(a)),
        (b, rf.result(b)),
        (b, rf.result(b, status="crashed", error="later")),
    ]
    path = rf.write(tmp_path / "results.jsonl", rf.lines("d" * 40, 2, rows))
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 0, out + err
    engine = session.create_engine_for(store_url)
    with engine.connect() as conn:
        jobs = dict(conn.execute(text("SELECT key, status FROM jobs")).all())
        attempts = dict(
            conn.execute(
                text("SELECT j.key, count(*) FROM job_attempts a JOIN jobs j ON j.id = a.job_id GROUP BY j.key")
            ).all()
        )
    engine.dispose()
    assert jobs == {a.key: "ok", b.key: "ok"}
    assert attempts == {a.key: 2, b.key: 1}


def test_every_file_is_checked_before_anything_is_written(store_url, tmp_path):
    objs = rf.lines("e" * 40, 4)
    one = rf.write(tmp_path / "one.jsonl", objs[:3])
    bad = copy.deepcopy(objs[3])
    bad["result"]["status"] = "bogus"
    two = rf.write(tmp_path / "two.jsonl", [objs[0], bad, objs[4]])
    before = rf.counts(store_url)
    rc, out, err = rf.run_import(str(one), str(two), "--url", store_url)
    assert rc == 2 and f"{two}:2: result.status: 'bogus'" in err, out + err
    assert rf.counts(store_url) == before


def test_a_bad_file_exits_2_with_one_line_and_no_traceback(store_url, tmp_path):
    path = rf.write(tmp_path / "results.jsonl", _broken(rf.lines("f" * 40), "nul"))
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "import", str(path), "--url", store_url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert p.stderr.strip().count("\n") == 0 and "NUL byte" in p.stderr, p.stderr
