"""A job's key: a hash of what determines its result, and nothing else.

That is the job itself (``JobSpec.content()``: kind, kernel or model, shape, dtype, implementations, target,
parameters), the content of the code that runs it (every ``.py`` under ``kernels/`` and ``workers/``, hashed by
path and bytes) and the software it runs on (python, torch, triton: :func:`software_versions`).  The git commit is
recorded with a run as provenance but is not part of the key, so a commit that changes only docs, the README, the
orchestrator or the tests plans the same keys, and the store's results stay reusable across it.

The planner (``orchestrator.plan``) keys the jobs it plans with :func:`job_key`; a plan file's header carries the
code version (:meth:`CodeVersion.to_dict`), so whoever reads the plan or its results again (``python -m workers
run``, the store's import) recomputes a spec's key from the spec and the header with the same function.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from workers.spec import JobSpec

REPO_ROOT = Path(__file__).resolve().parent.parent
KEYED_SOURCES = ("kernels", "workers")  # the code a job runs; its content is part of every key
KEYED_SOFTWARE = ("torch", "triton")  # with python: the versions part of every key (software_versions)
KEY_SCHEME = 2  # 1: the key hashed the git commit; 2: the content of KEYED_SOURCES and the software versions


@dataclass(frozen=True)
class CodeVersion:
    """What a job's key says about the code: ``code_hash`` (the sources) and ``software`` (name -> version) are in
    the key; ``commit`` is provenance only.  ``scheme`` 1 describes plans made before the key followed the sources:
    their key hashed the commit and ``code_hash`` held a hash of ``kernels/`` alone; :func:`job_key` still
    recomputes such keys, so older results can be checked against their specs."""

    commit: str
    code_hash: str
    software: dict[str, str] = field(default_factory=dict)
    scheme: int = KEY_SCHEME

    def key_part(self) -> dict:
        if self.scheme == 1:
            return {"commit": self.commit, "kernels_hash": self.code_hash}
        return {"code_hash": self.code_hash, "software": dict(sorted(self.software.items()))}

    def to_dict(self) -> dict:
        """The plan header's fields."""
        return {
            "commit": self.commit,
            "code_hash": self.code_hash,
            "software": dict(sorted(self.software.items())),
            "key_scheme": self.scheme,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CodeVersion":
        """From a plan header (:meth:`to_dict`, or a scheme-1 header with ``commit`` and ``kernels_hash``)."""
        commit = str(d.get("commit") or "unknown")
        if "key_scheme" not in d and "kernels_hash" in d:
            return cls(commit, str(d["kernels_hash"]), scheme=1)
        if d.get("key_scheme") != KEY_SCHEME or "code_hash" not in d:
            raise ValueError(
                f"a plan header with key scheme {d.get('key_scheme')!r}; this code knows schemes 1 and {KEY_SCHEME}"
            )
        return cls(commit, str(d["code_hash"]), dict(d.get("software") or {}))


def git_commit(root: Path = REPO_ROOT) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def code_hash(root: Path = REPO_ROOT) -> str:
    """Hash of every ``.py`` file under ``kernels/`` and ``workers/`` (relative path and content)."""
    h = hashlib.sha256()
    for folder in KEYED_SOURCES:
        for p in sorted((root / folder).rglob("*.py")):
            h.update(p.relative_to(root).as_posix().encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


def software_versions() -> dict[str, str]:
    """python, torch and triton versions of this environment.  torch's is read from its installed metadata (not
    imported); triton's from the imported module and the distribution that provides it
    (:func:`kernels.triton_dist.triton_distribution`): the bare version for upstream ``triton``, as keys always
    held it, ``pytorch-triton-rocm 3.5.1`` and the like for ROCm's and PyTorch's own builds (whose keys held
    ``none`` while the version was read from the ``triton`` distribution's metadata alone)."""
    from kernels.triton_dist import triton_distribution

    versions = {"python": platform.python_version()}
    try:
        versions["torch"] = metadata.version("torch")
    except metadata.PackageNotFoundError:
        versions["torch"] = "none"
    versions["triton"] = triton_distribution().recorded
    return versions


@functools.cache
def code_version() -> CodeVersion:
    """This checkout's and this environment's code version."""
    return CodeVersion(git_commit(), code_hash(), software_versions())


def job_key(spec: JobSpec, code: CodeVersion) -> str:
    payload = json.dumps({"job": spec.content(), "code": code.key_part()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def check_plan(header: dict, specs: list[JobSpec]) -> list[str]:
    """Check a plan file before its jobs run here: every spec's key is :func:`job_key` of its content and the
    header's code version, and the header's code is this checkout's (ValueError otherwise: results stored under
    the plan's keys must come from the code those keys name).  Returns warnings: software versions that differ
    from the plan's (each result still records the device's own in its hardware key)."""
    planned = CodeVersion.from_dict(header)
    if planned.scheme != KEY_SCHEME:
        raise ValueError(
            f"the plan's keys follow key scheme {planned.scheme} (they hash the commit); plan again with this checkout"
        )
    for s in specs:
        if s.key != job_key(s, planned):
            raise ValueError(
                f"job {s.label()}: its key {s.key!r} is not the hash of its content and the plan's "
                f"code version; plan again instead of editing a plan file"
            )
    here = code_version()
    if here.code_hash != planned.code_hash:
        raise ValueError(
            f"the plan was made with other kernels/ or workers/ sources (code hash "
            f"{planned.code_hash}, commit {planned.commit}) than this checkout's ({here.code_hash}, "
            f"commit {here.commit}); check out the plan's commit or plan again here"
        )
    return [
        f"{name} {here.software.get(name)} here, {version} in the plan"
        for name, version in sorted(planned.software.items())
        if here.software.get(name) != version
    ]
