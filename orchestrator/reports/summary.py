"""What the user sees at the end of a run: the summary table (rich), and the same as Markdown for docs/perf/."""

from __future__ import annotations

import html
import re
import textwrap
from typing import Iterable

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from orchestrator.reports.e2e import (
    RECONCILE_NOTE,
    anchor_markdown,
    anchor_table,
    e2e_notes,
    reconciliation_markdown,
    reconciliation_table,
)
from orchestrator.store.query.run_queries import interpreted
from workers.errors import UserError
from workers.kinds.correctness import NAME as CORRECTNESS
from workers.kinds.micro import NAME as MICRO

COLUMNS = (
    "job",
    "kernel",
    "shape",
    "dtype",
    "impl",
    "median µs",
    "IQR µs",
    "graph µs",
    "kernel µs",
    "GB/s",
    "% ceiling",
    "% ceiling (kernel)",
    "vs eager",
    "vs compile",
    "correct",
    "status",
)
# The default table: what a reader needs to compare implementations, within a 120-column terminal (--wide: all)
COMPACT_COLUMNS = (
    "kernel",
    "shape",
    "dtype",
    "impl",
    "median µs",
    "GB/s",
    "vs eager",
    "vs compile",
    "correct",
    "status",
)
LEFT = ("job", "kernel", "impl", "dtype", "shape", "status")
# Implementations that are Triton kernels: on a CPU they run through Triton's interpreter
# Columns derived from a time: meaningless for an interpreter's time, so shown as "–" (the store keeps them)
_DERIVED = ("GB/s", "% ceiling", "% ceiling (kernel)", "vs eager", "vs compile")
INTERPRETER_NOTE = (
    "interpreted: Triton's interpreter ran these on the CPU; the times say nothing of a GPU, so no GB/s or speed-ups"
)


def _fmt(v, spec: str = ".1f", suffix: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:{spec}}{suffix}"
    return str(v)


def not_run_reason(r: dict, unavailable: dict | None) -> str | None:
    return ((unavailable or {}).get(r.get("job_id")) or {}).get(r.get("impl"))


def _cells(r: dict, unavailable: dict | None = None, wide: bool = True, job: bool = False) -> list[str]:
    shape = "x".join(str(s) for s in r["shape"]) if isinstance(r.get("shape"), list) else str(r.get("shape"))
    correct = {True: "yes", False: "NO", None: "–"}[r.get("correct")]
    vs_compile = _fmt(r.get("speedup_vs_compile"), ".2f", "x")
    if wide and r.get("compile_baseline") and r.get("speedup_vs_compile") is not None:
        vs_compile += f" ({r['compile_baseline']})"
    status = r.get("status") or "–"
    if not_run_reason(r, unavailable):
        status = "not run"
    elif interpreted(r) and r.get("median_us") is not None and status == "ok":
        status = "interpreted"
    cells = dict(
        zip(
            COLUMNS,
            [
                r.get("kind") or "–",
                r["kernel"],
                shape,
                r["dtype"],
                r["impl"],
                _fmt(r.get("median_us"), ".2f"),
                _fmt(r.get("iqr_us"), ".2f"),
                _fmt(r.get("graph_time_us"), ".2f"),
                _fmt(r.get("kernel_time_us"), ".2f"),
                _fmt(r.get("gbs"), ".0f"),
                _fmt(r.get("pct_of_ceiling"), ".0f", "%"),
                _fmt(r.get("kernel_pct_of_ceiling"), ".0f", "%"),
                _fmt(r.get("speedup_vs_eager"), ".2f", "x"),
                vs_compile,
                correct,
                status,
            ],
        )
    )
    if interpreted(r):
        cells.update({c: "–" for c in _DERIVED})
    return [cells[c] for c in _columns(wide, job)]


def _columns(wide: bool, job: bool) -> tuple[str, ...]:
    """The table's columns: every one (wide), else the compact set, with the job kind where kinds are mixed."""
    return COLUMNS if wide else (("job",) if job else ()) + COMPACT_COLUMNS


def mixed_kinds(rows: list[dict]) -> bool:
    return len({r.get("kind") for r in rows}) > 1


