"""What the kernels should buy a model end to end (Amdahl), beside what they bought: the reconciliation of the
micro results of the same kernels with the end-to-end job's profile.

For an injected mode (``triton``, ``triton+compile``, ``triton+graph``, ``triton+compile-ro``, ...) its **base**
is the same mode without the kernels (``eager``, ``compile``, ``eager+graph``, ``compile-ro``, ...).  The injected
mode's profile says how long our kernels ran per step, by module (workers.jobs.e2e.profile: ``ours``); the micro results
say how much faster each kernel is than what it replaces -- against ``eager`` for a base without torch.compile,
against ``compile`` (``compile_max``) for a base compiled in that mode -- on the same device and dtype (the geometric
mean of its newest results over the shapes measured).  The work the kernels stand in for then took
``replaced = sum(ours_ms x speed-up)`` in the base, and Amdahl's law predicts

    predicted_ms = base_ms - replaced + ours_ms            predicted speed-up = base_ms / predicted_ms

against the measured ``base_ms / ms``.  ``lost_ms = ms - predicted_ms``: time the kernel wins do not reach the
model -- launches (a host-bound plain call), graph breaks, layout copies around the kernels, or other kernels the
injection changed.  A module none of whose kernels has a micro result counts at speed-up 1 and is listed as
``unmeasured``.  Pure functions; the rows come from orchestrator.store.query.result_queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import geometric_mean
from typing import Any

from workers.jobs.e2e.spec import MODES, mode_parts

# the micro implementation a base mode's compile setting stands for (workers.jobs.e2e.spec.COMPILE_MODES' values)
MICRO_BASELINE = {
    None: "eager",
    "default": "compile",
    "reduce-overhead": "compile",
    "max-autotune-no-cudagraphs": "compile_max",
    "max-autotune": "compile_max",
}


def base_mode(mode: str) -> str | None:
    """The mode without the kernels (``triton+compile-ro`` -> ``compile-ro``, ``triton+graph`` ->
    ``eager+graph``, ``triton`` -> ``eager``); None for a mode without them."""
    if mode not in MODES or not mode_parts(mode)[0]:
        return None
    rest = [p for p in mode.split("+") if p != "triton"]
    if not rest:
        return "eager"
    return "eager+graph" if rest == ["graph"] else "+".join(rest)


def micro_baseline(mode: str) -> str:
    """The micro implementation the injected kernels of ``mode`` are set against."""
    return MICRO_BASELINE[mode_parts(mode)[1]]


# the size from which a micro shape stands for a model's activations (LTX-Video's 2 x 1320 x 2048 is 5.4 M)
MODEL_SIZED = 1 << 20


def _elements(shape: str) -> int:
    n = 1
    for v in shape.strip("[]()").replace("x", ",").split(","):
        if v.strip():
            n *= int(v)
    return n


def kernel_speedups(micro_rows: Iterable[Mapping[str, Any]], dtype: str) -> dict[str, dict[str, float]]:
    """``{micro baseline impl: {kernel: speed-up of triton over it}}`` from micro rows (result_queries.latest_results
    of one device): per shape the baseline's time over triton's (the profiler's kernel time where both have it, as
    the e2e profile measures device time; else the timed median), then the geometric mean over the shapes of at
    least :data:`MODEL_SIZED` elements (a model's activations; every shape when none is that large).  Rows of an
    incorrect implementation are left out."""
    by_job: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for r in micro_rows:
        if r.get("dtype") == dtype and r.get("correct") is not False and r.get("median_us"):
            by_job.setdefault((r["kernel"], str(r["shape"])), {})[r["impl"]] = r
    ratios: dict[str, dict[str, list[float]]] = {}
    large = {k for (k, shape), impls in by_job.items() if _elements(shape) >= MODEL_SIZED}
    for (kernel, shape), impls in by_job.items():
        if kernel in large and _elements(shape) < MODEL_SIZED:
            continue
        ours = impls.get("triton")
        for base in {b for b in MICRO_BASELINE.values() if b in impls and ours is not None}:
            theirs = impls[base]
            both_profiled = ours.get("kernel_time_us") and theirs.get("kernel_time_us")
            key = "kernel_time_us" if both_profiled else "median_us"
            ratios.setdefault(base, {}).setdefault(kernel, []).append(theirs[key] / ours[key])
    return {base: {k: geometric_mean(v) for k, v in per.items()} for base, per in ratios.items()}


def reconcile_job(
    modes: Mapping[str, Mapping[str, Any]], speedups: Mapping[str, Mapping[str, float]]
) -> list[dict[str, Any]]:
    """One row per injected mode of one job that ran with its base: ``modes`` maps a mode to ``ms`` (ms per step),
    ``correct``, ``ours`` (the profile's rows: module, kernels, ms) and ``kernels`` (the registry kernels its
    injection used).  Keys: mode, base, micro_baseline, base_ms, ms, ours_ms, replaced_ms, predicted_ms,
    predicted_speedup, measured_speedup, lost_ms, kernel_speedups ({kernel: x}), unmeasured ([module])."""
    out = []
    for mode in [m for m in MODES if m in modes]:
        base = base_mode(mode)
        got, ref = modes[mode], modes.get(base or "")
        if base is None or ref is None or got.get("ms") is None or ref.get("ms") is None:
            continue
        if got.get("correct") is False or ref.get("correct") is False or not got.get("ours"):
            continue
        micro = micro_baseline(mode)
        table = speedups.get(micro, {})
        used = set(got.get("kernels") or [])
        ours_ms = replaced = 0.0
        seen: dict[str, float] = {}
        unmeasured = []
        for row in got["ours"]:
            names = [k for k in row.get("kernels") or [] if not used or k in used]
            known = [table[k] for k in names if k in table]
            s = geometric_mean(known) if known else 1.0
            if not known:
                unmeasured.append(row["module"])
            seen.update({k: table[k] for k in names if k in table})
            ours_ms += float(row["ms"])
            replaced += float(row["ms"]) * s
        base_ms, ms = float(ref["ms"]), float(got["ms"])
        predicted = base_ms - replaced + ours_ms
        out.append(
            {
                "mode": mode,
                "base": base,
                "micro_baseline": micro,
                "base_ms": base_ms,
                "ms": ms,
                "ours_ms": ours_ms,
                "replaced_ms": replaced,
                "predicted_ms": predicted,
                "predicted_speedup": base_ms / predicted if predicted > 0 else None,
                "measured_speedup": base_ms / ms if ms > 0 else None,
                "lost_ms": ms - predicted,
                "kernel_speedups": dict(sorted(seen.items())),
                "unmeasured": unmeasured,
            }
        )
    return out


def speedup_text(speedups: Mapping[str, float], unmeasured: Sequence[str] = ()) -> str:
    """``rmsnorm 1.92x, rope 2.10x`` (and the modules without a micro result)."""
    parts = [f"{k} {v:.2f}x" for k, v in speedups.items()]
    parts += [f"{m.removeprefix('kernels.')}: no micro result" for m in unmeasured]
    return ", ".join(parts) or "–"
