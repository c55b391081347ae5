"""The plain data that crosses process and machine boundaries.

JobSpec goes from the planner to a worker, JobResult comes back, DeviceInfo describes the GPU (or CPU) a
result was measured on. All three serialise to plain JSON (``to_dict``/``from_dict``), so they travel through
Ray, through JSON-lines files (``python -m workers run``) and through the sandbox pipe alike.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from workers import metrics

# how workers.runtime.timing flushes L2 before each timed call (the micro job's "flush" parameter)
FLUSH_MODES = ("write", "read")

# Job outcomes.  "ok" and "incorrect" are results (the job ran to the end and measured something); the rest are
# failures of the job itself.  Only "lost" (the node running it vanished) is an infrastructure failure.
STATUS_OK = "ok"
STATUS_INCORRECT = "incorrect"  # ran, but an implementation failed its correctness check
STATUS_ERROR = "error"  # the job raised (bad shape for the kernel, kernel compile error, ...)
STATUS_CRASHED = "crashed"  # the sandbox process died under the job (segfault, os._exit, GPU fault)
STATUS_TIMED_OUT = "timed_out"  # past its timeout; its process group was killed
STATUS_LOST = "lost"  # no node could run it (node died and retries ran out, or no node of its type is left)
STATUS_SKIPPED = "skipped"  # nothing to run on this device (e.g. every implementation unavailable)
GOOD_STATUSES = (STATUS_OK, STATUS_INCORRECT, STATUS_SKIPPED)
ALL_STATUSES = (
    STATUS_OK,
    STATUS_INCORRECT,
    STATUS_ERROR,
    STATUS_CRASHED,
    STATUS_TIMED_OUT,
    STATUS_LOST,
    STATUS_SKIPPED,
)


def _jsonable(value: Any) -> Any:
    """Tuples become lists, so a value equals itself after a JSON round trip."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass
class JobSpec:
    """One unit of GPU work, small enough to retry.

    ``key`` is a content hash of every other field plus the code version (see orchestrator.plan.jobs); two specs
    with equal keys do the same work on the same code.
    """

    kind: str
    kernel: str | None = None
    model: str | None = None
    shape: list[int] = field(default_factory=list)
    dtype: str = "bf16"
    impls: list[str] = field(default_factory=list)
    target: str = "any"
    params: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    sweep: str = ""

    def content(self) -> dict[str, Any]:
        """What the key hashes: the work itself, without the key and without the sweep that planned it."""
        d = self.to_dict()
        d.pop("key")
        d.pop("sweep")
        return d

    def label(self) -> str:
        what = self.kernel or self.model or "?"
        shape = "x".join(str(s) for s in self.shape)
        return f"{self.kind}:{what}[{shape}]:{self.dtype}"

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobSpec":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"JobSpec: unknown field(s) {sorted(unknown)}; allowed: {sorted(names)}")
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


@dataclass
class Measurement:
    """One metric of one implementation, with every repeat kept in ``samples``.

    ``metric`` must be in the catalogue (workers/metrics.py; an unknown name raises ValueError); ``unit`` defaults to
    the catalogue's, and another unit is an error.
    """

    impl: str
    metric: str
    value: float | None
    unit: str = ""
    samples: list[float] | None = None

    def __post_init__(self):
        known = metrics.get(self.metric)
        if not self.unit:
            self.unit = known.unit
        elif self.unit != known.unit:
            raise ValueError(
                f"metric {self.metric!r} is measured in {known.unit or 'plain numbers'!r}, "
                f"not {self.unit!r} (workers/metrics.py)"
            )

    def to_dict(self) -> dict[str, Any]:
        # as dataclasses.asdict, without its deep copy of every sample (results hold many thousands of them)
        samples = None if self.samples is None else list(self.samples)
        return {"impl": self.impl, "metric": self.metric, "value": self.value, "unit": self.unit, "samples": samples}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Measurement":
        return cls(**d)


@dataclass
class DeviceInfo:
    """What a result was measured on.  ``hardware_key`` identifies the hardware+software stack for history."""

    vendor: str  # nvidia | amd | cpu
    name: str  # e.g. "NVIDIA H200", "AMD Instinct MI355X"
    arch: str  # sm_90, gfx950, gfx1201, x86_64
    warp_size: int = 0
    compute_units: int = 0
    memory_bytes: int = 0
    driver: str = ""
    runtime: str = ""  # "cuda 13.0", "rocm 7.0.2", "" on CPU
    torch: str = ""
    triton: str = ""
    gpu_type: str = ""  # the fleet's short name: h200, mi355x, r9700, cpu
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hardware_key(self) -> str:
        parts = [
            self.vendor,
            self.gpu_type or self.name,
            self.arch,
            self.runtime,
            f"torch{self.torch}",
            f"triton{self.triton}",
        ]
        return "/".join(p.replace("/", "_").replace(" ", "_") for p in parts if p)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["hardware_key"] = self.hardware_key
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DeviceInfo":
        d = {k: v for k, v in d.items() if k != "hardware_key"}
        return cls(**d)


@dataclass
class JobResult:
    key: str
    status: str
    measurements: list[Measurement] = field(default_factory=list)
    error: str | None = None
    device: DeviceInfo | None = None
    node_id: str | None = None
    started_at: float | None = None  # unix seconds
    duration_s: float | None = None  # time inside the sandbox for this job
    attempt: int = 1
    details: dict[str, Any] = field(default_factory=dict)  # job-kind specific (e.g. e2e per-mode summary)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "status": self.status,
            "measurements": [m.to_dict() for m in self.measurements],
            "error": self.error,
            "device": self.device.to_dict() if self.device else None,
            "node_id": self.node_id,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "attempt": self.attempt,
            "details": _jsonable(self.details),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobResult":
        d = dict(d)
        d["measurements"] = [Measurement.from_dict(m) for m in d.get("measurements") or []]
        dev = d.get("device")
        d["device"] = DeviceInfo.from_dict(dev) if dev else None
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)
