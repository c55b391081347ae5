"""The main job end to end: `python -m orchestrator +sweep=...` through a real local Ray into a real SQLite file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from orchestrator.store.query import case_queries, run_queries
from tests.support.devices import ON_GPU

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args, timeout=300, env=None):
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
    )


def workers_run(plan, out, *args, timeout=300):
    """`python -m workers run PLAN --out OUT [ARGS]` from the checkout."""
    return subprocess.run(
        [sys.executable, "-m", "workers", "run", str(plan), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def smoke_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("smoke") / "kf.db"
    p = cli("+sweep=smoke", f"store.url=sqlite:///{db}")
    return db, p


def test_smoke_sweep_runs_every_job_into_the_store(smoke_db):
    db, p = smoke_db
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "16 jobs, 0 done earlier, 16 to run" in out
    assert "run 1: complete" in out and str(db) in out
    runs = run_queries.list_runs(f"sqlite:///{db}")
    assert len(runs) == 1 and runs[0]["status"] == "complete" and runs[0]["sweep"] == "smoke"
    info = run_queries.run_info(f"sqlite:///{db}", runs[0]["id"])
    assert info["config"]["sweep"]["name"] == "smoke"
    assert len(info["commit"]) >= 7
    rows = run_queries.run_summary(f"sqlite:///{db}", runs[0]["id"])
    micro = [r for r in rows if r["kind"] == "micro"]
    assert len(micro) == 2 * 2 * 2 * 2  # kernels x shapes x dtypes x impls
    for r in micro:
        assert r["status"] == "ok" and r["correct"] is True
        assert r["median_us"] > 0 and r["gbs"] > 0 and r["hardware_key"].startswith("cpu/") != ON_GPU
        assert r["speedup_vs_eager"] == pytest.approx(
            next(x["median_us"] for x in micro if x["impl"] == "eager" and x["job_key"] == r["job_key"])
            / r["median_us"]
        )
    # every repeat is stored, not only the median
    con = sqlite3.connect(db)
    n = con.execute(
        "select count(*) from measurements where metric='time_us' and json_array_length(samples) >= 2"
    ).fetchone()[0]
    assert n == len(micro)
    # the summary table was printed
    assert "median µs" in out and "rmsnorm" in out and "adaln" in out
    # every correctness job checked the input cases (near_max: 16-bit only), and the summary says which
    cases = case_queries.case_results(f"sqlite:///{db}", runs[0]["id"])
    assert len(cases) == 2 * 2 * 2 and not any(r["failed"] for r in cases)
    for r in cases:
        assert r["cases"][0] == "random" and {"nan_inf", "strided_rows", "width_over_block"} <= set(r["cases"])
        assert ("near_max" in r["skipped"]) == (r["dtype"] == "fp32")
    assert "correctness input cases" in out and "width_under_block" in out
    # the fleet the sweep ran on is in the store (the dashboard's fleet page)
    (node,) = run_queries.nodes(f"sqlite:///{db}")
    assert node["resources"].get("CPU")
    assert not node["alive"]  # the embedded Ray instance ended with the sweep


def test_second_run_has_nothing_to_do(smoke_db):
    db, first = smoke_db
    assert first.returncode == 0
    p = cli("+sweep=smoke", f"store.url=sqlite:///{db}")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert (
        "all 16 jobs have good results in the store; newest run of this plan: 1; nothing to run, no run recorded" in out
    )
    assert "Started a local Ray" not in out  # nothing to run: Ray is not even started
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from runs").fetchone()[0] == 1  # a rerun that runs nothing records no run
    assert con.execute("select count(*) from jobs").fetchone()[0] == 16
    assert con.execute("select count(*) from job_attempts").fetchone()[0] == 16


def test_rerun_true_runs_again_and_keeps_history(smoke_db, tmp_path):
    first_db, first = smoke_db
    assert first.returncode == 0
    db = tmp_path / "kf.db"
    shutil.copyfile(first_db, db)  # the smoke sweep's store: one of its 16 jobs is run again
    args = [
        "+sweep=smoke",
        f"store.url=sqlite:///{db}",
        "sweep.kernels=[rmsnorm]",
        "sweep.shapes=[[1,16,256]]",
        "sweep.dtypes=[fp32]",
        "sweep.kinds=[correctness]",
    ]
    p = cli(*args, "rerun=true")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 jobs, 0 done earlier, 1 to run" in p.stdout
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from jobs").fetchone()[0] == 16
    assert con.execute("select count(*) from job_attempts").fetchone()[0] == 17
    (rerun,) = con.execute("select job_id from job_attempts group by job_id having count(*) = 2").fetchall()
    assert con.execute("select count(*) from runs").fetchone()[0] == 2  # the rerun is a run of its own
    assert con.execute("select kind, kernel from jobs where id = ?", rerun).fetchone() == ("correctness", "rmsnorm")


@pytest.mark.slow
def test_crashing_and_hanging_jobs_do_not_stop_the_sweep(tmp_path):
    db = tmp_path / "kf.db"
    p = cli(
        "+sweep=smoke",
        f"store.url=sqlite:///{db}",
        "sweep.kinds=[correctness]",
        "sweep.timeout_s=5",
        "sweep.shapes=null",
        "sweep.impls=null",
        "sweep.dtypes=null",
        "~kernels.adaln",
        "kernels.rmsnorm.shapes=[[1,8,64]]",
        "kernels.rmsnorm.dtypes=[fp32]",
        "kernels.rmsnorm.impls=[triton,eager]",
        "+kernel@kernels.segv=rmsnorm",
        "kernels.segv.name=fault_segv",
        "kernels.segv.shapes=[[16]]",
        "kernels.segv.dtypes=[fp32]",
        "kernels.segv.impls=[boom]",
        "+kernel@kernels.hang=rmsnorm",
        "kernels.hang.name=fault_hang",
        "kernels.hang.shapes=[[16]]",
        "kernels.hang.dtypes=[fp32]",
        "kernels.hang.impls=[boom]",
        "+kernel@kernels.noop=rmsnorm",
        "kernels.noop.name=noop",
        "kernels.noop.shapes=[[16]]",
        "kernels.noop.dtypes=[fp32]",
        "kernels.noop.impls=[boom,eager]",
        timeout=300,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 1, out  # some job failed
    con = sqlite3.connect(db)
    statuses = dict(con.execute("select kernel, status from jobs").fetchall())
    assert statuses == {"rmsnorm": "ok", "fault_segv": "crashed", "fault_hang": "timed_out", "noop": "ok"}, out
    err = dict(con.execute("select kernel, error from jobs").fetchall())
    assert "SIGSEGV" in err["fault_segv"] and "timed out after 5 s" in err["fault_hang"]
    run_status = con.execute("select status from runs").fetchone()[0]
    assert run_status == "failed"
    assert "crashed" in out and "timed_out" in out


@pytest.mark.slow
def test_ctrl_c_marks_the_run_interrupted_and_a_rerun_completes_it(tmp_path):
    db = tmp_path / "kf.db"
    # two jobs per task (one sandbox start for two jobs; an interrupt can fall between them), a short timing budget
    # and one kernel: 8 jobs (test_sweep_signals interrupts one job per task with SIGTERM)
    args = [
        "+sweep=smoke",
        f"store.url=sqlite:///{db}",
        "sweep.batch_size=2",
        "sweep.rep_ms=5",
        "sweep.kernels=[rmsnorm]",
    ]
    # SIGINT's default action in the sweep even where pytest runs as a background job (which ignores SIGINT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 180
    done = 0
    while time.monotonic() < deadline:
        time.sleep(1.0)
        if db.exists():
            try:
                done = sqlite3.connect(db).execute("select count(*) from jobs where status='ok'").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
            if done >= 3:
                break
    assert done >= 3, "the sweep never got going"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    con = sqlite3.connect(db)
    assert con.execute("select status from runs").fetchall() == [("interrupted",)]
    finished = con.execute("select count(*) from jobs where status='ok'").fetchone()[0]
    assert 3 <= finished < 8, out

    p = cli(*args)
    out2 = p.stdout + p.stderr
    assert p.returncode == 0, out2
    assert "resuming interrupted run 1" in out2
    assert f"8 jobs, {finished} done earlier, {8 - finished} to run" in out2
    con = sqlite3.connect(db)
    assert con.execute("select id, status from runs").fetchall() == [(1, "complete")]
    assert con.execute("select count(*) from jobs").fetchone()[0] == 8
    assert con.execute("select count(*) from job_attempts").fetchone()[0] == 8
    assert con.execute("select count(*) from run_jobs").fetchone()[0] == 8
    dup = con.execute(
        "select count(*) from (select job_id, attempt, impl, metric, count(*) c from measurements "
        "group by 1,2,3,4 having c > 1)"
    ).fetchone()[0]
    assert dup == 0


@pytest.mark.slow
def test_dry_run_then_workers_run_then_import(tmp_path):
    db = tmp_path / "kf.db"
    plan = tmp_path / "plan.jsonl"
    results = tmp_path / "results.jsonl"
    p = cli(
        "+sweep=smoke",
        f"store.url=sqlite:///{db}",
        "dry_run=true",
        f"plan_out={plan}",
        "sweep.kernels=[rmsnorm]",
        "sweep.shapes=[[1,8,64]]",
        "sweep.dtypes=[bf16]",
    )
    assert p.returncode == 0, p.stderr
    assert "planned 2 jobs, nothing scheduled" in p.stdout
    assert not db.exists()  # planning writes nothing to the store
    lines = plan.read_text().splitlines()
    assert len(lines) == 3 and '"kernelfleet": "plan"' in lines[0]

    w = workers_run(plan, results)
    assert w.returncode == 0, w.stdout + w.stderr
    assert len(results.read_text().splitlines()) == 3

    i1 = cli("import", str(results), "--url", f"sqlite:///{db}")
    assert i1.returncode == 0, i1.stdout + i1.stderr
    assert "imported 2 results of 2 jobs" in i1.stdout
    i2 = cli("import", str(results), "--url", f"sqlite:///{db}")
    assert i2.returncode == 0 and "nothing added" in i2.stdout
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from runs").fetchone()[0] == 1
    assert con.execute("select count(*) from job_attempts").fetchone()[0] == 2
    # the same sweep run through Ray afterwards finds the imported jobs done
    p = cli(
        "+sweep=smoke",
        f"store.url=sqlite:///{db}",
        "sweep.kernels=[rmsnorm]",
        "sweep.shapes=[[1,8,64]]",
        "sweep.dtypes=[bf16]",
    )
    assert p.returncode == 0 and "all 2 jobs have good results in the store" in p.stdout, p.stdout + p.stderr
    assert con.execute("select count(*) from runs").fetchone()[0] == 1  # and it records no empty run


@pytest.mark.slow
def test_shards_of_one_plan_import_as_one_run(tmp_path):
    db = tmp_path / "kf.db"
    plan = tmp_path / "plan.jsonl"
    p = cli(
        "+sweep=smoke",
        "dry_run=true",
        f"plan_out={plan}",
        "sweep.kernels=[rmsnorm]",
        "sweep.shapes=[[1,8,64],[2,4,32]]",
        "sweep.dtypes=[bf16]",
    )
    assert p.returncode == 0 and "planned 4 jobs" in p.stdout, p.stdout + p.stderr
    shards = []
    for i in (1, 2):
        out = tmp_path / f"results-{i}.jsonl"
        w = workers_run(plan, out, "--shard", f"{i}/2")
        assert w.returncode == 0, w.stdout + w.stderr
        shards.append(str(out))
    url = f"sqlite:///{db}"
    i1 = cli("import", *shards, "--url", url)
    assert i1.returncode == 0, i1.stdout + i1.stderr
    assert "imported 4 results of 4 jobs" in i1.stdout
    assert "nothing added" in cli("import", *shards, "--url", url).stdout  # the same pair again
    # kept gzipped (as in results/), the same results are recognised as imported already
    gz = []
    for path in shards:
        gz.append(path + ".gz")
        with open(path, "rb") as src, gzip.open(gz[-1], "wb") as dst:
            dst.write(src.read())
    again = cli("import", *gz, "--url", url)
    assert again.returncode == 0 and "nothing added" in again.stdout, again.stdout + again.stderr
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from runs").fetchone()[0] == 1
    assert con.execute("select count(*) from run_jobs").fetchone()[0] == 4

    # a results file of another plan is refused, nothing stored
    other_plan = tmp_path / "other.jsonl"
    assert (
        cli(
            "+sweep=smoke",
            "dry_run=true",
            f"plan_out={other_plan}",
            "sweep.kernels=[rmsnorm]",
            "sweep.shapes=[[1,8,128]]",
            "sweep.dtypes=[bf16]",
        ).returncode
        == 0
    )
    other = tmp_path / "other-results.jsonl"
    assert workers_run(other_plan, other).returncode == 0
    bad = cli("import", shards[0], str(other), "--url", url)
    assert bad.returncode == 2 and "is from another plan" in bad.stdout + bad.stderr
    assert con.execute("select count(*) from runs").fetchone()[0] == 1


def test_report_shows_a_run_again_and_writes_markdown(smoke_db, tmp_path):
    db, first = smoke_db
    assert first.returncode == 0
    md = tmp_path / "run.md"
    p = cli("report", "--url", f"sqlite:///{db}", "--markdown", str(md))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "median µs" in p.stdout and "rmsnorm" in p.stdout
    text = md.read_text()
    assert text.startswith("# Run ") and "**Commit:**" in text and "| rmsnorm |" in text
    assert "| kernel µs |" in text and "| % ceiling (kernel) |" in text  # no GPU here: the cells stay empty
    missing = cli("report", "99", "--url", f"sqlite:///{db}")
    assert missing.returncode == 2 and "no run 99" in missing.stderr


def test_workers_run_shards_split_a_plan(tmp_path):
    plan = tmp_path / "plan.jsonl"
    p = cli(
        "+sweep=smoke",
        "dry_run=true",
        f"plan_out={plan}",
        "sweep.kinds=[correctness]",
        "sweep.kernels=[rmsnorm]",
        "sweep.dtypes=[fp32]",
        "sweep.shapes=[[1,4,32],[1,5,32],[1,6,32]]",
    )
    assert p.returncode == 0, p.stderr
    keys = []
    for i in (1, 2):
        out = tmp_path / f"r{i}.jsonl"
        w = workers_run(plan, out, "--shard", f"{i}/2")
        assert w.returncode == 0, w.stdout + w.stderr
        keys += [json.loads(ln)["spec"]["key"] for ln in out.read_text().splitlines()[1:]]
    planned = [json.loads(ln)["key"] for ln in plan.read_text().splitlines()[1:]]
    assert sorted(keys) == sorted(planned) and len(keys) == 3
    bad = workers_run(plan, tmp_path / "x.jsonl", "--shard", "3/2", timeout=120)
    assert bad.returncode == 2 and "expected I/N" in bad.stderr
