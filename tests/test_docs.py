"""The README and docs/ stay true to the repository: every path they name exists (a pattern matches a file), every
``KERNELFLEET_*`` environment variable the code reads is documented in the developer guide, and every package opens
with a table that names each of its modules."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
GUIDE = ROOT / "docs" / "developer-guide.md"
TOP = (
    "kernels",
    "workers",
    "orchestrator",
    "dashboard",
    "conf",
    "migrations",
    "tests",
    "docs",
    "results",
    "benchmarks",
)
# a path: a top-level folder, then path characters, placeholders (<name>), patterns (*, {a,b}) and cut-offs (…)
PATH = re.compile(r"(?<![\w./~$-])((?:%s)/[\w./<>*{},…-]*)" % "|".join(TOP))
PACKAGES = ("kernels", "workers", "orchestrator", "dashboard", "migrations", "benchmarks")


def _expand(pattern: str, chosen: tuple = ()) -> list[tuple[str, tuple]]:
    """``a{b,c}d`` as ``abd``, ``acd`` (each brace group in turn), each with the alternatives it took, by group."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [(pattern, chosen)]
    return list(
        itertools.chain.from_iterable(
            _expand(pattern[: m.start()] + alt + pattern[m.end() :], (*chosen, (len(chosen), alt)))
            for alt in m.group(1).split(",")
        )
    )


def named_paths(text: str) -> list[str]:
    """The repository paths ``text`` names: a file or folder (with an extension or a trailing slash), or a pattern;
    a path with a placeholder (``conf/kernel/<name>.yaml``) is a recipe's, not a path, and is left out."""
    found = []
    for m in PATH.finditer(text):
        path = m.group(1).rstrip(".,")
        if path.endswith("**"):  # Markdown's bold around the word, not a pattern
            path = path.rstrip("*")
        path = re.sub(r"[*…]+", "*", path)  # a cut-off name (…) stands for any ending
        if "<" in path or ">" in path:
            continue
        if path.endswith("/") or re.search(r"\.\w+$", path) or "*" in path or "{" in path:
            found.append(path)
    return found


def _exists(path: str) -> bool:
    if "*" not in path:
        return (ROOT / path).exists()
    if not re.search(r"\.\w+$", path):
        path += "*"  # a name cut off (…) before its extension
    return next(iter(ROOT.glob(path.rstrip("/").replace("**", "*"))), None) is not None


def missing(path: str) -> bool:
    """Whether ``path`` names nothing: a file or folder that is not there, a pattern that matches no file, or a brace
    alternative that no existing file takes (``{0951,1002}-x-{1,2}`` may pair its groups' alternatives)."""
    expansions = _expand(path)
    found = [chosen for one, chosen in expansions if _exists(one)]
    every = {choice for _, chosen in expansions for choice in chosen}
    return not found or {choice for chosen in found for choice in chosen} != every


# the first line of a recipe's code block: the file the reader writes (README, "Add a kernel"), not one of ours
RECIPE_FILE = re.compile(r"# [\w/.-]+\.py")


def test_every_path_the_docs_name_exists():
    stale = [
        f"{doc.relative_to(ROOT)}:{n}: {path}"
        for doc in DOCS
        for n, line in enumerate(doc.read_text().splitlines(), 1)
        if not RECIPE_FILE.fullmatch(line)
        for path in named_paths(line)
        if missing(path)
    ]
    assert not stale, "paths the docs name that do not exist:\n" + "\n".join(stale)


def test_the_path_check_sees_a_moved_module_and_reads_patterns():
    assert named_paths("(`orchestrator/store/regression_rule.py`): large") == ["orchestrator/store/regression_rule.py"]
    assert missing("orchestrator/store/regression_rule.py") and not missing("orchestrator/stats/regression_rule.py")
    assert not missing("tests/orchestrator/test_fleet_{sweep,whole_node}.py")
    assert missing("tests/orchestrator/test_fleet_{sweep,nowhere}.py")
    assert not missing("results/h200/2026-12-02-{0951,1002}-tune-norm-{1,2}.jsonl.gz")  # paired alternatives
    assert not missing("results/h200/*kernels-aa-2") and named_paths("**kernels/step** and") == []
    assert not missing("results/h200/2026-12-02-*-tune-*.jsonl.gz") and missing("results/h200/1999-*")
    assert named_paths("a `conf/kernel/<name>.yaml` overrides; kernels/step, docs/perf/ and docs/json.md.") == [
        "docs/perf/",
        "docs/json.md",
    ]


def _code_variables() -> set[str]:
    names = set()
    for folder in (*PACKAGES, "tests", "conf"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".yaml") and path.is_file():
                names |= set(re.findall(r"\bKERNELFLEET_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    return names


def test_every_environment_variable_is_in_the_developer_guide():
    names = _code_variables()
    assert {"KERNELFLEET_DB", "KERNELFLEET_FAST_LAUNCH", "KERNELFLEET_CHILD_START_TIMEOUT"} <= names
    guide = GUIDE.read_text()
    undocumented = sorted(n for n in names if f"`{n}`" not in guide)
    assert not undocumented, f"not in {GUIDE.relative_to(ROOT)}: {', '.join(undocumented)}"


def _packages() -> list[Path]:
    return sorted(p.parent for top in PACKAGES for p in (ROOT / top).rglob("__init__.py"))


def test_every_package_opens_with_a_table_of_its_modules():
    unnamed = []
    for package in _packages():
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        members = sorted(
            [p.stem for p in package.glob("*.py") if p.stem != "__init__"]
            + [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
        )
        lacking = [m for m in members if not re.search(rf"(?<![\w.]){re.escape(m)}(?![\w])", doc)]
        if lacking:
            unnamed.append(f"{package.relative_to(ROOT)}/__init__.py names not {', '.join(lacking)}")
    assert not unnamed, "package docstrings without a line for each module:\n" + "\n".join(unnamed)
