"""The ``isa`` job kind (workers/jobs/isa.py): compile only; its parameter is ``sweep.archs``."""

from workers.kinds import JobKind

NAME = "isa"

KIND = JobKind(
    name=NAME,
    module="workers.jobs.isa",
    description="a kernel's Triton implementation compiled for a target architecture, its machine code read",
    needs_gpu=False,
    compile_only=True,
    metrics=(
        "vgprs",
        "agprs",
        "sgprs",
        "registers",
        "vgpr_spills",
        "sgpr_spills",
        "spill_store_bytes",
        "spill_load_bytes",
        "scratch_bytes",
        "lds_bytes",
        "occupancy_waves",
        "code_bytes",
        "isa_compile_s",
        "load_min_bits",
        "store_min_bits",
        *(f"{d}s_b{b}" for d in ("load", "store") for b in (128, 96, 64, 32, 16, 8)),
        "transcendentals",
        "conversions",
        "instructions",
        "launches",
        "est_min_time_us",
        "est_min_time_copy_us",
    ),
    params=("archs", "timeout_s"),
    planner="orchestrator.plan.jobs:plan_isa",
    validator="orchestrator.config.validate:check_isa",
)
