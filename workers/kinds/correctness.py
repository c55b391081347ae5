"""The ``correctness`` job kind (workers/jobs/correctness.py)."""

from workers.kinds import TIMING_PARAMS, JobKind

NAME = "correctness"

KIND = JobKind(
    name=NAME,
    module="workers.jobs.correctness",
    description="every implementation against a float64 reference, on every input case",
    cpu_priced=True,
    device_only=True,  # no figure of its holds time
    default=True,
    metrics=("rel_err", "max_abs", "correct"),
    params=TIMING_PARAMS,  # read only for the seed and the timeout; the rest stay for the keys planned so far
)
