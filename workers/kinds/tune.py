"""The ``tune`` job kind (workers/tune.py): planned by orchestrator/tune_plan.py."""

from workers.kinds import TIMING_PARAMS, JobKind

NAME = "tune"

KIND = JobKind(
    name=NAME,
    module="workers.tune",
    description="every candidate launch of one kernel, shape and dtype, checked, then timed side by side",
    timed=True,
    # its candidates are Triton launches, interpreted on a CPU like a micro job's (orchestrator/cpu_price.py)
    cpu_priced=True,
    shared_metrics=("time_us", "iqr_us", "gbs", "graph_time_us", "kernel_time_us", "kernel_gbs", "speedup")
    + ("compile_s", "correct"),
    params=TIMING_PARAMS,
    planner="orchestrator.tune_plan:plan_kind",
    validator="orchestrator.tune_plan:validate_kind",
)
