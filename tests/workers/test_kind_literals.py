"""A job kind's name is written in its declaration only (workers/kinds/<kind>.py): the code of orchestrator/,
workers/ and dashboard/ that treats a kind apart reads the declaration (``kinds.timed()``,
``kind_of(name).needs_gpu``) or imports the kind's ``NAME``.

The check reads the sources (``ast``) and finds a kind's name as a string where it stands for a job kind: compared
with something named ``kind`` (``Job.kind == "micro"``, ``"isa" in sw["kinds"]``, ``r.get("kind") != "e2e"``, in a
comprehension over kinds), passed as ``kind=``/``kinds=`` or to a function whose parameter there is a kind
(``of_kind("micro")``, ``Job.kind.in_((...))``, a function of the code's own with a ``kind`` parameter), assigned to
a name of kinds (``TIMED_KINDS = (...)``), or beside a kind in a tuple, list or set.  The same word elsewhere is
another thing of the same name: a key of a job's ``details`` (``details["profile"]``), a section of the JSON
summary, the ``tune`` subcommand, a dashboard page's path.

Allowed, each for its reason: nothing in Python.  (conf/ is Hydra YAML, not Python: its sweeps name the kinds they
run, as a user's overrides do.)
"""

from __future__ import annotations

import ast
from pathlib import Path

from workers import kinds

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("orchestrator", "workers", "dashboard")
DECLARATIONS = ROOT / "workers" / "kinds"
ALLOWED: dict[tuple[str, int], str] = {}  # (path, line) -> why; empty: no exception is needed


def _mentions_kind(node: ast.AST) -> bool:
    return "kind" in ast.unparse(node).lower()


def _kind_names(node: ast.AST, names: set[str]) -> list[ast.Constant]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names]


def _kind_params(trees: list[ast.AST]) -> dict[str, set[int]]:
    """Function name -> the positions of its parameters that name a kind, over every function of the code."""
    found: dict[str, set[int]] = {}
    for tree in trees:
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [a.arg for a in fn.args.posonlyargs + fn.args.args]
                if args and args[0] in ("self", "cls"):
                    args = args[1:]
                found.setdefault(fn.name, set()).update(i for i, a in enumerate(args) if "kind" in a.lower())
    return found


def literals(tree: ast.AST, names: set[str], kind_params: dict[str, set[int]] | None = None) -> list[int]:
    """The lines of ``tree`` where a kind's name stands for a job kind."""
    kind_params = kind_params or {}
    hits: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_mentions_kind(o) for o in operands):
                hits += [c for o in operands if not _mentions_kind(o) for c in _kind_names(o, names)]
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg and "kind" in kw.arg.lower():
                    hits += _kind_names(kw.value, names)
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if _mentions_kind(node.func):
                hits += [c for a in node.args for c in _kind_names(a, names)]
            for i in kind_params.get(func, ()):
                if i < len(node.args):
                    hits += _kind_names(node.args[i], names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(_mentions_kind(t) for t in targets):
                hits += _kind_names(node.value, names)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            if any(_mentions_kind(e) for e in node.elts if not isinstance(e, ast.Constant)):
                hits += [e for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args
            for a, d in zip(args[len(args) - len(node.args.defaults) :], node.args.defaults):
                if "kind" in a.arg.lower():
                    hits += _kind_names(d, names)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            bound = {
                n.id
                for g in node.generators
                if _mentions_kind(g.iter)
                for n in ast.walk(g.target)
                if isinstance(n, ast.Name)
            }
            for cmp in ast.walk(node):
                if isinstance(cmp, ast.Compare):
                    operands = [cmp.left, *cmp.comparators]
                    if any(isinstance(o, ast.Name) and o.id in bound for o in operands):
                        hits += [c for o in operands for c in _kind_names(o, names)]
    return sorted({c.lineno for c in hits})


def _sources() -> list[Path]:
    return [
        p
        for folder in FOLDERS
        for p in sorted((ROOT / folder).rglob("*.py"))
        if DECLARATIONS not in p.parents and p.parent != DECLARATIONS
    ]


def test_no_job_kind_is_named_outside_its_declaration():
    names = set(kinds.names())
    assert {"correctness", "micro", "e2e", "profile", "isa", "tune"} <= names
    trees = {p: ast.parse(p.read_text(), str(p)) for p in _sources()}
    params = _kind_params(list(trees.values()))
    found = [
        f"{p.relative_to(ROOT)}:{line}: {p.read_text().splitlines()[line - 1].strip()}"
        for p, tree in trees.items()
        for line in literals(tree, names, params)
        if (str(p.relative_to(ROOT)), line) not in ALLOWED
    ]
    assert not found, "job kinds named outside workers/kinds/ (read the declaration instead):\n" + "\n".join(found)


def _lines(code: str) -> list[int]:
    tree = ast.parse(code)
    return literals(tree, set(kinds.names()), _kind_params([tree]))


def test_the_check_finds_a_kind_written_in_a_query():
    """The forms the check is there for are found; the same words as other things are not."""
    for code in (
        'select(Job).where(Job.kind == "micro")',
        'q.where(Job.kind.in_(("micro", "tune")))',
        'if spec.kind != "correctness": pass',
        'if "isa" in sw["kinds"]: pass',
        'ok = r.get("kind") == "e2e"',
        'TIMED_KINDS = ("micro", "tune")',
        'JobSpec(kind="isa", kernel="x")',
        'names = catalogue.of_kind("e2e")',
        "kinds = sorted({kind, 'correctness'})",
        'runs = [r for r, ks in kinds.items() if "micro" in ks]',
        'def latest(s, kind, metric): pass\nlatest(s, "micro", "time_us")',
        'def f(kind="profile"): pass',
    ):
        assert _lines(code), code
    for code in (
        'profile = details.get("profile") or {}',
        'facts["isa"] = []',
        'if args.cmd == "tune": pass',
        'PageView(page="isa", title="ISA")',
        'doc = {"e2e": e2e_results(url), "isa": isa_results(url)}',
        'def plan_tune(sweep: str = "tune"): pass',
    ):
        assert not _lines(code), code
