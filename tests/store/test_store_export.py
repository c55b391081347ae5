"""`python -m orchestrator export` round-trips: its rows are the store's measurements, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import create_engine, text

from orchestrator.__main__ import main as orchestrator_main
from orchestrator.interchange.importer import import_results
from orchestrator.store import session

REPO = Path(__file__).resolve().parents[2]
# Real H200 results (one kernels file, one e2e file); the same data location as tests/dashboard uses.
from tests.dashboard.conftest import h200_files  # noqa: E402


def _fill(url: str) -> None:
    files = h200_files()
    kernels = next(f for f in files if "e2e" not in f.name)
    e2e = next(f for f in files if "e2e" in f.name)
    for f in (kernels, e2e):
        assert import_results([str(f)], url, Console(file=io.StringIO())) == 0
    session.dispose_engines()


def _store_rows(url: str, where: str = "", params: dict | None = None) -> list[tuple]:
    engine = create_engine(url)
    with engine.connect() as c:
        rows = c.execute(
            text(
                'SELECT j.key, m.attempt, m.impl, m.metric, m.value, m.unit, r."commit", a.run_id, j.kind, '
                "j.shape_key, "
                "j.dtype, d.gpu_type FROM measurements m JOIN job_attempts a ON a.job_id = m.job_id AND a.attempt = "
                "m.attempt JOIN jobs j ON j.id = m.job_id JOIN runs r ON r.id = a.run_id LEFT JOIN devices d ON "
                f"d.hardware_key = a.hardware_key {where}"
            ),
            params or {},
        ).all()
    engine.dispose()
    return sorted(
        (k, int(at), i, me, v, u, cm, int(r), kd, s, dt_, g) for k, at, i, me, v, u, cm, r, kd, s, dt_, g in rows
    )


def _exported(rows: list[dict]) -> list[tuple]:
    def num(x):
        return None if x in (None, "") else float(x)

    return sorted(
        (
            r["job_key"],
            int(r["attempt"]),
            r["impl"],
            r["metric"],
            num(r["value"]),
            r["unit"] or "",
            r["commit"],
            int(r["run_id"]),
            r["kind"],
            r["shape"],
            r["dtype"],
            r["gpu_type"] or None,
        )
        for r in rows
    )


def _run(args: list[str], capsys) -> int:
    return orchestrator_main(["export", *args])


@pytest.mark.slow
def test_export_round_trips_every_format(store_url, tmp_path, capsys):
    _fill(store_url)
    expected = _store_rows(store_url)
    assert len(expected) > 300
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"all.{fmt}"
        assert _run(["--url", store_url, "--format", fmt, "--out", str(out)], capsys) == 0
        if fmt == "csv":
            rows = list(csv.DictReader(out.open()))
        elif fmt == "jsonl":
            rows = [json.loads(line) for line in out.open()]
        else:
            import pyarrow.parquet as pq

            rows = pq.read_table(out).to_pylist()
            assert all(isinstance(r["measured_at"], dt.datetime) for r in rows)
        got = _exported(rows)
        if fmt == "csv":  # CSV has no NULL: an empty unit reads back as ""
            expected_fmt = [tuple("" if (i == 5 and x is None) else x for i, x in enumerate(e)) for e in expected]
        else:
            expected_fmt = expected
        assert got == expected_fmt, fmt


@pytest.mark.slow
def test_export_filters_by_run_and_date(store_url, tmp_path, capsys):
    _fill(store_url)
    out = tmp_path / "run2.jsonl"
    assert _run(["--url", store_url, "--format", "jsonl", "--run", "2", "--out", str(out)], capsys) == 0
    rows = [json.loads(line) for line in out.open()]
    assert rows and {r["run_id"] for r in rows} == {2}
    assert _exported(rows) == _store_rows(store_url, "WHERE a.run_id = 2")
    times = sorted(
        dt.datetime.fromisoformat(r["measured_at"])
        for r in (json.loads(line) for line in (tmp_path / "run2.jsonl").open())
    )
    cut = times[len(times) // 2]
    out = tmp_path / "since.jsonl"
    assert _run(["--url", store_url, "--format", "jsonl", "--since", cut.isoformat(), "--out", str(out)], capsys) == 0
    since = [json.loads(line) for line in out.open()]
    assert since and all(dt.datetime.fromisoformat(r["measured_at"]) >= cut for r in since)
    assert len(since) < len(_store_rows(store_url))


def test_export_refuses_bad_input_in_one_line(store_url, capsys):
    assert _run(["--url", store_url, "--since", "yesterday"], capsys) == 2
    assert _run(["--url", store_url, "--run", "999"], capsys) == 2
    assert _run(["--url", store_url, "--format", "parquet"], capsys) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err)
    assert "--since" in err[0] and "--run 999" in err[1] and "--out" in err[2]


# `python -m orchestrator export` whose rows stop coming after the third (it sleeps there): a signal then finds it
# mid-file, as it would find a long export of a big store.
STALLED_EXPORT = """
import sys, time
from orchestrator.store.query import result_queries
real = result_queries.iter_measurements
def stalled(*args, **kwargs):
    for i, row in enumerate(real(*args, **kwargs)):
        yield row
        if i == 2:
            print("READY", file=sys.stderr, flush=True)
            time.sleep(300)
