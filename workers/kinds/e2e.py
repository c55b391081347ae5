"""The ``e2e`` job kind (workers/jobs/e2e/job.py): models, not kernels; its parameters are ``sweep.e2e``
(orchestrator/plan/e2e.py)."""

from workers.kinds import JobKind

NAME = "e2e"

KIND = JobKind(
    name=NAME,
    module="workers.jobs.e2e.job",
    description="a model's denoising loop (a decoder's generate) in several modes, against eager",
    per_kernel=False,
    whole_node=True,
    cpu_priced=True,
    metrics=(
        "ms_per_step",
        "prefill_ms",
        "prefill_tokens_per_s",
        "decode_tokens_per_s",
        "host_ms_per_step",
        "total_s",
        "warmup_s",
        "peak_mem_gb",
        "sm_clock_mhz",
        "power_w",
        "gpu_busy_ms_per_step",
        "kernels_per_step",
        "max_abs_vs_eager",
        "cos_sim_vs_eager",
        "rel_l2_vs_eager",
        "rel_err_vs_eager",
        "speedup_vs_eager",
    ),
    shared_metrics=("correct",),
    params=("e2e", "seed", "timeout_s"),
    planner="orchestrator.plan.e2e:plan_kind",
    validator="orchestrator.plan.e2e:validate_kind",
)
