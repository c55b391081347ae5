"""The ``tune`` job kind (workers/jobs/tune.py): planned by orchestrator/plan/tune.py."""

from workers.kinds import TIMING_PARAMS, JobKind

NAME = "tune"

KIND = JobKind(
    name=NAME,
    module="workers.jobs.tune",
    description="every candidate launch of one kernel, shape and dtype, checked, then timed side by side",
    timed=True,
    # its candidates are Triton launches, interpreted on a CPU like a micro job's (orchestrator/plan/cpu_price.py)
    cpu_priced=True,
    shared_metrics=("time_us", "iqr_us", "gbs", "graph_time_us", "kernel_time_us", "kernel_gbs", "speedup")
    + ("compile_s", "correct"),
    params=TIMING_PARAMS,
    planner="orchestrator.plan.tune:plan_kind",
    validator="orchestrator.plan.tune:validate_kind",
)