def shown_rows(rows: Iterable[dict]) -> list[dict]:
    """One row per (kernel, shape, dtype, implementation, device): the micro job's (timings, with the correctness
    verdict of both jobs), else the correctness job's where no micro job of it has run (an interrupted run, a
    correctness-only sweep)."""
    rows = list(rows)

    def key(r: dict) -> tuple:
        return (r["kernel"], str(r["shape"]), r["dtype"], r["impl"])

    ran = [r for r in rows if r.get("kind") == MICRO and r.get("attempt") is not None]
    timed = {(*key(r), r.get("hardware_key")) for r in ran}
    checked = {key(r) for r in rows if r.get("kind") == CORRECTNESS and r.get("attempt") is not None}
    return [
        r
        for r in rows
        if (r.get("kind") == MICRO and (r.get("attempt") is not None or key(r) not in checked))
        or (r.get("kind") != MICRO and (*key(r), r.get("hardware_key")) not in timed)
    ]


def incorrect_lines(rows: Iterable[dict]) -> list[str]:
    """One line per job in which an implementation failed correctness: which, and the job's stored error (the
    failing case, metric and by how much)."""
    out: dict[tuple, str] = {}
    for r in rows:
        if r.get("correct") is not False:
            continue
        shape = "x".join(str(s) for s in r["shape"]) if isinstance(r.get("shape"), list) else str(r.get("shape"))
        where = (r.get("kind") or "job", r["kernel"], shape, r["dtype"])
        impls, _ = out.get(where, ("", ""))
        names = ", ".join(dict.fromkeys([*filter(None, impls.split(", ")), r["impl"]]))
        out[where] = (names, " ".join(str(r.get("error") or "its check failed; no detail stored").split()))
    return [
        f"incorrect: {names} in {kind} {kernel} {shape} {dtype}: {error}"
        for (kind, kernel, shape, dtype), (names, error) in out.items()
    ]


def notes(rows: Iterable[dict], unavailable: dict | None = None) -> list[str]:
    """The lines under the table: why an implementation was not run, and what an interpreted time is."""
    why: dict[str, set[str]] = {}
    interp = False
    for r in shown_rows(rows):
        reason = not_run_reason(r, unavailable)
        if reason:
            why.setdefault(r["impl"], set()).add(reason)
        elif interpreted(r) and r.get("median_us") is not None:
            interp = True
    out = [f"not run: {impl}: {'; '.join(sorted(reasons))}" for impl, reasons in sorted(why.items())]
    return incorrect_lines(rows) + out + ([INTERPRETER_NOTE] if interp else [])


_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]<>|])")  # not `_`: names have it, and mid-word it emphasises nothing


def plain(values: Iterable) -> list[Text]:
    """Table cells shown as they are: names from the store (a kernel called ``[/]k``) are never read as markup."""
    return [Text(str(v)) for v in values]


def summary_table(rows: Iterable[dict], title: str, unavailable: dict | None = None, wide: bool = False) -> Table:
    title = Text(title)
    t = Table(title=title, show_lines=False) if wide else Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0))
    shown = shown_rows(rows)
    job = mixed_kinds(shown)
    for c in _columns(wide, job):
        t.add_column(c, justify="left" if c in LEFT else "right", no_wrap=True)
    for r in shown:
        t.add_row(*plain(_cells(r, unavailable, wide, job)))
    return t


