"""What one side of a regression stored about a series, for its explanation (orchestrator/stats/explain.py): the micro
timing with its autotune pick, the profile job's per-kernel rows, and the isa jobs' compiled launches.

A side is a set of runs (the runs of a commit, or a bisect segment's).  A run comprises every job of its plan, also
those an earlier run measured (RunJob), so each of the series' micro, profile and isa jobs is read through the runs
of the side, with the attempt each run shows for it (picked.pick_for_run).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from orchestrator.store.models import Job, shape_key
from orchestrator.store.query.access import Source, read_session
from orchestrator.store.query.picked import pick_for_run, run_jobs, run_or_raise
from workers.kinds.isa import NAME as ISA
from workers.kinds.micro import NAME as MICRO
from workers.kinds.profile import NAME as PROFILE
from workers.spec import GOOD_STATUSES

LAUNCH_FIGURES = (  # what an isa job's launch says of a kernel's configuration and resources (workers/jobs/isa.py)
    "num_warps",
    "grid",
    "registers",
    "vgprs",
    "spill_store_bytes",
    "vgpr_spills",
    "scratch_bytes",
    "lds_bytes",
    "occupancy_waves",
    "load_min_bits",
    "store_min_bits",
)


def _calls_captured(rows: Sequence[dict], kernels_per_call: float | None, spec: dict | None) -> float:
    """How many calls a profile's rows cover: the launches over the launches per call the job measured (a capture
    without fences covers the warm-up calls too, workers/jobs/profile.py), else the job's ``iters``."""
    launches = sum(r.get("calls") or 0 for r in rows)
    if kernels_per_call and launches:
        return launches / kernels_per_call
    return float(((spec or {}).get("params") or {}).get("iters") or 10)


def side_facts(
    src: Source, run_ids: Sequence[int], kernel: str, shape: Sequence[int] | str, dtype: str, impl: str
) -> dict[str, Any]:
    """One side's facts of the series: ``time_us`` (median of its runs' medians), ``runs``, ``commits``,
    ``pick`` (the autotuner's choice, compiled implementations), ``profile`` (per-kernel rows {name, calls,
    avg_ns, total_ns} per timed call), ``kernels_per_call``, ``isa`` (arch -> the launches' LAUNCH_FIGURES)."""
    facts: dict[str, Any] = {"runs": list(run_ids), "commits": [], "time_us": None, "pick": None}
    facts.update(profile=None, kernels_per_call=None, isa={})
    times = []
    with read_session(src) as s:
        for run_id in run_ids:
            run = run_or_raise(s, run_id)
            facts["commits"].append(run.commit)
            where = (Job.kernel == kernel, Job.shape_key == shape_key(shape), Job.dtype == dtype)
            for p in pick_for_run(s, run_id, run_jobs(s, run_id, *where)):
                if p.attempt is None or p.attempt.status not in GOOD_STATUSES:
                    continue
                details = p.attempt.details or {}
                if p.job.kind == MICRO and p.value(impl, "time_us") is not None:
                    times.append(p.value(impl, "time_us"))
                    facts["pick"] = ((details.get("autotune") or {}).get(impl) or {}).get("pick") or facts["pick"]
                elif p.job.kind == PROFILE and (details.get("profile_rows") or {}).get(impl):
                    facts["kernels_per_call"] = p.value(impl, "kernels_per_call")
                    iters = _calls_captured(details["profile_rows"][impl], facts["kernels_per_call"], p.job.spec)
                    facts["profile"] = [
                        {
                            "name": r["name"],
                            "calls": r["calls"] / iters,
                            "avg_ns": r["avg_ns"],
                            "total_ns": r["total_ns"] / iters,
                        }
                        for r in details["profile_rows"][impl]
                    ]
                elif p.job.kind == ISA and details.get("launches"):
                    arch = str(((p.job.spec or {}).get("params") or {}).get("arch", ""))
                    facts["isa"][arch] = [
                        {"kernel": ln.get("kernel"), **{k: ln.get(k) for k in LAUNCH_FIGURES}}
                        for ln in details["launches"]
                    ]
    facts["commits"] = list(dict.fromkeys(facts["commits"]))
    facts["time_us"] = statistics.median(times) if times else None
    return facts


def explanation(
    src: Source,
    baseline: Sequence[int],
    current: Sequence[int],
    kernel: str,
    shape: Sequence[int] | str,
    dtype: str,
    impl: str,
) -> dict[str, Any]:
    """What changed in the series between the ``baseline`` and the ``current`` runs
    (orchestrator.stats.explain.explain of both sides' :func:`side_facts`): ``changes``, ``missing``, ``time_us``,
    ``change``, ``baseline``,
    ``current``.  KeyError for an unknown run."""
    from orchestrator.stats.explain import explain

    return explain(
        side_facts(src, baseline, kernel, shape, dtype, impl), side_facts(src, current, kernel, shape, dtype, impl)
    )
