"""What the user sees at the end of a run: the summary table (rich), and the same as Markdown for docs/perf/."""
from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.table import Table

COLUMNS = ("kernel", "shape", "dtype", "impl", "median µs", "IQR µs", "graph µs", "kernel µs", "GB/s", "% ceiling",
           "% ceiling (kernel)", "vs eager", "vs compile", "correct", "status")


def _fmt(v, spec: str = ".1f", suffix: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:{spec}}{suffix}"
    return str(v)


def _cells(r: dict) -> list[str]:
    shape = "x".join(str(s) for s in r["shape"]) if isinstance(r.get("shape"), list) else str(r.get("shape"))
    correct = {True: "yes", False: "NO", None: "–"}[r.get("correct")]
    vs_compile = _fmt(r.get("speedup_vs_compile"), ".2f", "x")
    if r.get("compile_baseline") and r.get("speedup_vs_compile") is not None:
        vs_compile += f" ({r['compile_baseline']})"
    return [r["kernel"], shape, r["dtype"], r["impl"], _fmt(r.get("median_us"), ".2f"), _fmt(r.get("iqr_us"), ".2f"),
            _fmt(r.get("graph_time_us"), ".2f"), _fmt(r.get("kernel_time_us"), ".2f"), _fmt(r.get("gbs"), ".0f"),
            _fmt(r.get("pct_of_ceiling"), ".0f", "%"), _fmt(r.get("kernel_pct_of_ceiling"), ".0f", "%"),
            _fmt(r.get("speedup_vs_eager"), ".2f", "x"), vs_compile, correct, r.get("status") or "–"]


def shown_rows(rows: Iterable[dict]) -> list[dict]:
    """Micro rows (timings, with their correctness verdict); a correctness row only where nothing was timed."""
    rows = list(rows)
    timed = {(r["kernel"], str(r["shape"]), r["dtype"], r["impl"], r.get("hardware_key")) for r in rows
             if r.get("kind") == "micro"}
    return [r for r in rows if r.get("kind") == "micro"
            or (r["kernel"], str(r["shape"]), r["dtype"], r["impl"], r.get("hardware_key")) not in timed]


def summary_table(rows: Iterable[dict], title: str) -> Table:
    t = Table(title=title, show_lines=False)
    for c in COLUMNS:
        t.add_column(c, justify="right" if c not in ("kernel", "impl", "dtype", "shape", "status") else "left")
    for r in shown_rows(rows):
        t.add_row(*_cells(r))
    return t


