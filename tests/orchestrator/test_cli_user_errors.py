"""Every user error at the command line is one line on stderr and exit code 2, never a traceback.

Each case runs the real CLI (`python -m orchestrator ...`, `python -m workers run ...`) in a subprocess against a
real SQLite file or the real PostgreSQL server; none of them starts Ray.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import uuid

import pytest
from sqlalchemy import create_engine, text

from tests.support.devices import CPU_ONLY_ENV

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PG_BASE_URL = os.environ.get("KERNELFLEET_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
SMALL = ["sweep.kernels=[rmsnorm]", "sweep.shapes=[[1,8,64]]", "sweep.dtypes=[fp32]", "sweep.kinds=[correctness]"]


def run(module: str, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, **env},
    )


def one_line_error(p: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, no traceback, exactly one line on stderr, holding every needle."""
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    d = tmp_path_factory.mktemp("plan")
    path = d / "plan.jsonl"
    p = run("orchestrator", "+sweep=smoke", "dry_run=true", f"plan_out={path}", *SMALL)
    assert p.returncode == 0, p.stderr
    return path


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'kf.db'}"
    assert run("orchestrator", "db", "upgrade", "--url", url).returncode == 0
    return url


@pytest.mark.parametrize("cmd", [["db", "upgrade"], ["db", "current"], ["report"], ["runs"]])
def test_a_store_path_that_is_a_directory_or_a_text_file(tmp_path, cmd):
    folder = tmp_path / "folder.db"
    folder.mkdir()
    text_file = tmp_path / "notes.db"
    text_file.write_text("these are not the tables you are looking for\n" * 20)
    one_line_error(run("orchestrator", *cmd, "--url", f"sqlite:///{folder}"), "store", "directory")
    one_line_error(run("orchestrator", *cmd, "--url", f"sqlite:///{text_file}"), "store", "SQLite")


@contextlib.contextmanager
def read_only(path):
    """The file cannot be written, even by root (chattr +i; chmod alone for other users)."""
    if os.geteuid() != 0:
        os.chmod(path, 0o444)
        yield
        os.chmod(path, 0o644)
        return
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_store_is_named_for_an_import(tmp_path, plan):
    results = tmp_path / "r.jsonl"
    w = run("workers", "run", str(plan), "--out", str(results))
    assert w.returncode == 0, w.stderr
    db = tmp_path / "kf.db"
    assert run("orchestrator", "db", "upgrade", "--url", str(db)).returncode == 0
    with read_only(db):
        one_line_error(run("orchestrator", "import", str(results), "--url", str(db)), "read-only")
        p = run("orchestrator", "+sweep=smoke", f"store.url={db}", *SMALL)
        one_line_error(p, "read-only", str(db))
        assert "fleet:" not in p.stdout  # refused before Ray started


def test_an_unknown_run_id(empty_store):
    one_line_error(run("orchestrator", "regressions", "999", "--url", empty_store), "no run 999", "runs")
    one_line_error(run("orchestrator", "regressions", "--baseline", "998", "--url", empty_store), "baseline")
    one_line_error(run("orchestrator", "regressions", "997", "--baseline", "998", "--url", empty_store), "no run 99")
    one_line_error(run("orchestrator", "report", "999", "--url", empty_store), "no run 999")


def test_a_truncated_gz(tmp_path, plan, empty_store):
    data = gzip.compress(plan.read_bytes())
    cut = tmp_path / "plan.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    one_line_error(run("workers", "run", str(cut), "--out", str(tmp_path / "r.jsonl")), str(cut), "truncated")
    one_line_error(run("orchestrator", "import", str(cut), "--url", empty_store), "truncated")


def test_malformed_plan_lines(tmp_path, plan):
    lines = plan.read_text().splitlines()
    for field, value, needle in (
        ("timeout_s", "abc", "params.timeout_s: 'abc'"),
        ("rounds", 0.5, "params.rounds"),
        ("rep_ms", -1, "params.rep_ms"),
    ):
        spec = json.loads(lines[1])
        spec["params"][field] = value
        bad = tmp_path / f"bad-{field}.jsonl"
        bad.write_text("\n".join([lines[0], json.dumps(spec), *lines[2:]]) + "\n")
        one_line_error(run("workers", "run", str(bad), "--out", str(tmp_path / f"r-{field}.jsonl")), f"{bad}:2", needle)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text(lines[0] + "\n[1, 2]\n")
    one_line_error(run("workers", "run", str(garbage), "--out", str(tmp_path / "r-g.jsonl")), f"{garbage}:2")


def test_workers_run_never_overwrites_its_out_and_names_a_missing_folder(tmp_path, plan):
    out = tmp_path / "results.jsonl"
    out.write_text("precious\n")
    one_line_error(run("workers", "run", str(plan), "--out", str(out)), "exists", "--resume")
    assert out.read_text() == "precious\n"
    one_line_error(run("workers", "run", str(plan), "--out", str(tmp_path / "nope" / "r.jsonl")), "does not exist")


def test_a_plan_written_to_a_missing_folder(tmp_path):
    one_line_error(
        run("orchestrator", "+sweep=smoke", "dry_run=true", f"plan_out={tmp_path / 'no' / 'p.jsonl'}"),
        "plan_out=",
        "does not exist",
    )


