"""A regression that explains itself: what changed between the two sides' captures of one series, in words.

Input: each side's facts (orchestrator.store.query.explain_queries.side_facts): the timing, the autotuner's pick,
the profile's per-kernel rows and the isa jobs' compiled launches.  Output: the lines that name what changed, most
telling first: the autotuner picked another kernel ("baseline changed its kernel"), kernels that appeared or went
away, launches per call, a kernel's device time, then each compiled launch's configuration and resources (num_warps,
grid, registers, spills, occupancy, load widths).  A side without a capture says so: it is never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KERNEL_TIME_CHANGE = 0.05  # a kernel's device time per call must move this much to be named

LAUNCH_WORDS = {
    "num_warps": "launch config num_warps",
    "grid": "launch grid",
    "registers": "registers per thread",
    "vgprs": "VGPRs",
    "spill_store_bytes": "spill stores (bytes)",
    "vgpr_spills": "VGPR spills",
    "scratch_bytes": "scratch bytes",
    "lds_bytes": "LDS / shared bytes",
    "occupancy_waves": "occupancy (waves/SIMD)",
    "load_min_bits": "narrowest load (bits)",
    "store_min_bits": "narrowest store (bits)",
}


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return "x".join(str(x) for x in v)
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _profile_lines(base: list[dict], cur: list[dict]) -> list[str]:
    lines = []
    b, c = {r["name"]: r for r in base}, {r["name"]: r for r in cur}
    for name in [n for n in c if n not in b]:
        lines.append(f"new kernel {name}: {c[name]['calls']:g} launch(es), {c[name]['total_ns'] / 1e3:.2f} µs a call")
    for name in [n for n in b if n not in c]:
        lines.append(f"kernel {name} no longer runs (was {b[name]['total_ns'] / 1e3:.2f} µs a call)")
    for name in [n for n in c if n in b]:
        was, now = b[name], c[name]
        if abs(now["calls"] - was["calls"]) > 1e-9:
            lines.append(f"kernel {name}: launches per call {was['calls']:g} → {now['calls']:g}")
        if was["total_ns"] > 0 and abs(now["total_ns"] / was["total_ns"] - 1) >= KERNEL_TIME_CHANGE:
            change = now["total_ns"] / was["total_ns"] - 1
            lines.append(
                f"kernel {name}: {was['total_ns'] / 1e3:.2f} → {now['total_ns'] / 1e3:.2f} µs a call ({change:+.0%})"
            )
    return lines


def _isa_lines(base: Mapping[str, list[dict]], cur: Mapping[str, list[dict]]) -> list[str]:
    lines = []
    for arch in sorted(set(base) & set(cur)):
        b, c = base[arch], cur[arch]
        if [x.get("kernel") for x in b] != [x.get("kernel") for x in c]:
            lines.append(f"{arch}: compiled kernels {len(b)} → {len(c)} ({', '.join(str(x.get('kernel')) for x in c)})")
            continue
        for was, now in zip(b, c):
            changed = [
                f"{LAUNCH_WORDS[k]} {_fmt(was.get(k))} → {_fmt(now.get(k))}"
                for k in LAUNCH_WORDS
                if was.get(k) != now.get(k) and (was.get(k) is not None or now.get(k) is not None)
            ]
            if changed:
                lines.append(f"{arch} {now.get('kernel')}: " + "; ".join(changed))
    return lines


def explain(base: Mapping[str, Any], cur: Mapping[str, Any]) -> dict[str, Any]:
    """``changes`` (lines naming what changed), ``missing`` (what a side lacks to say more) and the timing."""
    changes: list[str] = []
    if base.get("pick") and cur.get("pick") and base["pick"] != cur["pick"]:
        changes.append(f"baseline changed its kernel: the autotuner picked {cur['pick']} (was {base['pick']})")
    missing = []
    if base.get("profile") and cur.get("profile"):
        changes += _profile_lines(base["profile"], cur["profile"])
    else:
        missing.append("profile (run the sweep with sweep.kinds=[profile] on both sides)")
    if base.get("isa") and cur.get("isa"):
        changes += _isa_lines(base["isa"], cur["isa"])
    else:
        missing.append("machine code (sweep.kinds=[isa] on both sides)")
    missing.append("SM clock and power: not recorded by kernel jobs (only the end-to-end job records them)")
    t0, t1 = base.get("time_us"), cur.get("time_us")
    return {
        "time_us": [t0, t1],
        "change": (t1 / t0 - 1) if t0 and t1 else None,
        "changes": changes,
        "missing": missing,
        "baseline": dict(base),
        "current": dict(cur),
    }


def markdown(series: str, doc: Mapping[str, Any]) -> str:
    """The explanation as Markdown, for a pull request: the two sides' kernels side by side and the changes."""
    b, c = doc["baseline"], doc["current"]
    out = [f"### {series}: why it changed", ""]
    if doc["change"] is not None:
        out.append(f"{doc['time_us'][0]:.2f} µs → {doc['time_us'][1]:.2f} µs ({doc['change']:+.1%}), ")
        out[-1] += (
            f"baseline {', '.join(x[:10] for x in b['commits'])}, current {', '.join(x[:10] for x in c['commits'])}"
        )
        out.append("")
    out += [f"- {line}" for line in doc["changes"]] or ["- no difference in the captures"]
    names = list(
        dict.fromkeys([r["name"] for r in (b.get("profile") or [])] + [r["name"] for r in (c.get("profile") or [])])
    )
    if names:
        bp, cp = {r["name"]: r for r in b.get("profile") or []}, {r["name"]: r for r in c.get("profile") or []}
        out += [
            "",
            "| kernel | baseline µs/call | current µs/call | launches (baseline → current) |",
            "|---|---:|---:|---|",
        ]
        for n in names:
            was, now = bp.get(n), cp.get(n)
            cell = lambda r: f"{r['total_ns'] / 1e3:.2f}" if r else "–"  # noqa: E731
            launches = f"{was['calls'] if was else 0:g} → {now['calls'] if now else 0:g}"
            out.append(f"| `{n}` | {cell(was)} | {cell(now)} | {launches} |")
    if doc["missing"]:
        out += ["", "Not captured: " + "; ".join(doc["missing"]) + "."]
    return "\n".join(out) + "\n"