def markdown(rows: Iterable[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in shown_rows(rows):
        lines.append("| " + " | ".join(_cells(r)) + " |")
    return "\n".join(lines) + "\n"


E2E_COLUMNS = ("model", "frames x H x W", "dtype", "mode", "ms/step", "vs eager", "device busy ms", "SM MHz",
               "warm-up s", "peak GB", "max abs vs eager", "cos sim", "status")


def e2e_table(rows: Iterable[dict], title: str) -> Table:
    t = Table(title=title)
    for c in E2E_COLUMNS:
        t.add_column(c, justify="left" if c in ("model", "mode", "dtype", "status", "frames x H x W") else "right")
    for r in rows:
        t.add_row(r["model"] or "?", "x".join(str(s) for s in r["shape"]), r["dtype"], r["mode"],
                  _fmt(r.get("ms_per_step"), ".1f"), _fmt(r.get("speedup_vs_eager"), ".2f", "x"),
                  _fmt(r.get("gpu_busy_ms_per_step"), ".1f"), _fmt(r.get("sm_clock_mhz"), ".0f"),
                  _fmt(r.get("warmup_s"), ".1f"), _fmt(r.get("peak_mem_gb"), ".2f"),
                  _fmt(r.get("max_abs_vs_eager"), ".3g"), _fmt(r.get("cos_sim_vs_eager"), ".6f"),
                  ("not run" if r.get("ms_per_step") is None and r.get("status") == "ok" else r.get("status")) or "–")
    return t


def print_summary(console: Console, rows: list[dict], title: str, e2e_rows: list[dict] | None = None,
                  isa_rows: list[dict] | None = None) -> None:
    if rows:
        console.print(summary_table(rows, title))
    if e2e_rows:
        console.print(e2e_table(e2e_rows, f"{title} · end to end"))
    if isa_rows:
        console.print(isa_table(isa_rows, f"{title} · compiled for target architectures (no GPU ran)"))
    if not rows and not e2e_rows and not isa_rows:
        console.print(f"{title}: no measurements in this run")


ISA_COLUMNS = ("kernel", "shape", "dtype", "arch", "registers", "spills", "scratch B", "LDS B", "occupancy",
               "load bits", "store bits", "transc.", "cvt", "code B", "est. µs", "est. µs (copy ceiling)", "status")


def _isa_cells(r: dict) -> list[str]:
    amd = r.get("vgprs") is not None
    regs = (f"{r['vgprs']:.0f} v / {r.get('sgprs') or 0:.0f} s" + (f" / {r['agprs']:.0f} a" if r.get("agprs") else "")
            if amd else _fmt(r.get("registers"), ".0f"))
    spills = (_fmt((r.get("vgpr_spills") or 0) + (r.get("sgpr_spills") or 0), ".0f") if amd else
              _fmt(r.get("spill_store_bytes"), ".0f", " B") if r.get("spill_store_bytes") is not None else "–")

    def bits(direction: str) -> str:
        counts = [f"{r[f'{direction}s_b{b}']:.0f}×{b}" for b in (128, 64, 32, 16)
                  if r.get(f"{direction}s_b{b}")]
        return " ".join(counts) or "–"

    return [r["kernel"], "x".join(str(s) for s in r["shape"]), r["dtype"], r["arch"], regs, spills,
            _fmt(r.get("scratch_bytes"), ".0f"), _fmt(r.get("lds_bytes"), ".0f"),
            _fmt(r.get("occupancy_waves"), ".0f"), bits("load"), bits("store"), _fmt(r.get("transcendentals"), ".0f"),
            _fmt(r.get("conversions"), ".0f"), _fmt(r.get("code_bytes"), ".0f"),
            _fmt(r.get("est_min_time_us"), ".2f"), _fmt(r.get("est_min_time_copy_us"), ".2f"), r.get("status") or "–"]


def isa_table(rows: Iterable[dict], title: str) -> Table:
    t = Table(title=title)
    for c in ISA_COLUMNS:
        t.add_column(c, justify="left" if c in ("kernel", "shape", "dtype", "arch", "status", "load bits",
                                                "store bits", "registers") else "right")
    for r in rows:
        t.add_row(*_isa_cells(r))
    return t


def isa_markdown(rows: Iterable[dict]) -> str:
    lines = ["| " + " | ".join(ISA_COLUMNS) + " |", "|" + "---|" * len(ISA_COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(_isa_cells(r)) + " |")
    return "\n".join(lines) + "\n"


def e2e_markdown(rows: Iterable[dict]) -> str:
    lines = ["| " + " | ".join(E2E_COLUMNS) + " |", "|" + "---|" * len(E2E_COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join([
            r["model"] or "?", "x".join(str(s) for s in r["shape"]), r["dtype"], r["mode"],
            _fmt(r.get("ms_per_step"), ".1f"), _fmt(r.get("speedup_vs_eager"), ".2f", "x"),
            _fmt(r.get("gpu_busy_ms_per_step"), ".1f"), _fmt(r.get("sm_clock_mhz"), ".0f"),
            _fmt(r.get("warmup_s"), ".1f"), _fmt(r.get("peak_mem_gb"), ".2f"), _fmt(r.get("max_abs_vs_eager"), ".3g"),
            _fmt(r.get("cos_sim_vs_eager"), ".6f"), r.get("status") or "–"]) + " |")
    return "\n".join(lines) + "\n"


def run_markdown(info: dict, rows: list[dict], e2e_rows: list[dict], devices: list[dict],
                 isa_rows: list[dict] | None = None) -> str:
    """A run as a docs/perf page: when, where, which code and config, then the tables."""
    isa_rows = isa_rows or []
    used = {r.get("hardware_key") for r in [*rows, *e2e_rows, *isa_rows]}
    devs = [d for d in devices if d["hardware_key"] in used]
    out = [f"# Run {info['id']} · {info['sweep']}", "",
           f"- **Date:** {info.get('started_at')} (finished {info.get('finished_at')}), status {info.get('status')}",
           f"- **Commit:** `{info.get('commit')}` (kernels hash `{info.get('code_hash')}`); source: "
           f"{info.get('source')}"]
    for d in devs:
        bw = d.get("copy_bandwidth_gbs")
        out.append(f"- **Device:** {d['name']} ({d['arch']}, {d.get('compute_units')} compute units), driver "
                   f"{d.get('driver') or '–'}, {d.get('runtime') or '–'}, torch {d.get('torch')}, triton "
                   f"{d.get('triton')}; measured copy ceiling {f'{bw:.0f} GB/s' if bw else 'not measured'}")
    out.append(f"- **Jobs:** {info.get('job_counts')}")
    out.append("")
    if rows:
        out += [markdown(rows), ""]
    if e2e_rows:
        out += [e2e_markdown(e2e_rows), ""]
    if isa_rows:
        out += [isa_markdown(isa_rows), ""]
    return "\n".join(out)


def show_run(url: str | None, run_id: int | None, markdown_path: str | None, console: Console) -> int:
    from orchestrator.store import queries
    from orchestrator.store.session import resolve_url

    url = resolve_url(url)
    if run_id is None:
        runs = queries.list_runs(url, limit=1)
        if not runs:
            raise ValueError(f"the store {url} holds no run yet")
        run_id = runs[0]["id"]
    info = queries.run_info(url, run_id)
    if info is None:
        raise ValueError(f"no run {run_id} in {url}")
    rows, e2e_rows = queries.run_summary(url, run_id), queries.e2e_results(url, run_id)
    isa_rows = queries.isa_results(url, run_id)
    print_summary(console, rows, f"run {run_id} · {info['sweep']}", e2e_rows, isa_rows)
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(run_markdown(info, rows, e2e_rows, queries.devices(url), isa_rows))
        console.print(f"wrote {markdown_path}")
    return 0