result_queries.iter_measurements = stalled
from orchestrator.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGKILL"])
@pytest.mark.parametrize("before", [None, "what was here before\n"])
def test_an_interrupted_export_leaves_the_path_as_it_was(store_url, tmp_path, sig, before):
    import signal
    import subprocess
    import sys

    from tests.store import results_files as rf

    rc, out, err = rf.run_import(str(rf.write(tmp_path / "r.jsonl", rf.lines("d" * 40))), "--url", store_url)
    assert rc == 0, out + err
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "all.jsonl"
    if before is not None:
        target.write_text(before)
    args = ["export", "--format", "jsonl", "--url", store_url, "--out", str(target)]
    # SIGINT as a terminal's Ctrl-C delivers it: a test run started as a background job of a script inherits SIGINT
    # ignored (and a Python started so never raises KeyboardInterrupt), so the export starts with the default
    proc = subprocess.Popen(
        [sys.executable, "-c", STALLED_EXPORT, *args, *(["--force"] if before else [])],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stderr.readline().strip() == "READY"
        proc.send_signal(getattr(signal, sig))
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert proc.returncode == {"SIGTERM": 143, "SIGINT": 130, "SIGKILL": -9}[sig], err
    assert "Traceback" not in err
    if before is None:
        assert not target.exists()
    else:
        assert target.read_text() == before
    left = sorted(p.name for p in folder.iterdir() if p != target)
    if sig == "SIGKILL":  # nothing can clean up after kill -9: only the hidden partial file stays
        assert left == [f".all.jsonl.partial-{proc.pid}"]
    else:
        assert left == []


def test_export_never_replaces_a_file_unasked(store_url, tmp_path, capsys):
    from tests.store import results_files as rf

    rc, out, err = rf.run_import(str(rf.write(tmp_path / "r.jsonl", rf.lines("d" * 40))), "--url", store_url)
    assert rc == 0, out + err
    capsys.readouterr()
    for fmt in ("csv", "jsonl", "parquet", "liger"):
        target = tmp_path / f"kept.{fmt}"
        target.write_text("mine\n")
        assert _run(["--url", store_url, "--format", fmt, "--out", str(target)], capsys) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "exists" in err and "--force" in err, err
        assert target.read_text() == "mine\n"
        assert _run(["--url", store_url, "--format", fmt, "--out", str(target), "--force"], capsys) == 0
        assert target.read_bytes() != b"mine\n" and target.stat().st_size > 0
        assert f"to {target}" in capsys.readouterr().err
    folder = tmp_path / "tb"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    assert _run(["--url", store_url, "--format", "tritonbench", "--out", str(folder)], capsys) == 2
    assert "--force" in capsys.readouterr().err and (folder / "notes.txt").read_text() == "mine\n"
    assert _run(["--url", store_url, "--format", "tritonbench", "--out", str(folder), "--force"], capsys) == 0
    assert (folder / "tritonbench.json").exists() and not (folder / "notes.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert _run(["--url", store_url, "--out", str(tmp_path / "no" / "such" / "x.csv")], capsys) == 2
    assert "does not exist" in capsys.readouterr().err
