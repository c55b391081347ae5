"""The ``micro`` job kind (workers/jobs/micro.py)."""

from workers.kinds import TIMING_PARAMS, JobKind

NAME = "micro"

KIND = JobKind(
    name=NAME,
    module="workers.jobs.micro",
    description="every implementation of one kernel, shape and dtype timed side by side, interleaved",
    timed=True,
    cpu_priced=True,
    device_only=True,  # events after the GPU was held busy, graph replays, profiler kernel times: no host time
    default=True,
    metrics=("time_us", "iqr_us", "gbs", "graph_time_us", "kernel_time_us", "kernel_gbs", "speedup", "compile_s"),
    shared_metrics=("correct",),
    params=TIMING_PARAMS,
)