def md(value: object) -> str:
    """Text from the store as Markdown shows it literally: HTML escaped, ``|`` cannot end a table cell, Markdown
    punctuation (links, emphasis, code) escaped, one line."""
    text = html.escape(" ".join(str(value).split()), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _md_row(cells: Iterable) -> str:
    return "| " + " | ".join(md(c) for c in cells) + " |"


def markdown(rows: Iterable[dict], unavailable: dict | None = None) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in shown_rows(rows):
        lines.append(_md_row(_cells(r, unavailable)))
    below = notes(rows, unavailable)
    if below:
        lines += [""] + [f"- {md(n)}" for n in below]
    return "\n".join(lines) + "\n"


E2E_COLUMNS = (
    "model",
    "shape",
    "dtype",
    "mode",
    "ms/step",
    "vs eager",
    "host ms",
    "device busy ms",
    "floor ms",
    "rest ms",
    "over floor ms",
    "SM MHz",
    "warm-up s",
    "peak GB",
    "max abs vs eager",
    "cos sim",
    "status",
)


def _e2e_cells(r: dict) -> list[str]:
    """An e2e row's cells before its status, as the terminal table and the Markdown page show them."""
    return [
        r["model"] or "?",
        "x".join(str(s) for s in r["shape"]),
        r["dtype"],
        r["mode"],
        _fmt(r.get("ms_per_step"), ".1f"),
        _fmt(r.get("speedup_vs_eager"), ".2f", "x"),
        _fmt(r.get("host_ms_per_step"), ".1f"),
        _fmt(r.get("gpu_busy_ms_per_step"), ".1f"),
        _fmt(r.get("floor_ms"), ".2f"),
        _fmt(r.get("rest_ms"), ".2f"),
        _fmt(r.get("over_floor_ms"), ".2f"),
        _fmt(r.get("sm_clock_mhz"), ".0f"),
        _fmt(r.get("warmup_s"), ".1f"),
        _fmt(r.get("peak_mem_gb"), ".2f"),
        _fmt(r.get("max_abs_vs_eager"), ".3g"),
        _fmt(r.get("cos_sim_vs_eager"), ".6f"),
    ]


def e2e_status(r: dict) -> str:
    """A mode's status: "not run" (skipped here, why under the table), "error" (it failed in that mode), else
    the job's."""
    if r.get("not_run") or (r.get("ms_per_step") is None and r.get("status") == "ok"):
        return "not run"
    if r.get("mode_error"):
        return "error"
    return r.get("status") or "–"


def e2e_table(rows: Iterable[dict], title: str) -> Table:
    t = Table(title=Text(title))
    for c in E2E_COLUMNS:
        t.add_column(c, justify="left" if c in ("model", "mode", "dtype", "status", "shape") else "right")
    for r in rows:
        t.add_row(*plain([*_e2e_cells(r), e2e_status(r)]))
    return t


def print_summary(
    console: Console,
    rows: list[dict],
    title: str,
    e2e_rows: list[dict] | None = None,
    isa_rows: list[dict] | None = None,
    *,
    unavailable: dict | None = None,
    wide: bool = False,
    tune_rows: list[dict] | None = None,
    reconciliation: list[dict] | None = None,
    case_rows: list[dict] | None = None,
) -> None:
    if rows:
        console.print(summary_table(rows, title, unavailable, wide))
        for line in notes(rows, unavailable):
            console.print(line, highlight=False, markup=False)
    if e2e_rows:
        console.print(e2e_table(e2e_rows, f"{title} · end to end"))
        anchors = anchor_table(e2e_rows, f"{title} · end to end against torch.compile, kind against kind")
        if anchors is not None:
            console.print(anchors)
        for line in e2e_notes(e2e_rows):
            console.print(line, highlight=False, markup=False)
        recon = reconciliation_table(reconciliation or [], f"{title} · end to end: the kernels' micro wins, predicted")
        if recon is not None:
            console.print(recon)
            console.print(RECONCILE_NOTE, highlight=False, markup=False)
    if isa_rows:
        console.print(isa_table(isa_rows, f"{title} · compiled for target architectures (no GPU ran)"))
    if case_rows:
        console.print(case_table(case_rows, f"{title} · correctness input cases"))
        for line in textwrap.wrap(case_names(case_rows), 118):
            console.print(line, highlight=False, markup=False)
    if tune_rows:
        from orchestrator.reports import tune_table

        console.print(tune_table.run_table(tune_rows, f"{title} · launch candidates (tune)"))
        for line in tune_table.run_notes(tune_rows):
            console.print(line, highlight=False, markup=False)
    if not rows and not e2e_rows and not isa_rows and not tune_rows and not case_rows:
        console.print(f"{title}: no measurements in this run", markup=False, highlight=False)


def case_cells(r: dict) -> list[str]:
    """kernel, shape, dtype, how many cases were checked, those that do not apply, and what failed:
    ``impl: case (note)``."""
    failed = "; ".join(f"{impl}: {case} ({note})" for impl, cases in r["failed"].items() for case, note in cases)
    checked = str(len(r["cases"])) if r["cases"] else "none recorded"
    return [
        r["kernel"],
        "x".join(map(str, r["shape"])),
        r["dtype"],
        checked,
        ", ".join(r["skipped"]) or "–",
        failed or "none",
    ]


CASE_COLUMNS = ("kernel", "shape", "dtype", "cases", "n/a", "failed")


def case_names(rows: Iterable[dict]) -> str:
    """The line under the cases table: which cases were checked, in order."""
    names = list(dict.fromkeys(c for r in rows for c in [*r["cases"], *r["skipped"]]))
    return f"input cases: {', '.join(names)} (workers/jobs/input_cases.py)" if names else ""


def case_table(rows: Iterable[dict], title: str) -> Table:
    """Each correctness job's input cases (workers/jobs/input_cases.py) and, per implementation, the cases it failed."""
    t = Table(title=Text(title), box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0))
    for c in CASE_COLUMNS:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*plain(case_cells(r)))
    return t


