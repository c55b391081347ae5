"""A job's key: a hash of what determines its result, and nothing else.

That is the job itself (``JobSpec.content()``: kind, kernel or model, shape, dtype, implementations, target,
parameters), the code that job can run (the modules of ``kernels/`` and ``workers/`` its kind's module and its
kernel's registry entry import, at any depth, hashed by path and content: workers/runtime/job_code.py) and the software
it runs on (python, torch, triton: :func:`software_versions`).  So a change to one kernel's module re-keys that kernel's
jobs (and those of kernels whose modules import it), a change to the profile job's modules the profile jobs, and a
commit that changes only docs, the README, the orchestrator, the tests or code no job imports plans the same keys: the
store's results stay reusable across it.  The git commit is recorded with a run as provenance, never in a key.

The planner (``orchestrator.plan.jobs``) keys the jobs it plans with :func:`job_key`; a plan file's header carries the
code version (:meth:`CodeVersion.to_dict`: the hash of each of its jobs' code), so whoever reads the plan or its
results again (``python -m workers run``, the store's import) recomputes a spec's key from the spec and the header
with the same function.  Keys of older plans are recomputed as they were made: scheme 1 hashed the commit, scheme 2
the whole of ``kernels/`` and ``workers/`` for every job.
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
from typing import Mapping

from workers.runtime.job_code import KEYED_SOURCES, SourceTree, job_group
from workers.spec import JobSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
KEYED_SOFTWARE = ("torch", "triton")  # with python: the versions part of every key (software_versions)
# 1: the key hashed the git commit; 2: the content of KEYED_SOURCES, the same for every job; 3: the code the job
# can run, and the software versions
KEY_SCHEME = 3


class JobCode(Mapping[str, str]):
    """A checkout's job code hashes, by job group (:func:`workers.runtime.job_code.job_group`), each computed when first
    asked for; as a mapping it holds those computed so far."""

    def __init__(self, tree: SourceTree):
        self.tree = tree
        self._hashes: dict[str, str] = {}

    def for_job(self, kind: str, kernel: str | None) -> str:
        group = job_group(kind, kernel)
        if group not in self._hashes:
            self._hashes[group] = self.tree.job_hash(kind, kernel)
        return self._hashes[group]

    def __getitem__(self, group: str) -> str:
        return self._hashes[group]

    def __iter__(self):
        return iter(self._hashes)

    def __len__(self) -> int:
        return len(self._hashes)


@dataclass(frozen=True)
class CodeVersion:
    """What a job's key says about the code: the hash of the code the job can run (``job_code``, by job group) and
    ``software`` (name -> version) are in the key; ``code_hash``, a hash of every keyed source, is what a run records
    of its code; ``commit`` is provenance only.  A version without ``job_code`` keys every job by ``code_hash``.
    ``scheme`` 1 and 2 describe plans made before keys followed each job's code: scheme 1's key hashed the commit and
    ``code_hash`` held a hash of ``kernels/`` alone, scheme 2's hashed ``code_hash`` for every job; :func:`job_key`
    still recomputes such keys, so older results can be checked against their specs."""

    commit: str
    code_hash: str
    software: dict[str, str] = field(default_factory=dict)
    scheme: int = KEY_SCHEME
    job_code: Mapping[str, str] = field(default_factory=dict)

    def job_hash(self, spec: JobSpec) -> str:
        """The hash of the code ``spec`` can run: this checkout's (computed), a plan's (from its header), or
        ``code_hash`` for a version that knows none."""
        if isinstance(self.job_code, JobCode):
            return self.job_code.for_job(spec.kind, spec.kernel)
        if not self.job_code:
            return self.code_hash
        group = job_group(spec.kind, spec.kernel)
        try:
            return self.job_code[group]
        except KeyError:
            raise ValueError(f"job {spec.label()}: the plan's header has no code hash for {group!r} jobs") from None

    def key_part(self, spec: JobSpec) -> dict:
        if self.scheme == 1:
            return {"commit": self.commit, "kernels_hash": self.code_hash}
        code = self.code_hash if self.scheme == 2 else self.job_hash(spec)
        return {"code_hash": code, "software": dict(sorted(self.software.items()))}

    def to_dict(self, specs: list[JobSpec] | None = None) -> dict:
        """The plan header's fields; ``job_code`` for the groups of ``specs`` (default: every group this version
        knows a hash of)."""
        if specs is None:
            job_code = dict(self.job_code)
        elif self.job_code:
            job_code = {job_group(s.kind, s.kernel): self.job_hash(s) for s in specs}
        else:
            job_code = {}
        return {
            "commit": self.commit,
            "code_hash": self.code_hash,
            "software": dict(sorted(self.software.items())),
            "key_scheme": self.scheme,
            "job_code": dict(sorted(job_code.items())),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CodeVersion":
        """From a plan header (:meth:`to_dict`, a scheme-2 header without ``job_code``, or a scheme-1 header with
        ``commit`` and ``kernels_hash``)."""
        commit = str(d.get("commit") or "unknown")
        if "key_scheme" not in d and "kernels_hash" in d:
            return cls(commit, str(d["kernels_hash"]), scheme=1)
        scheme = d.get("key_scheme")
        if scheme not in (2, KEY_SCHEME) or "code_hash" not in d:
            raise ValueError(f"a plan header with key scheme {scheme!r}; this code knows schemes 1 to {KEY_SCHEME}")
        job_code = (d.get("job_code") or {}) if scheme == KEY_SCHEME else {}
        if not isinstance(job_code, dict) or not all(isinstance(v, str) for v in job_code.values()):
            raise ValueError("job_code: expected an object of job group -> code hash strings")
        return cls(commit, str(d["code_hash"]), dict(d.get("software") or {}), scheme, dict(job_code))


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


def checkout_version(root: Path) -> CodeVersion:
    """The code version of the checkout at ``root`` in this environment (its job code hashes computed as asked)."""
    return CodeVersion(git_commit(root), code_hash(root), software_versions(), job_code=JobCode(SourceTree(root)))


@functools.cache
def code_version() -> CodeVersion:
    """This checkout's and this environment's code version."""
    return checkout_version(REPO_ROOT)


def job_key(spec: JobSpec, code: CodeVersion) -> str:
    payload = json.dumps({"job": spec.content(), "code": code.key_part(spec)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def check_plan(header: dict, specs: list[JobSpec]) -> list[str]:
    """Check a plan file before its jobs run here: every spec's key is :func:`job_key` of its content and the
    header's code version, and each job's code is this checkout's (ValueError otherwise: results stored under the
    plan's keys must come from the code those keys name).  Returns warnings: software versions that differ from the
    plan's (each result still records the device's own in its hardware key)."""
    planned = CodeVersion.from_dict(header)
    if planned.scheme != KEY_SCHEME:
        raise ValueError(
            f"the plan's keys follow key scheme {planned.scheme} (made by older code); plan again with this checkout"
        )
    for s in specs:
        if s.key != job_key(s, planned):
            raise ValueError(
                f"job {s.label()}: its key {s.key!r} is not the hash of its content and the plan's "
                f"code version; plan again instead of editing a plan file"
            )
    here = code_version()
    for s in specs:
        if here.job_hash(s) != planned.job_hash(s):
            raise ValueError(
                f"job {s.label()}: the plan was made with other kernels/ or workers/ sources of the code it runs "
                f"(code hash {planned.job_hash(s)}, commit {planned.commit}) than this checkout's "
                f"({here.job_hash(s)}, commit {here.commit}); check out the plan's commit or plan again here"
            )
    return [
        f"{name} {here.software.get(name)} here, {version} in the plan"
        for name, version in sorted(planned.software.items())
        if here.software.get(name) != version
    ]
