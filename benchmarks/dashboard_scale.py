"""How the dashboard and `orchestrator export` scale: a store of N synthetic measurements, written through the real
writer (orchestrator/store/writer.py), then timed.  The figures in docs/perf/dashboard.md come from this script.

  python -m benchmarks.dashboard_scale fill --url URL [--measurements 1000000] [--samples 20]
  python -m benchmarks.dashboard_scale time --url URL [--browser] [--repeats 3]

The synthetic data: runs (one per made-up commit, an hour apart) x kernels x shapes x GPU types micro jobs, each
with every implementation's time_us/kernel_time_us/graph_time_us (with ``--samples`` repeats each), iqr_us, gbs,
kernel_gbs, speedup and correct: 40 measurements per job.  The values are random around a per-series level (with a
step change in a few series, so trends show flags); they are NOT measurements of any kernel.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import chromium  # noqa: E402
from benchmarks.sample_devices import DEVICES, device_row  # noqa: E402
from benchmarks.wall import best_s  # noqa: E402
from orchestrator.store import migrate  # noqa: E402
from orchestrator.store.query import access, revision_cache, run_queries, series_queries  # noqa: E402
from orchestrator.store.session import dispose_engines, normalize_url, sqlite_path  # noqa: E402
from orchestrator.store.writer import StoreWriter  # noqa: E402
from workers.spec import DeviceInfo, JobResult, JobSpec, Measurement  # noqa: E402

KERNELS = (
    "rmsnorm",
    "rope",
    "geglu",
    "adaln",
    "qk_norm_rope",
    "gated_residual",
    "add_rms_norm_modulate",
    "gelu_tanh",
    "adaln_layer_norm",
    "rope_rotate_half",
)
SHAPES = ([1, 1024, 2048], [2, 1320, 2048], [2, 4096, 3072], [4, 4096, 2048], [2, 6336, 2048])
IMPLS = ("triton", "eager", "compile", "compile_max", "F.rms_norm")
PER_JOB = len(IMPLS) * 8


def _measurements(rng: random.Random, level: dict[str, float], nbytes: float, samples: int) -> list[dict]:
    out = []
    eager = None
    for impl in IMPLS:
        base = level[impl]
        reps = {
            m: [base * f * rng.lognormvariate(0, 0.03) for _ in range(samples)]
            for m, f in (("time_us", 1.0), ("kernel_time_us", 0.9), ("graph_time_us", 0.85))
        }
        med = {m: statistics.median(v) for m, v in reps.items()}
        q = statistics.quantiles(reps["time_us"], n=4)
        eager = med["time_us"] if impl == "eager" else eager
        out += [Measurement(impl, m, med[m], "us", reps[m]).to_dict() for m in reps]
        out += [
            Measurement(impl, "iqr_us", q[2] - q[0], "us").to_dict(),
            Measurement(impl, "gbs", nbytes / med["time_us"] / 1e3, "GB/s").to_dict(),
            Measurement(impl, "kernel_gbs", nbytes / med["kernel_time_us"] / 1e3, "GB/s").to_dict(),
            Measurement(impl, "correct", 1.0, "").to_dict(),
        ]
    by_impl = {m["impl"]: m["value"] for m in out if m["metric"] == "time_us"}
    out += [Measurement(i, "speedup", by_impl["eager"] / by_impl[i], "x").to_dict() for i in IMPLS]
    return out


def fill(url: str, measurements: int, samples: int, seed: int = 0) -> dict:
    """Write about ``measurements`` measurements through StoreWriter; returns counts and the time taken."""
    if migrate.current(url) is None:
        migrate.upgrade(url)
    rng = random.Random(seed)
    jobs_per_run = len(KERNELS) * len(SHAPES) * len(DEVICES)
    runs = max(1, round(measurements / (jobs_per_run * PER_JOB)))
    levels = {
        (k, tuple(s), g): {i: rng.uniform(5, 400) * (1.0 if i != "triton" else 0.3) for i in IMPLS}
        for k in KERNELS
        for s in SHAPES
        for g in DEVICES
    }
    steps = {key: rng.randrange(runs) for key in list(levels)[::7]}  # a 20 % step in some series
    t0 = time.perf_counter()
    start = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
    written = 0
    with StoreWriter(url) as w:
        for r in range(runs):
            commit = hashlib.sha1(f"synthetic-{seed}-{r}".encode()).hexdigest()
            run_id = w.start_run("synthetic", {"synthetic": True}, f"plan-{seed}-{r}", commit, "synthetic")
            specs = []
            for k in KERNELS:
                for s in SHAPES:
                    for g in DEVICES:
                        spec = JobSpec(
                            kind="micro",
                            kernel=k,
                            shape=list(s),
                            dtype="bf16",
                            impls=list(IMPLS),
                            target=g,
                            params={"commit": commit},
                            sweep="synthetic",
                        )
                        spec.key = hashlib.sha256(json.dumps(spec.content(), sort_keys=True).encode()).hexdigest()[:20]
                        specs.append((spec, g))
            w.add_jobs(run_id, [s.to_dict() for s, _ in specs])
            when = (start + dt.timedelta(hours=r)).timestamp()
            for spec, g in specs:
                level = levels[(spec.kernel, tuple(spec.shape), g)]
                key = (spec.kernel, tuple(spec.shape), g)
                if key in steps and r >= steps[key]:
                    level = {i: v * 1.2 for i, v in level.items()}
                nbytes = 2.0 * spec.shape[0] * spec.shape[1] * spec.shape[2] * 2
                ms = _measurements(rng, level, nbytes, samples)
                res = JobResult(
                    key=spec.key,
                    status="ok",
                    measurements=[Measurement.from_dict(m) for m in ms],
                    device=DeviceInfo.from_dict(device_row(g)),
                    node_id=f"node-{g}",
                    started_at=when,
                    duration_s=1.0,
                    attempt=1,
                    details={},
                ).to_dict()
                w.record_result(run_id, res)
                written += len(ms)
            for g, (*_, bw) in DEVICES.items():
                hw = w.record_device(device_row(g))
                if w.copy_bandwidth(hw) is None:
                    w.set_copy_bandwidth(hw, bw)
            w.finish_run(run_id, "complete", {"ok": len(specs)})
            if r % 10 == 0:
                print(f"run {r + 1}/{runs}: {written} measurements, {time.perf_counter() - t0:.0f} s", flush=True)
    return {"runs": runs, "measurements": written, "fill_s": time.perf_counter() - t0}


def store_bytes(url: str) -> int:
    path = sqlite_path(normalize_url(url))
    if path is not None:
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    from sqlalchemy import create_engine, text

    engine = create_engine(normalize_url(url))
    with engine.connect() as c:
        size = c.execute(
            text(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN "
                "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND "
                "c.relkind = 'r'"
            )
        ).scalar()
    engine.dispose()
    return int(size)


def _cold(fn):
    """``fn`` with the answers kept per store revision forgotten first."""

    def run():
        revision_cache.clear()
        fn()

    return run


def time_store(url: str, repeats: int, browser: bool, export: bool = True, kernel: str = KERNELS[0]) -> dict:
    from dashboard import pages

    engine = access.open_read_only(url)
    out: dict = {"counts": run_queries.store_counts(engine), "bytes": store_bytes(url)}
    k, s = kernel, "x".join(map(str, SHAPES[0]))
    one = {"kernel": k, "shape": s, "dtype": "bf16", "impl": "triton", "gpu_type": "h200"}
    views = {
        "/": {},
        "/trends": {"kernel": k, "shape": s},
        "/trends?impl=triton": {"kernel": k, "impl": "triton"},  # every shape of one implementation
        "/trends?one-series": one,
        "/bandwidth": {"kernel": k},
        "/e2e": {},
        "/profiles": {},
        "/runs": {},
    }
    # cold: the answers kept per store revision forgotten before each build (the first view after a result is
    # written, in a server that has run a while: imports, compiled statements and the file's pages are warm), the
    # best of ``repeats`` such builds (on a shared machine one build measures the other work as much as the page);
    # warm: the next views, which reuse what the cold one kept
    import scipy.stats  # noqa: F401  as `python -m dashboard` does at start: not a page's cost

    out["page_s"] = {}
    for p, v in views.items():
        build = lambda p=p, v=v: pages.build(engine, p.split("?")[0], v, url)  # noqa: E731
        out["page_s"][p] = {"cold": best_s(_cold(build), repeats), "warm": best_s(build, repeats)}
    out["one_series_s"] = best_s(
        lambda: series_queries.trend_points(engine, k, shape=s, dtype="bf16", impl="triton", gpu_type="h200"), repeats
    )
    if browser:
        out["browser_s"] = _browser_times(url, views, repeats)
    if not export:
        return out
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "all.csv"
        t = time.perf_counter()
        n = subprocess.run(
            [sys.executable, "-m", "orchestrator", "export", "--url", url, "--format", "csv", "--out", str(target)],
            check=True,
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        ).stderr
        out["export_csv_s"] = time.perf_counter() - t
        out["export_note"] = n.strip()
        out["export_rows_per_s"] = out["counts"]["measurements"] / out["export_csv_s"]
    return out


def _browser_times(url: str, views: dict, repeats: int) -> dict:
    """Full page loads in headless Chromium against a real `python -m dashboard` server."""
    import urllib.parse

    idle = (
        "return document.querySelector('#page h2') !== null && "
        "document.querySelector('[data-dash-is-loading=\"true\"]') === null"
    )
    with chromium.dashboard_in_browser(url) as (driver, base):
        times = {}
        for path, params in views.items():
            target = base + path.split("?")[0] + ("?" + urllib.parse.urlencode(params) if params else "")
            chromium.load_s(driver, target, idle, 120)  # warm: the browser caches Dash's JavaScript as a user's would
            times[path] = min(chromium.load_s(driver, target, idle, 120) for _ in range(repeats)) if repeats else None
        return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.dashboard_scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fill")
    f.add_argument("--url", required=True)
    f.add_argument("--measurements", type=int, default=1_000_000)
    f.add_argument("--samples", type=int, default=20)
    f.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("time")
    t.add_argument("--url", required=True)
    t.add_argument("--repeats", type=int, default=3)
    t.add_argument("--browser", action="store_true")
    t.add_argument("--no-export", action="store_true", help="time the pages only")
    t.add_argument("--kernel", default=KERNELS[0], help="the kernel of the trend views (default rmsnorm)")
    args = ap.parse_args(argv)
    if args.cmd == "fill":
        result = fill(args.url, args.measurements, args.samples, args.seed)
        result["bytes"] = store_bytes(args.url)
    else:
        result = time_store(args.url, args.repeats, args.browser, export=not args.no_export, kernel=args.kernel)
    dispose_engines()
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