def case_markdown(rows: Iterable[dict]) -> str:
    rows = list(rows)
    lines = [_md_row(CASE_COLUMNS), _md_row(["---"] * len(CASE_COLUMNS)), *(_md_row(case_cells(r)) for r in rows)]
    return "\n".join([*lines, "", md(case_names(rows))])


ISA_COLUMNS = (
    "kernel",
    "shape",
    "dtype",
    "arch",
    "registers",
    "spills",
    "scratch B",
    "LDS B",
    "occupancy",
    "load bits",
    "store bits",
    "transc.",
    "cvt",
    "code B",
    "est. µs",
    "est. µs (copy ceiling)",
    "status",
)


def _isa_cells(r: dict) -> list[str]:
    amd = r.get("vgprs") is not None
    regs = (
        f"{r['vgprs']:.0f} v / {r.get('sgprs') or 0:.0f} s" + (f" / {r['agprs']:.0f} a" if r.get("agprs") else "")
        if amd
        else _fmt(r.get("registers"), ".0f")
    )
    spills = (
        _fmt((r.get("vgpr_spills") or 0) + (r.get("sgpr_spills") or 0), ".0f")
        if amd
        else _fmt(r.get("spill_store_bytes"), ".0f", " B")
        if r.get("spill_store_bytes") is not None
        else "–"
    )

    def bits(direction: str) -> str:
        counts = [f"{r[f'{direction}s_b{b}']:.0f}×{b}" for b in (128, 64, 32, 16) if r.get(f"{direction}s_b{b}")]
        return " ".join(counts) or "–"

    return [
        r["kernel"],
        "x".join(str(s) for s in r["shape"]),
        r["dtype"],
        r["arch"],
        regs,
        spills,
        _fmt(r.get("scratch_bytes"), ".0f"),
        _fmt(r.get("lds_bytes"), ".0f"),
        _fmt(r.get("occupancy_waves"), ".0f"),
        bits("load"),
        bits("store"),
        _fmt(r.get("transcendentals"), ".0f"),
        _fmt(r.get("conversions"), ".0f"),
        _fmt(r.get("code_bytes"), ".0f"),
        _fmt(r.get("est_min_time_us"), ".2f"),
        _fmt(r.get("est_min_time_copy_us"), ".2f"),
        r.get("status") or "–",
    ]


def isa_table(rows: Iterable[dict], title: str) -> Table:
    t = Table(title=Text(title))
    for c in ISA_COLUMNS:
        t.add_column(
            c,
            justify="left"
            if c in ("kernel", "shape", "dtype", "arch", "status", "load bits", "store bits", "registers")
            else "right",
        )
    for r in rows:
        t.add_row(*plain(_isa_cells(r)))
    return t


def isa_markdown(rows: Iterable[dict]) -> str:
    lines = ["| " + " | ".join(ISA_COLUMNS) + " |", "|" + "---|" * len(ISA_COLUMNS)]
    for r in rows:
        lines.append(_md_row(_isa_cells(r)))
    return "\n".join(lines) + "\n"


def e2e_markdown(rows: Iterable[dict]) -> str:
    rows = list(rows)
    lines = ["| " + " | ".join(E2E_COLUMNS) + " |", "|" + "---|" * len(E2E_COLUMNS)]
    for r in rows:
        lines.append(_md_row([*_e2e_cells(r), e2e_status(r)]))
    anchors = anchor_markdown(rows)
    if anchors:
        lines += ["", anchors.rstrip("\n")]
    below = e2e_notes(rows)
    if below:
        lines += [""] + [f"- {n}" for n in below]
    return "\n".join(lines) + "\n"


def print_run_summary(console: Console, url: str, run_id: int, title: str, wide: bool = False) -> None:
    """A stored run's summary table(s), with why implementations were not run and what interpreted times are."""
    from orchestrator.store.query import case_queries, result_queries, run_queries, tune_queries

    e2e_rows = result_queries.e2e_results(url, run_id)
    print_summary(
        console,
        run_queries.run_summary(url, run_id),
        title,
        e2e_rows,
        result_queries.isa_results(url, run_id),
        unavailable=run_queries.run_measured(url, run_id)["unavailable"],
        wide=wide,
        tune_rows=tune_queries.tune_results(url, run_id),
        reconciliation=result_queries.e2e_reconciliation(url, e2e_rows),
        case_rows=case_queries.case_results(url, run_id),
    )


