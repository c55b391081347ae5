"""The compare report as Markdown for a pull-request comment: the verdict line, the summary per kernel × GPU type,
the confirmed changes and correctness changes, the plots, then the full table collapsed in ``<details>``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.reports.compare_svg import write_plots
from orchestrator.store.query.compare_queries import failing, is_confirmed_regression, verdict_text


def ratio_text(r: float | None) -> str:
    return "–" if r is None else f"{r:.3f}×"


def _num(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.1f}"


def _shape(row: Mapping[str, Any]) -> str:
    s = row["shape"]
    return "x".join(map(str, s)) if isinstance(s, list) else str(s)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _runs(rows: Sequence[Mapping[str, Any]]) -> str:
    commits = sorted({(r.get("commit") or "unknown")[:10] for r in rows})
    marked = [f"run {r['id']}: {r['marked']}" for r in rows if r.get("marked")]
    return f"run(s) {', '.join(str(r['id']) for r in rows)} (commit {', '.join(commits)})" + (
        f" — **marked**: {'; '.join(marked)}" if marked else ""
    )


def _ci(row: Mapping[str, Any]) -> str:
    if row.get("ci_low") is None:
        return "–"
    return f"{row['ci_low']:.3f}–{row['ci_high']:.3f}" + (" (repeats)" if row.get("ci_basis") == "repeats" else "")


def series_cells(r: Mapping[str, Any]) -> list[str]:
    """One compared series as text cells: kernel, GPU, implementation, shape, dtype, baseline, current, ratio, its
    interval, verdict (the Markdown table's and the command's detail table's rows)."""
    return [
        r["kernel"],
        r["gpu_type"] or r["hardware_key"] or "–",
        r["impl"],
        _shape(r),
        r["dtype"],
        _num(r["baseline_median"]),
        _num(r["current_median"]),
        ratio_text(r["ratio"]),
        _ci(r),
        verdict_text(r),
    ]


def _table(head: Sequence[str], body: Sequence[Sequence[Any]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
        *("| " + " | ".join(_cell(c) for c in row) + " |" for row in body),
    ]


def _series_rows(rows: Sequence[Mapping[str, Any]], unit: str) -> tuple[list[str], list[list[Any]]]:
    head = [
        "kernel",
        "GPU",
        "impl",
        "shape",
        "dtype",
        f"baseline {unit}",
        f"current {unit}",
        "ratio",
        "95% CI",
        "verdict",
    ]
    body = [series_cells(r) for r in rows]
    return head, body


def render(report: Mapping[str, Any], plots: Sequence[tuple[str, str]] = ()) -> str:
    """The Markdown text; ``plots``: (title, path relative to the Markdown file)."""
    c = report["counts"]
    unit = report["unit"] or report["metric"]
    lower = "" if report["higher_is_better"] else " (below 1: faster)"
    verdict = (
        f"**{c['confirmed_regressions']} confirmed regression(s), {c['correctness_lost']} correctness loss(es)**"
        if failing(report)
        else "**Nothing compared: no series was measured on both sides.**"
        if not c["series"]
        else "**No confirmed regression, no correctness loss.**"
    )
    lines = [
        f"## kernelfleet: {report['metric']}, current against baseline",
        "",
        f"Baseline: {_runs(report['baseline'])}. Current: {_runs(report['current'])}.",
        "",
        f"{verdict} {c['series']} series compared; {c['confirmed_improvements']} confirmed improvement(s), "
        f"{c['unconfirmed']} unconfirmed, {c['kernel_changed']} with a changed autotuned kernel, "
        f"{c['new']} new, {c['vanished']} vanished.",
    ]
    if report.get("cpu_series"):
        lines += ["", f"{report['cpu_series']} series timed on a CPU left out (`--include-cpu` judges them)."]
    lines += [
        "",
        f"### Summary per kernel × GPU type (geometric mean of current / baseline{lower})",
        "",
        *_table(
            ["kernel", "GPU", "impl", "geomean", "range", "series", "regressions", "improvements", "correctness lost"],
            [
                [
                    s["kernel"],
                    s["gpu_type"],
                    s["impl"],
                    ratio_text(s["geomean_ratio"]),
                    f"{ratio_text(s['min_ratio'])}–{ratio_text(s['max_ratio'])}" if s["min_ratio"] else "–",
                    s["series"],
                    s["confirmed_regressions"],
                    s["confirmed_improvements"],
                    s["correctness_lost"],
                ]
                for s in report["summary"]
            ],
        ),
    ]
    changes = [
        r
        for r in report["series"]
        if r.get("verdict") in ("confirmed", "kernel_changed") or r.get("correctness") or r["state"] != "both"
    ]
    changes.sort(key=lambda r: (not is_confirmed_regression(r), r.get("correctness") != "lost", r["kernel"] or ""))
    lines += ["", "### Confirmed changes", ""]
    if changes:
        head, body = _series_rows(changes, unit)
        lines += _table(head + ["why"], [b + [r.get("reason") or ""] for b, r in zip(body, changes)])
    else:
        lines.append("None: no change beyond the regression rule's threshold and the between-run spread.")
    if plots:
        lines += ["", "### Plots (hollow: baseline, filled: current)", ""]
        lines += [f"![{title}]({path})" for title, path in plots]
    head, body = _series_rows(report["series"], unit)
    lines += [
        "",
        "<details><summary>Every series</summary>",
        "",
        *_table(head, body),
        "",
        "</details>",
        "",
        "Rule: a change is confirmed when it is at least the threshold, significant on the repeats "
        "(Mann–Whitney U, p < 0.01) and large against the between-run spread (docs/regressions.md); "
        "the 95% CI comes from the between-run spread when each side has two runs, else from the repeats alone.",
        "",
    ]
    return "\n".join(lines)


def write(report: Mapping[str, Any], path: Path, plots_dir: Path | None = None) -> list[Path]:
    """Write the Markdown to ``path`` and its SVG plots into ``plots_dir`` (default: ``<name>-plots`` beside it);
    returns the plot files."""
    path = Path(path)
    folder = Path(plots_dir) if plots_dir else path.with_name(path.stem + "-plots")
    written = write_plots(report["series"], report["unit"] or report["metric"], folder, "compare")
    rel = [(title, Path(os.path.relpath(p, path.parent or Path("."))).as_posix()) for title, p in written]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(report, rel), encoding="utf-8")
    return [p for _, p in written]