@pytest.mark.parametrize(
    "override, needle",
    [
        ("sweep.timeout_s=inf", "sweep.timeout_s: must be a finite number > 0, got inf"),
        ("sweep.rep_ms=nan", "sweep.rep_ms"),
        ("sweep.kinds=[]", "sweep.kinds: empty"),
        ("sweep.shapes=[[4096,65536,1048576]]", "more than any GPU holds"),
    ],
)
def test_values_that_cannot_run_are_refused_before_anything_runs(tmp_path, override, needle):
    db = tmp_path / "kf.db"
    line = one_line_error(run("orchestrator", "+sweep=smoke", f"store.url={db}", override), needle)
    assert line.startswith("config error:")
    assert not db.exists()  # refused before the store was opened


@pytest.mark.parametrize(
    "url, needle",
    [
        ("postgresql+asyncpg://kf:Sekrit@127.0.0.1:5432/kf", "is an asyncio driver"),
        ("postgresql+pg8000://kf:Sekrit@127.0.0.1:5432/kf", "the driver of 'postgresql+pg8000' is not installed"),
        ("sqlite+pysqlcipher:///{tmp}/kf.db", "the driver of 'sqlite+pysqlcipher' is not installed"),
        ("postgresql+nosuchdriver://kf:Sekrit@127.0.0.1:5432/kf", "SQLAlchemy has no driver"),
    ],
)
def test_a_store_url_whose_driver_cannot_run_is_one_line_for_every_command(tmp_path, url, needle):
    url = url.format(tmp=tmp_path)
    for args in (
        ["orchestrator", "runs", "--url", url],
        ["orchestrator", "db", "upgrade", "--url", url],
        ["orchestrator", "export", "--url", url],
        ["orchestrator", "+sweep=smoke", f"store.url={url}", *SMALL],
        ["dashboard", "build", "--out", str(tmp_path / "site"), "--db", url],
    ):
        line = one_line_error(run(*args), needle)
        assert "Sekrit" not in line
    assert list(tmp_path.iterdir()) == []


def test_a_cluster_address_without_a_port_is_one_line(tmp_path):
    db = tmp_path / "kf.db"
    for env in ({}, {"RAY_ADDRESS": "notahost"}):
        args = [] if env else ["cluster.address=notahost"]
        p = run("orchestrator", "+sweep=smoke", f"store.url={db}", *SMALL, *args, **env)
        line = one_line_error(p, "cluster.address=notahost: expected HOST:PORT")
        assert line.startswith("config error:")


def test_a_store_url_with_query_works_as_an_override_and_other_values_show_the_quoting(tmp_path):
    url = "postgresql+psycopg://u@h:5432/db?options=-csearch_path%3Dmine&connect_timeout=3"
    p = run("orchestrator", "+sweep=smoke", f"store.url={url}", "--cfg", "job")
    assert p.returncode == 0, p.stderr
    assert f"url: {url}" in p.stdout
    one_line_error(
        run("orchestrator", "+sweep=smoke", "plan_out=a=b.jsonl"), "plan_out=a=b.jsonl", "'plan_out=\"a=b.jsonl\"'"
    )


def test_store_postgres_creates_its_database_or_prints_createdb():
    admin = create_engine(PG_BASE_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any failure to reach the test server
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail(f"PostgreSQL unreachable under CI: {exc}")
        pytest.skip(f"PostgreSQL unreachable: {exc}")
    name, role = f"kf_new_{uuid.uuid4().hex[:10]}", f"kf_nocreate_{uuid.uuid4().hex[:10]}"
    base = PG_BASE_URL.rsplit("/", 1)[0]
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE ROLE {role} LOGIN NOCREATEDB"))
        p = run("orchestrator", "db", "upgrade", "--url", f"{base}/{name}")
        assert p.returncode == 0, p.stdout + p.stderr
        assert "created the database" in p.stdout and "-> " in p.stdout
        denied_url = base.replace("postgres@", f"{role}@", 1) + f"/{name}_x"
        one_line_error(
            run("orchestrator", "db", "upgrade", "--url", denied_url),
            "cannot be created",
            f"createdb -h 127.0.0.1 -p 5432 -U {role} {name}_x",
        )
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f"DROP ROLE IF EXISTS {role}"))
        admin.dispose()


def test_a_gpu_sized_sweep_on_a_cpu_is_priced_and_refused_before_anything_is_scheduled(tmp_path):
    db = tmp_path / "kf.db"
    p = run("orchestrator", "+sweep=rmsnorm", f"store.url={db}", timeout=300, **CPU_ONLY_ENV)  # a CPU on any host
    line = one_line_error(p, "sweep rmsnorm is GPU-sized: estimated", "allow_cpu=true")
    assert line.startswith("config error:")
    assert "18 jobs to run" in p.stdout and "the largest rmsnorm 4x4096x3072 bf16" in p.stdout
    assert "an estimate" in p.stdout and "Triton calls in the interpreter" in p.stdout
    for way in ("+sweep=smoke", "target=h200", "dry_run=true plan_out=plan.jsonl", "python -m workers run"):
        assert way in p.stdout, p.stdout
    assert "fleet:" not in p.stdout  # Ray was not started
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from runs").fetchone()[0] == 0
    assert con.execute("select count(*) from jobs").fetchone()[0] == 0
