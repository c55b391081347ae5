"""Results files as `python -m workers run` writes them, made by hand for the import tests, and the store's row
counts to compare before and after an import."""

from __future__ import annotations

import base64
import contextlib
import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy import text

from orchestrator.cli import commands as cli
from orchestrator.plan.jobs import CodeVersion, job_key, plan_key
from orchestrator.store import session
from workers.spec import DeviceInfo, JobResult, JobSpec, Measurement

TABLES = ("runs", "devices", "jobs", "run_jobs", "job_attempts", "measurements", "artifacts")
DEVICE = DeviceInfo(
    vendor="cpu",
    name="x86_64 test",
    arch="x86_64",
    warp_size=1,
    compute_units=2,
    memory_bytes=2**34,
    driver="",
    runtime="",
    torch="2.13.0",
    triton="3.5.0",
    gpu_type="cpu",
)


def code(commit: str) -> CodeVersion:
    """The code version of a plan made at ``commit``, its sources' hash made from the commit: another commit's
    jobs have other keys."""
    return CodeVersion(commit, commit[:16], {"python": "3.11.7", "torch": "2.13.0", "triton": "3.5.0"})


def specs(commit: str, n: int = 3) -> list[JobSpec]:
    """``n`` micro jobs keyed as the planner keys them on ``commit``."""
    code_version = code(commit)
    out = []
    for i in range(n):
        s = JobSpec(
            kind="micro",
            kernel="rmsnorm",
            shape=[1, 8, 64 * (i + 1)],
            dtype="bf16",
            impls=["triton", "eager"],
            target="any",
            params={"rep_ms": 20.0, "seed": None},
            sweep="smoke",
        )
        s.key = job_key(s, code_version)
        out.append(s)
    return out


def result(spec: JobSpec, status: str = "ok", error: str | None = None, artifact: bool = False) -> JobResult:
    ms = [Measurement(impl, "time_us", 10.0 + k, "us", [10.0 + k, 11.0 + k]) for k, impl in enumerate(spec.impls)]
    details: dict[str, Any] = {"copy_gbs": 12.5}
    if artifact:
        details["artifacts"] = [{"kind": "trace", "name": "trace.json", "data_b64": base64.b64encode(b"{}").decode()}]
    return JobResult(
        key=spec.key,
        status=status,
        measurements=ms,
        error=error,
        device=DEVICE,
        node_id="local:test",
        started_at=1_800_000_000.0,
        duration_s=1.25,
        attempt=1,
        details=details,
    )


def lines(commit: str, n: int = 3, rows: list[tuple[JobSpec, JobResult]] | None = None) -> list[dict]:
    """The header and one {spec, result} object per job, as JSON-ready dicts."""
    ss = specs(commit, n)
    rows = rows if rows is not None else [(s, result(s, artifact=i == 0)) for i, s in enumerate(ss)]
    header = {
        "kernelfleet": "results",
        "format": 1,
        "plan": {
            "kernelfleet": "plan",
            "format": 1,
            "sweep": "smoke",
            "config": {"sweep": {"name": "smoke"}},
            "plan_key": plan_key(ss),
            **code(commit).to_dict(),
        },
    }
    return [header] + [{"spec": s.to_dict(), "result": r.to_dict()} for s, r in rows]


def write(path: Path, objs: list[Any]) -> Path:
    path.write_text("".join(json.dumps(o, sort_keys=True) + "\n" for o in objs))
    return path


def counts(url: str) -> dict[str, int]:
    engine = session.create_engine_for(url)
    try:
        with engine.connect() as conn:
            return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}
    finally:
        engine.dispose()


def run_import(*args: str) -> tuple[int, str, str]:
    """`python -m orchestrator import ARGS` in this process (its main function): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=out, width=200, soft_wrap=True)
    with contextlib.redirect_stderr(err):
        rc = cli.main(["import", *args], console)
    return rc, out.getvalue(), err.getvalue()
