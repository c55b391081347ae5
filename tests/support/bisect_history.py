"""Test-only: a throwaway git repository of kernelfleet's code whose commits slow a plugin kernel down at known
commits, for the bisect tests (tests/orchestrator/test_bisect.py).

The kernel ``probe`` lives in ``kernels/bisect_probe.py`` of that repository (loaded with
``KERNELFLEET_PLUGINS=kernels.bisect_probe``, as the fault kernels are): its implementation ``slow`` sleeps
``DELAY_S`` per call and clones its input ``CLONES`` times.  Being a module of ``kernels/`` that the kernel's entry
is declared in, it is part of the probe jobs' code, so a commit that changes it re-keys them and any other commit
plans the same keys.

The probe's steps are host sleeps; its sweeps run on the CPU on any host (``host_only``). On a GPU the micro job
reads device events around the call, and the GPU suite runs other tests' kernels on the same GPU side by side (a
simulated cluster's two nodes share it too): the idle gap a sleep leaves between the events then scatters by the
others' work (on an H200 the cluster test's 1 -> 3 ms step went unconfirmed). These tests check the search, the keys
and the cluster path; a bisect of real history on a GPU is docs/perf/bisect-h200.md.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.devices import CPU_ONLY_ENV

SOURCE = Path(__file__).resolve().parents[2]
COPIED = ("conf", "orchestrator", "kernels", "workers", "migrations", "pyproject.toml")
PLUGIN = "kernels.bisect_probe"

PROBE = '''"""A test kernel for bisect: sleeps {delay} s per call, clones its input {clones} time(s)."""

import time

import torch

from kernels.registry import Grid, Impl, KernelEntry

DELAY_S = {delay}
CLONES = {clones}


def _slow(x):
    time.sleep(DELAY_S)
    out = x
    for _ in range(CLONES):
        out = out.clone()
    return out


ENTRIES = [
    KernelEntry(
        name="probe",
        description="bisect test kernel",
        check_shape=lambda shape: None,
        make_inputs=lambda shape, dtype, device, gen: {{
            "x": torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)
        }},
        reference=lambda inp: inp["x"].double(),
        alloc_out=lambda inp: torch.empty_like(inp["x"]),
        impls={{"slow": Impl("slow", lambda: _slow), "eager": Impl("eager", lambda: lambda x: x.clone())}},
        bytes_moved=lambda shape, dtype: 8 * shape[0],
        flops=lambda shape: 0,
        tolerances={{"fp32": (1e-6, 1e-6)}},
        default_impls=("slow", "eager"),
        grid=Grid(shapes=[[64], [128]], dtypes=["fp32"]),
    )
]
'''


def host_only(monkeypatch) -> None:
    """Every process the test starts (each commit's orchestrator, its embedded Ray or a simulated cluster's nodes,
    their sandboxes) takes the CPU path whatever the host.  The device masks name an index no device has (``-1``)
    rather than none: torch then sees no GPU, while a raylet still accepts the logical GPU a simulated node is given
    (it refuses one that an empty mask hides) and, told not to set CUDA_VISIBLE_DEVICES per task, keeps the mask."""
    for k, v in {**CPU_ONLY_ENV, "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}.items():
        monkeypatch.setenv(k, v)
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        monkeypatch.setenv(name, "-1")
    monkeypatch.delenv("ROCR_VISIBLE_DEVICES")  # Ray refuses it beside HIP_VISIBLE_DEVICES


def probe(delay: float, clones: int = 1) -> str:
    return PROBE.format(delay=delay, clones=clones)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, timeout=120
    ).stdout.strip()


def make_repo(repo: Path, commits: list[tuple[str, dict[str, str]]]) -> list[str]:
    """A repository at ``repo``: kernelfleet's code with ``kernels/bisect_probe.py``, then one commit per
    (message, {path: new text or "+text" appended}); the shas, the base commit first."""
    repo.mkdir(parents=True)
    for name in COPIED:
        src = SOURCE / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(src, repo / name)
    (repo / "README.md").write_text("probe history\n")
    (repo / "kernels" / "bisect_probe.py").write_text(probe(0.001))
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "dev")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base: probe sleeps 1 ms")
    shas = [git(repo, "rev-parse", "HEAD")]
    for message, files in commits:
        for path, text in files.items():
            target = repo / path
            target.write_text(target.read_text() + text[1:] if text.startswith("+") else text)
        git(repo, "commit", "--quiet", "-am", message)
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas
