"""Measure the orchestration overhead per job: what the path driver -> Ray -> sandbox -> store adds to a job.

    python -m benchmarks.overhead --jobs 200

Runs ``--jobs`` trivial jobs (the test plugin kernel ``noop``: copy a 16-element tensor) through the embedded local
Ray instance and the sandbox, recording every result in a temporary SQLite store, exactly as a sweep does.  A job's
overhead is the time between the arrival of its result at the driver and the arrival of the one before it, minus
the time the job itself spent inside the sandbox; the first job of each batch carries the task and sandbox start-up
(torch import), the others only the per-job path, so the median shows the amortised cost.
It backs docs/perf/orchestration-overhead.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def measure(n_jobs: int, batch_size: int) -> dict:
    from benchmarks import fault_kernels

    fault_kernels.enable()  # the `noop` kernel
    from orchestrator.run import schedule
    from orchestrator.store import migrate
    from orchestrator.store.writer import StoreWriter
    from workers.spec import JobSpec

    specs = [
        JobSpec(
            kind="correctness",
            kernel="noop",
            shape=[16],
            dtype="fp32",
            impls=["eager"],
            params={"seed": i, "timeout_s": 60},
            key=f"overhead-{i:05d}",
        )
        for i in range(n_jobs)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/overhead.db"
        migrate.upgrade(url)
        writer = StoreWriter(url)
        run_id = writer.start_run("overhead", {}, "overhead", "bench", "bench")
        writer.add_jobs(run_id, [s.to_dict() for s in specs])
        cluster = schedule.RayCluster().start()
        arrivals: list[tuple[float, float]] = []
        try:
            t0 = time.perf_counter()
            last = [t0]

            def on_result(res) -> None:
                writer.record_result(run_id, res.to_dict())
                now = time.perf_counter()
                arrivals.append((now - last[0], res.duration_s or 0.0))
                last[0] = now

            schedule.execute(cluster, specs, lambda s: {}, on_result, lambda s, r: None, batch_size=batch_size)
            wall = time.perf_counter() - t0
        finally:
            cluster.stop()
            writer.close()
    overheads_ms = [max(gap - inside, 0.0) * 1e3 for gap, inside in arrivals]
    return {
        "jobs": n_jobs,
        "results": len(arrivals),
        "batch_size": batch_size,
        "wall_s": wall,
        "median_ms": statistics.median(overheads_ms),
        "mean_ms": statistics.fmean(overheads_ms),
        "p90_ms": statistics.quantiles(overheads_ms, n=10)[8] if len(overheads_ms) >= 10 else max(overheads_ms),
        "max_ms": max(overheads_ms),
        "in_job_ms_median": statistics.median(a[1] for a in arrivals) * 1e3,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.overhead", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=200, help="trivial jobs to run (200)")
    ap.add_argument("--batch-size", type=int, default=32, help="jobs per Ray task, the sweep default (32)")
    args = ap.parse_args(argv)
    r = measure(args.jobs, args.batch_size)
    print(
        f"{r['jobs']} jobs, batch size {r['batch_size']}: wall {r['wall_s']:.1f} s; overhead per job: "
        f"median {r['median_ms']:.1f} ms, mean {r['mean_ms']:.1f} ms, p90 {r['p90_ms']:.1f} ms, "
        f"max {r['max_ms']:.0f} ms (time inside the job: median {r['in_job_ms_median']:.1f} ms)"
    )


if __name__ == "__main__":
    main()
