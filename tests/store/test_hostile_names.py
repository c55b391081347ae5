"""Names a user or an attacker chose (kernel, implementation, sweep, file paths) are data, everywhere they are
shown: Rich markup in them is printed as text, a spreadsheet formula in them is exported as text, HTML and table
syntax in them is escaped in Markdown, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import csv
import io
import json

from rich.console import Console

from orchestrator.cli import commands as cli
from orchestrator.plan.jobs import job_key, plan_key
from orchestrator.reports.summary import md
from orchestrator.store.query.csv_cells import csv_cell
from tests.store import results_files as rf
from workers.spec import JobSpec

KERNEL = "[/]k[bold red]"
IMPL = "=cmd|' /C calc'!A0"
SWEEP = "[/]x<script>alert(1)</script>|"


def hostile_lines(commit: str = "b" * 40) -> list[dict]:
    code = rf.code(commit)
    spec = JobSpec(
        kind="micro",
        kernel=KERNEL,
        shape=[1, 8, 64],
        dtype="bf16",
        impls=[IMPL, "eager"],
        target="any",
        params={"rep_ms": 20.0, "seed": None},
        sweep=SWEEP,
    )
    spec.key = job_key(spec, code)
    header = {
        "kernelfleet": "results",
        "format": 1,
        "plan": {
            "kernelfleet": "plan",
            "format": 1,
            "sweep": SWEEP,
            "config": {"sweep": {"name": SWEEP}},
            "plan_key": plan_key([spec]),
            **code.to_dict(),
        },
    }
    return [header, {"spec": spec.to_dict(), "result": rf.result(spec).to_dict()}]


def run_cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=out, width=300, soft_wrap=True)
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = cli.main(list(args), console)
    return rc, out.getvalue() + err.getvalue()


def test_csv_cell_prefixes_formulas_only():
    assert csv_cell(IMPL) == "'" + IMPL
    for text in ("+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(text) == "'" + text
    for value in ("-1.5", "+3.2%", "1e-3", -2.0, 3, None, "rmsnorm"):
        assert csv_cell(value) == value


def test_markdown_text_is_escaped():
    assert md("<b>x</b>|[a](b)") == "&lt;b&gt;x&lt;/b&gt;\\|\\[a\\](b)"


def test_hostile_names_import_list_report_and_export(store_url, tmp_path):
    folder = tmp_path / "[" / "]dir[bold]"  # the path holds "[/]"
    folder.mkdir(parents=True)
    path = rf.write(folder / "r.jsonl", hostile_lines())
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 0, out + err
    assert KERNEL in out and str(path) in out  # shown as written, not read as markup

    rc, out = run_cli("runs", "--url", store_url)
    assert rc == 0, out
    assert SWEEP in out

    md_path = tmp_path / "run.md"
    rc, out = run_cli("report", "--url", store_url, "--markdown", str(md_path))
    assert rc == 0, out
    assert KERNEL in out and IMPL in out
    page = md_path.read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    table = [line for line in page.splitlines() if "k\\[bold red\\]" in line]
    assert len(table) == 2  # one row per implementation
    header = next(line for line in page.splitlines() if line.startswith("| job | kernel"))
    for line in table:  # every row keeps the table's column count: no raw `|` from the names
        assert line.replace("\\|", "").count("|") == header.count("|")

    out_csv = tmp_path / "m.csv"
    rc, out = run_cli("export", "--format", "csv", "--url", store_url, "--out", str(out_csv))
    assert rc == 0, out
    rows = list(csv.DictReader(out_csv.open()))
    impls = {r["impl"] for r in rows}
    assert "'" + IMPL in impls and IMPL not in impls
    assert all(not r["kernel"].startswith(("=", "+", "-", "@")) for r in rows)


def test_export_jsonl_writes_no_bare_infinity(store_url, tmp_path):
    lines = rf.lines("c" * 40, n=1)
    lines[1]["result"]["measurements"][0]["value"] = float("inf")
    path = rf.write(tmp_path / "r.jsonl", lines)
    rc, out, err = rf.run_import(str(path), "--url", store_url)
    assert rc == 0, out + err
    out_file = tmp_path / "m.jsonl"
    rc, out = run_cli("export", "--format", "jsonl", "--url", store_url, "--out", str(out_file))
    assert rc == 0, out
    text = out_file.read_text()
    assert "Infinity" not in text and "NaN" not in text
    values = [json.loads(line)["value"] for line in text.splitlines()]  # strict JSON parses it
    assert None in values


def test_dashboard_csv_and_links_treat_names_as_data():
    from dashboard.view import Table, markdown_link, to_csv

    table = Table("t", "t", ["impl", "value"], [{"impl": IMPL, "value": -1.5}, {"impl": "@x", "value": "-2"}])
    rows = list(csv.reader(io.StringIO(to_csv(table))))
    assert rows[1] == ["'" + IMPL, "-1.5"] and rows[2] == ["'@x", "-2"]
    link = markdown_link("a](javascript:alert(1))", "javascript:alert(1)")
    assert link.startswith("[a\\]\\(javascript") and "](javascript%3Aalert%281%29)" in link


def test_the_runs_page_cuts_a_huge_error(store_url, tmp_path):
    from dashboard.app import page_children
    from dashboard.view import MAX_CELL_CHARS
    from orchestrator.store.query import access

    specs = rf.specs("9" * 40, 1)
    huge = "E" * (4 * 2**20)
    lines = rf.lines("9" * 40, n=1, rows=[(specs[0], rf.result(specs[0], status="error", error=huge))])
    path = rf.write(tmp_path / "r.jsonl", lines)
    assert rf.run_import(str(path), "--url", store_url)[0] == 0
    engine = access.open_read_only(store_url)
    try:
        shown = page_children(engine, store_url, "/runs", "")
    finally:
        engine.dispose()

    def longest(node) -> int:
        if isinstance(node, str):
            return len(node)
        if isinstance(node, dict):
            return max((longest(v) for v in node.values()), default=0)
        if isinstance(node, (list, tuple)):
            return max((longest(v) for v in node), default=0)
        props = getattr(node, "to_plotly_json", None)
        return longest(props()) if props else 0

    size = longest(shown)
    assert MAX_CELL_CHARS < size < MAX_CELL_CHARS + 200  # the error is there, cut
