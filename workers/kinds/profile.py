"""The ``profile`` job kind (workers/jobs/profile.py)."""

from workers.kinds import TIMING_PARAMS, JobKind

NAME = "profile"

KIND = JobKind(
    name=NAME,
    module="workers.jobs.profile",
    description="where each implementation's time goes, kernel by kernel, from the profiler",
    whole_node=True,
    metrics=("kernels_per_call",),
    shared_metrics=("kernel_time_us",),
    params=TIMING_PARAMS,
)