def counts_in_words(counts: dict | None) -> str:
    """Job counts as words: {'ok': 3, 'done_before': 2} -> '3 ok, 2 done before'; also reads a run's stored
    counts ({'planned': 5, 'status_ok': 5, ...}: the jobs' statuses)."""
    counts = dict(counts or {})
    statuses = {k.removeprefix("status_"): v for k, v in counts.items() if k.startswith("status_")}
    if statuses or "planned" in counts:
        planned = counts.get("planned", sum(statuses.values()))
        parts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(statuses.items()) if v)
        return f"{planned} job{'s' if planned != 1 else ''}" + (f": {parts}" if parts else "")
    return ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(counts.items()) if v) or "no jobs"


def _when(t) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC") if hasattr(t, "strftime") else str(t)


def run_markdown(
    info: dict,
    rows: list[dict],
    e2e_rows: list[dict],
    devices: list[dict],
    measured: dict | None = None,
    isa_rows: list[dict] | None = None,
    reconciliation: list[dict] | None = None,
    case_rows: list[dict] | None = None,
) -> str:
    """A run as a docs/perf page: when it was measured, where, which code and config, then the tables."""
    isa_rows = isa_rows or []
    used = {r.get("hardware_key") for r in [*rows, *e2e_rows, *isa_rows]}
    devs = [d for d in devices if d["hardware_key"] in used]
    measured = measured or {}
    first, last = measured.get("measured_from"), measured.get("measured_to")
    when = (
        "not measured"
        if first is None
        else (_when(first) if _when(first) == _when(last) else f"{_when(first)} to {_when(last)}")
    )
    out = [
        f"# Run {info['id']} · {md(info['sweep'])}",
        "",
        f"- **Measured:** {when} (run {info['id']} started {_when(info.get('started_at'))}, status "
        f"{md(info.get('status'))})",
        f"- **Commit:** {md(info.get('commit'))} (kernels hash {md(info.get('code_hash'))}); source: "
        f"{md(info.get('source'))}",
    ]
    for d in devs:
        bw = d.get("copy_bandwidth_gbs")
        software = ", ".join(
            x
            for x in (
                f"driver {d['driver']}" if d.get("driver") else None,
                d.get("runtime") or None,
                f"torch {d['torch']}" if d.get("torch") else None,
                f"triton {d['triton']}" if d.get("triton") else None,
            )
            if x
        )
        units = f", {d['compute_units']} compute units" if d.get("compute_units") else ""
        out.append(
            f"- **Device:** {md(d['name'])} ({md(d['arch'])}{units})" + (f", {md(software)}" if software else "") + "; "
            f"measured copy ceiling {f'{bw:.0f} GB/s' if bw else 'not measured'}"
        )
    out.append(f"- **Jobs:** {counts_in_words(info.get('job_counts'))}")
    out.append("")
    if rows:
        out += [markdown(rows, measured.get("unavailable")), ""]
    if e2e_rows:
        out += [e2e_markdown(e2e_rows), ""]
        recon = reconciliation_markdown(reconciliation or [])
        if recon:
            out += [recon, ""]
    if isa_rows:
        out += [isa_markdown(isa_rows), ""]
    if case_rows:
        out += ["Correctness input cases:", "", case_markdown(case_rows), ""]
    return "\n".join(out)


def show_run(
    url: str | None, run_id: int | None, markdown_path: str | None, console: Console, wide: bool = False
) -> int:
    from orchestrator.store.query import case_queries, result_queries, run_queries, tune_queries
    from orchestrator.store.session import display_url, resolve_url

    url = resolve_url(url)
    if run_id is None:
        runs = run_queries.list_runs(url, limit=1)
        if not runs:
            raise UserError(f"the store {display_url(url)} holds no run yet")
        run_id = runs[0]["id"]
    info = run_queries.run_info(url, run_id)
    if info is None:
        raise UserError(f"no run {run_id} in {display_url(url)}; list the runs with `python -m orchestrator runs`")
    rows, e2e_rows = run_queries.run_summary(url, run_id), result_queries.e2e_results(url, run_id)
    isa_rows = result_queries.isa_results(url, run_id)
    case_rows = case_queries.case_results(url, run_id)
    measured = run_queries.run_measured(url, run_id)
    recon = result_queries.e2e_reconciliation(url, e2e_rows)
    print_summary(
        console,
        rows,
        f"run {run_id} · {info['sweep']}",
        e2e_rows,
        isa_rows,
        unavailable=measured["unavailable"],
        wide=wide,
        tune_rows=tune_queries.tune_results(url, run_id),
        reconciliation=recon,
        case_rows=case_rows,
    )
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(run_markdown(info, rows, e2e_rows, run_queries.devices(url), measured, isa_rows, recon, case_rows))
        console.print(f"wrote {markdown_path}", markup=False, highlight=False)
    return 0
