"""What a run is made under, found where it is made (the store's side: orchestrator/store/conditions.py).

* the checkout: uncommitted changes to the code jobs run (``kernels/`` and ``workers/``: tracked files changed, or
  untracked files git does not ignore) make a run ``dirty`` (its commit is HEAD's, not the code that ran), with a
  hash of those changes; a change elsewhere (docs, the orchestrator, tests) measures nothing differently;
* the fleet: several GPU nodes on one host (Ray's ``node:IP`` resource) share its GPUs (``shared_gpu``); a node
  joined with ``--label gpu=...`` (a rehearsal node) makes the run a ``rehearsal``;
* a results folder's ``conditions.json``: the conditions of results files measured before runs recorded them, by
  file name pattern (``{"files": {"*fleet-*": {"shared_gpu": true, "rehearsal": true, "note": "..."}}}``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import subprocess
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator.store import conditions as store_conditions
from workers.device import rehearsal
from workers.runtime.keys import KEYED_SOURCES, REPO_ROOT

MANIFEST = "conditions.json"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out if out.returncode == 0 else None


def tree_state(root: Path = REPO_ROOT) -> dict[str, Any] | None:
    """``{"dirty": True, "diff_sha256": ...}`` when the checkout at ``root`` has uncommitted changes to the code
    jobs run (tracked files changed, or untracked files git does not ignore, under KEYED_SOURCES), else None (also
    outside a git checkout)."""
    paths = ["--", *KEYED_SOURCES]
    status = _git(root, "status", "--porcelain", "--untracked-files=all", *paths)
    if status is None or not status.stdout.strip():
        return None
    h = hashlib.sha256()
    diff = _git(root, "diff", "HEAD", "--binary", *paths)
    h.update(diff.stdout if diff is not None else b"")
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z", *paths)
    for name in sorted(n for n in (untracked.stdout if untracked else b"").split(b"\0") if n):
        h.update(b"\0" + name + b"\0")
        try:
            h.update((root / name.decode()).read_bytes())
        except OSError:
            pass
    return {"dirty": True, "diff_sha256": h.hexdigest()}


def _host_of(resources: dict[str, float]) -> str | None:
    return next((k[len("node:") :] for k in resources if k.startswith("node:") and k != "node:__internal_head__"), None)


def fleet_conditions(nodes: Iterable[Any]) -> dict[str, Any] | None:
    """The conditions a fleet imposes on a run (nodes: schedule.NodeView): ``shared_gpu`` when two or more alive
    GPU nodes are on one host, ``rehearsal`` when a rehearsal node is among them."""
    gpu_nodes = [n for n in nodes if n.alive and n.gpus > 0]
    hosts = Counter(h for h in (_host_of(n.resources) for n in gpu_nodes) if h)
    shared = sorted(h for h, count in hosts.items() if count > 1)
    rehearsing = any(rehearsal.rehearsal_of(n.labels) for n in gpu_nodes)
    out: dict[str, Any] = {}
    notes = []
    if shared:
        out["shared_gpu"] = True
        notes.append(f"{max(hosts.values())} GPU nodes on one host ({', '.join(shared)})")
    if rehearsing:
        out["rehearsal"] = True
        notes.append("a rehearsal node (node join --label gpu=...) in the fleet")
    if notes:
        out["note"] = "; ".join(notes)
    return store_conditions.checked(out)


def manifest_conditions(path: str | Path) -> dict[str, Any] | None:
    """The conditions ``conditions.json`` beside a results file gives it (the first pattern its name matches);
    ValueError for a manifest that is not one."""
    path = Path(path)
    manifest = path.parent / MANIFEST
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{manifest}: not a conditions manifest ({exc})") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise ValueError(f'{manifest}: expected {{"files": {{"PATTERN": {{conditions}}}}}}')
    for pattern, conditions in files.items():
        if fnmatch.fnmatch(path.name, pattern):
            return store_conditions.checked(conditions, f"{manifest}: {pattern}")
    return None
