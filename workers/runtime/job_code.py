"""The code a job can run: the modules of ``kernels/`` and ``workers/`` that its process imports for it.

A job runs in the sandbox's child process (workers/runtime/child.py), which hands it to its kind's module (its
declaration's
``module``, workers/kinds/); a kernel job's kernel comes from its registry entry's module (kernels/entries/), which
imports the kernel's own module.  Those modules, and every module of ``kernels/`` and ``workers/`` they import — at
module level or inside a function, at any depth — are the code the job can run; a change anywhere else in those
folders cannot change its result.  The imports are read from the sources (``ast``), so a checkout is analysed without
being imported; the registry (already loaded by whoever asks) says which entry module declares a kernel and which
module defines each of ``kernels``' public functions, the names the ``kernels`` package only re-exports
(``from kernels import rms_norm``).

:class:`SourceTree` reads a checkout; :meth:`SourceTree.job_hash` hashes the code of a job kind and kernel, which the
job's key holds (workers/runtime/keys.py).
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

KEYED_SOURCES = ("kernels", "workers")  # the folders whose modules a job's code is drawn from
CHILD_MODULE = "workers.runtime.child"  # the sandbox process every job runs in


def job_group(kind: str, kernel: str | None) -> str:
    """The jobs that run the same code: one kind, on one kernel (or on none: an end-to-end job)."""
    return f"{kind}:{kernel}" if kernel else kind


class SourceTree:
    """The ``.py`` files of ``kernels/`` and ``workers/`` under ``root``, by module name, and their imports."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.files: dict[str, Path] = {}
        for folder in KEYED_SOURCES:
            for path in sorted((self.root / folder).rglob("*.py")):
                parts = path.relative_to(self.root).with_suffix("").parts
                name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                self.files[name] = path
        self._imports: dict[str, frozenset[str]] = {}

    @functools.cached_property
    def _public_modules(self) -> dict[str, str]:
        """``kernels``' public function name -> the module that defines it."""
        from kernels import registry

        return {name: fn.__module__ for name, fn in registry.public_functions().items()}

    def imports(self, module: str) -> frozenset[str]:
        """The modules of this tree that ``module`` imports, directly (with the packages they sit in)."""
        if module not in self._imports:
            self._imports[module] = self._read_imports(module)
        return self._imports[module]

    def _read_imports(self, module: str) -> frozenset[str]:
        path = self.files[module]
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found |= self._with_packages(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                found |= self._with_packages(base)
                for alias in node.names:
                    found |= self._with_packages(f"{base}.{alias.name}")
                    if base == "kernels" and alias.name in self._public_modules:
                        found |= self._with_packages(self._public_modules[alias.name])
        return frozenset(found & set(self.files))

    def _with_packages(self, name: str) -> set[str]:
        """``name`` and the packages above it (importing ``a.b.c`` runs ``a`` and ``a.b`` first)."""
        parts = name.split(".")
        return {".".join(parts[: i + 1]) for i in range(len(parts))}

    def closure(self, roots: list[str]) -> list[str]:
        """``roots`` (those in this tree) and every module of the tree they import, at any depth, sorted."""
        seen: set[str] = set()
        todo = [r for r in roots if r in self.files]
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            seen.add(module)
            todo.extend(self.imports(module) - seen)
        return sorted(seen)

    def job_modules(self, kind: str, kernel: str | None) -> list[str]:
        """The modules a job of ``kind`` on ``kernel`` can run: the sandbox process's, the kind's module's and the
        kernel's registry entry module's, with everything they import."""
        from kernels import registry
        from workers import kinds

        roots = [CHILD_MODULE, kinds.kind_of(kind).module]
        if kernel:
            roots.append(registry.entry_module(kernel))
        return self.closure(roots)

    def job_hash(self, kind: str, kernel: str | None) -> str:
        """A hash of the code a job of ``kind`` on ``kernel`` can run: each of its modules' path and content."""
        h = hashlib.sha256()
        for module in self.job_modules(kind, kernel):
            path = self.files[module]
            h.update(path.relative_to(self.root).as_posix().encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
        return h.hexdigest()[:16]
