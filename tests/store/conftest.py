"""Fixtures for the store tests: real SQLite files and a real PostgreSQL server.

PostgreSQL: $KERNELFLEET_TEST_PG_URL (default postgresql+psycopg://postgres@127.0.0.1:5432/test).  Every test
gets its own freshly created schema (selected through the URL's ``options=-csearch_path=...``), dropped after
the test.  When the server is unreachable the PostgreSQL tests are skipped with the reason, except under CI
(CI=true), where they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.sample_devices import device_row
from orchestrator.store import migrate, session
from orchestrator.store.writer import StoreWriter
from workers.spec import DeviceInfo, JobResult, JobSpec, Measurement

PG_BASE_URL = os.environ.get("KERNELFLEET_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgresql")


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def pg_unreachable() -> str | None:
    """None when the PostgreSQL test server answers, else why not."""
    try:
        # inside: without the driver (the dev extra's psycopg) the engine cannot be made, and the server is as good as
        # unreachable
        engine = create_engine(PG_BASE_URL, connect_args={"connect_timeout": 3})
    except ImportError as exc:
        return f"PostgreSQL driver missing ({exc}): install the dev extra"
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return None
    except Exception as exc:  # any failure to reach the server is reported, whatever the driver raised
        return f"PostgreSQL at {session.display_url(PG_BASE_URL)} is unreachable: {type(exc).__name__}: {exc}"
    finally:
        engine.dispose()


@pytest.fixture
def pg_url(pg_unreachable: str | None) -> Iterator[str]:
    """A URL whose search_path is a new, empty schema of its own (dropped afterwards)."""
    if pg_unreachable:
        if _in_ci():
            pytest.fail(f"{pg_unreachable} (CI=true: PostgreSQL tests must run)")
        pytest.skip(pg_unreachable)
    schema = f"kf_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(PG_BASE_URL)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = make_url(PG_BASE_URL).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        session.dispose_engines()
        with admin.begin() as conn:
            conn.execute(text("SET lock_timeout = '20s'"))
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path) -> Iterator[str]:
    """A SQLite file that does not exist yet, in a folder that does not exist yet."""
    yield session.sqlite_url_for(tmp_path / "store" / "kernelfleet.db")
    session.dispose_engines()


@pytest.fixture(params=BACKENDS)
def empty_url(request) -> str:
    """An empty database of each backend."""
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


@pytest.fixture
def store_url(empty_url: str) -> str:
    """A database of each backend, migrated to head."""
    migrate.upgrade(empty_url)
    return empty_url


@pytest.fixture
def writer(store_url: str) -> Iterator[StoreWriter]:
    w = StoreWriter(store_url)
    yield w
    w.close()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path) -> Iterator[None]:
    """No test sees the developer's own store."""
    monkeypatch.delenv(session.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    yield
    session.dispose_engines()


@dataclass
class Factories:
    """Hand-made specs, devices and results in the shapes workers/spec.py defines."""

    def spec(
        self,
        kind: str = "micro",
        kernel: str | None = "rmsnorm",
        shape=(4, 1024, 2048),
        dtype: str = "bf16",
        impls=("eager", "compile", "triton"),
        target: str = "h200",
        model: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        s = JobSpec(
            kind=kind,
            kernel=kernel,
            model=model,
            shape=list(shape),
            dtype=dtype,
            impls=list(impls),
            target=target,
            params=dict(params),
            sweep="test",
        )
        s.key = hashlib.sha256(json.dumps(s.content(), sort_keys=True).encode()).hexdigest()[:16]
        return s.to_dict()

    def device(self, gpu_type: str = "h200", torch: str = "2.9.0") -> dict[str, Any]:
        return device_row(gpu_type, torch=torch)

    def timing(self, impl: str, samples: list[float], gbs: float | None = None) -> list[dict[str, Any]]:
        """time_us (median + every repeat), iqr_us and optionally gbs for one implementation."""
        ordered = sorted(samples)
        n = len(ordered)
        median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
        out = [
            Measurement(impl, "time_us", median, "us", list(samples)).to_dict(),
            Measurement(impl, "iqr_us", ordered[(3 * n) // 4] - ordered[n // 4], "us").to_dict(),
        ]
        if gbs is not None:
            out.append(Measurement(impl, "gbs", gbs, "GB/s").to_dict())
        return out

    def verdicts(self, passed: dict[str, bool]) -> list[dict[str, Any]]:
        out = []
        for impl, ok in passed.items():
            out += [
                Measurement(impl, "rel_err", 1e-3 if ok else 0.5, "").to_dict(),
                Measurement(impl, "max_abs", 1e-2 if ok else 3.0, "").to_dict(),
                Measurement(impl, "correct", 1.0 if ok else 0.0, "").to_dict(),
            ]
        return out

    def result(
        self,
        spec: dict[str, Any],
        measurements=(),
        status: str = "ok",
        attempt: int = 1,
        device: dict[str, Any] | None = None,
        started_at: float | None = 1_800_000_000.0,
        details: dict[str, Any] | None = None,
        error: str | None = None,
        node_id: str | None = "node-a",
        no_device: bool = False,
    ) -> dict[str, Any]:
        if not no_device:
            device = device if device is not None else self.device()
        dev = None if no_device else DeviceInfo.from_dict(device)
        return JobResult(
            key=spec["key"],
            status=status,
            measurements=[Measurement.from_dict(m) for m in measurements],
            error=error,
            device=dev,
            node_id=node_id,
            started_at=started_at,
            duration_s=1.5,
            attempt=attempt,
            details=dict(details or {}),
        ).to_dict()


@pytest.fixture
def factories() -> Factories:
    return Factories()
