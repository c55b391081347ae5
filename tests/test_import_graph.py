"""The project's import graph, read from the sources with ``ast``: layers import only downwards (kernels -> workers ->
orchestrator -> dashboard), the dashboard reads the store only through its query modules, and no two modules import
each other in a circle at module level.

Every import counts for the layering, module level or inside a function; only module-level imports can make a
circle that fails (a function-level import runs after both modules are loaded), so only those are checked for one.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kernels", "workers", "orchestrator", "dashboard", "benchmarks")
LAYER = {"kernels": 0, "workers": 1, "orchestrator": 2, "dashboard": 3}
DASHBOARD_MAY_IMPORT = "orchestrator.store.query"  # the store's read API: the only part of the orchestrator it sees


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module ``name`` is, or is in (``a.b.c`` names module a.b when c is a name inside it)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        names = [f"{base}.{a.name}" for a in node.names]  # a submodule, or a name inside ``base``
    return [t for t in (_resolve(n) for n in names) if t and t != module]


def _imports() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(every import, module-level imports) per project module, as edges to project modules."""
    every: dict[str, set[str]] = defaultdict(set)
    top: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        at_top = [imp for node in tree.body for imp in _collect_top(node)]  # if/try/class blocks included
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                every[module].update(_targets(module, node))
        for node in at_top:
            if not _type_checking_only(node, tree):
                top[module].update(_targets(module, node))
    return every, top


def _collect_top(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is loaded: outside functions and classes' methods."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [node]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return []
    out = []
    for child in ast.iter_child_nodes(node):
        out.extend(_collect_top(child))
    return out


def _type_checking_only(node: ast.AST, tree: ast.Module) -> bool:
    for block in tree.body:
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test):
            if any(node is n for n in ast.walk(block)):
                return True
    return False


EVERY, TOP = _imports()


def _layer(module: str) -> int | None:
    return LAYER.get(module.split(".")[0])


def test_the_graph_sees_the_project():
    assert len(MODULES) > 100 and all(pkg in MODULES for pkg in PACKAGES)
    assert "orchestrator.store.query.run_queries" in EVERY["orchestrator.cli.commands"] | EVERY["orchestrator.cli.runs"]


def test_no_layer_imports_one_above_it():
    upward = [
        f"{src} -> {dst}"
        for src, dsts in sorted(EVERY.items())
        for dst in sorted(dsts)
        if _layer(src) is not None and _layer(dst) is not None and _layer(dst) > _layer(src)
    ]
    assert not upward, "imports from a higher layer (kernels -> workers -> orchestrator -> dashboard):\n" + "\n".join(
        upward
    )


def test_nothing_but_benchmarks_and_tests_imports_benchmarks():
    wrong = [
        f"{src} -> {dst}"
        for src, dsts in sorted(EVERY.items())
        for dst in sorted(dsts)
        if dst.split(".")[0] == "benchmarks" and src.split(".")[0] != "benchmarks"
    ]
    assert not wrong, "the product imports a benchmark script:\n" + "\n".join(wrong)


def test_the_dashboard_sees_only_the_store_query_api_of_the_orchestrator():
    wrong = [
        f"{src} -> {dst}"
        for src, dsts in sorted(EVERY.items())
        if src.split(".")[0] == "dashboard"
        for dst in sorted(dsts)
        if dst.split(".")[0] == "orchestrator" and not dst.startswith(DASHBOARD_MAY_IMPORT + ".")
    ]
    assert not wrong, f"the dashboard imports the orchestrator outside {DASHBOARD_MAY_IMPORT}:\n" + "\n".join(wrong)


# The stages inside a package, bottom first: a stage imports only its own or lower ranks (every import counts, as for
# the layers).  orchestrator: the statistics (plain numbers) under the store; the configuration; planning, the
# fleet's nodes and the reports; running a sweep; files in and out; bisect over commits; the command line on top.
# workers: the device layer under the runtime (sandbox, runner, timing, keys) under the job kinds' code.
STAGES = {
    "orchestrator": {
        "stats": 0,
        "store": 1,
        "config": 2,
        "plan": 3,
        "fleet": 3,
        "reports": 3,
        "run": 4,
        "interchange": 5,
        "bisect": 6,
        "cli": 7,
        "__main__": 8,
    },
    "workers": {"errors": 0, "spec": 0, "metrics": 0, "kinds": 0, "device": 1, "runtime": 2, "jobs": 3, "__main__": 4},
}


def _stage(module: str) -> tuple[str, str] | None:
    parts = module.split(".")
    return (parts[0], parts[1]) if parts[0] in STAGES and len(parts) > 1 else None


def test_every_module_sits_in_a_stage():
    loose = [m for m in MODULES if _stage(m) and _stage(m)[1] not in STAGES[_stage(m)[0]]]
    assert not loose, "modules outside the stage packages (add the package to STAGES with its rank):\n" + "\n".join(
        sorted(loose)
    )


def _stage_violations(edges: dict[str, set[str]]) -> list[str]:
    wrong = []
    for src, dsts in sorted(edges.items()):
        a = _stage(src)
        for dst in sorted(dsts):
            b = _stage(dst)
            if a and b and a[0] == b[0] and a[1] != b[1] and STAGES[a[0]][b[1]] > STAGES[a[0]][a[1]]:
                wrong.append(f"{src} -> {dst}")
    return wrong


def test_no_stage_imports_a_later_one():
    wrong = _stage_violations(EVERY)
    assert not wrong, "imports from a later stage (see STAGES):\n" + "\n".join(wrong)


def test_the_stage_rule_sees_an_upward_import():
    assert _stage_violations({"orchestrator.store.writer": {"orchestrator.run.sweep"}}) == [
        "orchestrator.store.writer -> orchestrator.run.sweep"
    ]
    assert _stage_violations({"workers.runtime.runner": {"workers.jobs.micro", "workers.device.detect"}}) == [
        "workers.runtime.runner -> workers.jobs.micro"
    ]
    assert _stage_violations({"orchestrator.run.sweep": {"orchestrator.store.writer"}}) == []


def _calls(name: str) -> list[str]:
    """The project modules that call ``name`` (a function or class, as a bare name or an attribute)."""
    found = []
    for module, path in sorted(MODULES.items()):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if called == name:
                    found.append(module)
                    break
    return found


def test_one_module_makes_the_store_engines_and_one_opens_the_writer():
    # engines (read-write, read-only, a server's maintenance database) are made in the store's session module only;
    # a writer is opened by store/open.py (created or schema-checked) — benchmarks may build their own fixtures
    product = [m for m in _calls("create_engine") if not m.startswith("benchmarks.")]
    assert product == ["orchestrator.store.session"]
    writers = [m for m in _calls("StoreWriter") if not m.startswith("benchmarks.")]
    assert writers == ["orchestrator.store.open"]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one circle through them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_circle(graph, sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _circle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One path from the component's first module back to itself, inside the component."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                return paths[v] + [start]
            if w in members and w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return component


def test_no_import_circle_at_module_level():
    # a package's __init__ loading its own submodules is not a circle of two modules: the edge is ignored
    graph = {src: {dst for dst in dsts if not dst.startswith(src + ".")} for src, dsts in TOP.items()}
    circles = _cycles(graph)
    assert not circles, "modules that import each other at module level:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_cycle_finder_names_the_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
