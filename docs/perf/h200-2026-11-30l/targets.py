"""The target tables of docs/perf/kernels-h200.md (eleventh session) from the raw results beside this file.

One run of the whole grid at one commit.  Per kernel and shape, the triton implementation's per-call median
(device events, L2 flushed by a read, the GPU held busy until the call is enqueued), its kernel time (the call's
kernels' device time from the profiler, L2 flushed) and its launch-free time (a CUDA graph of 50 calls, warm L2),
the first two also as % of the measured copy ceiling for the kernel's byte model; and the ratio to the better of
torch.compile default / max-autotune-no-cudagraphs measured in the same job, by each of the three readings.
``--previous`` adds the seventh session's per-call reading of the same shapes (the timing before this session).
Then the targets' summary by each reading.
Run from the repo root: python docs/perf/h200-2026-11-30l/targets.py [--previous]
"""
import gzip
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).parent
FILES = [HERE / "a" / f"results-kernels-{i}.jsonl.gz" for i in (1, 2)]
PREVIOUS = [HERE.parent / "h200-2026-11-30h" / "c" / f"results-kernels-{i}.jsonl.gz" for i in (1, 2)]
COMPILE = ("compile", "compile_max")


def micro_results(paths):
    """(spec, result, {(impl, metric): value}) of every micro job in the files."""
    for path in paths:
        with gzip.open(path, "rt") as f:
            for line in f:
                d = json.loads(line)
                if "result" in d and d["spec"]["kind"] == "micro":
                    res = d["result"]
                    yield d["spec"], res, {(x["impl"], x["metric"]): x["value"] for x in res["measurements"]}


def best_compile(m, metric):
    vals = [m[(i, metric)] for i in COMPILE if (i, metric) in m]
    return min(vals) if vals else None


def main(previous: bool):
    before = {}
    if previous:
        for spec, _, m in micro_results(PREVIOUS):
            before[(spec["kernel"], "x".join(map(str, spec["shape"])))] = m[("triton", "time_us")]
    ceilings = set()
    head = ("| kernel | shape | MB | per call µs | % ceiling | kernel µs | % ceiling (kernel) | graph µs "
            "| × best compile (per call) | × (kernel) | × (graph) |")
    if previous:
        head += " per call µs, seventh session |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for spec, res, m in sorted(micro_results(FILES), key=lambda x: (x[0]["kernel"], x[0]["shape"])):
        ceiling = res["details"]["copy_gbs"]
        ceilings.add(round(ceiling))
        nbytes = res["details"]["bytes"]
        t, k, g = (m.get(("triton", x)) for x in ("time_us", "kernel_time_us", "graph_time_us"))
        shape = "x".join(map(str, spec["shape"]))
        cells = [spec["kernel"], shape, f"{nbytes / 1e6:.1f}", f"{t:.2f}", f"{100 * nbytes / (t * 1e3) / ceiling:.0f} %",
                 f"{k:.2f}", f"{100 * nbytes / (k * 1e3) / ceiling:.0f} %", f"{g:.2f}"]
        for metric, own in (("time_us", t), ("kernel_time_us", k), ("graph_time_us", g)):
            c = best_compile(m, metric)
            cells.append("–" if c is None else f"{c / own:.2f}×")
        if previous:
            b = before.get((spec["kernel"], shape))
            cells.append("–" if b is None else f"{b:.2f}")
        print("| " + " | ".join(cells) + " |")
    print(f"\ncopy ceiling (GB/s, per GPU): {sorted(ceilings)}")
    # the event pair's own cost: per-call reading less kernel time, over every single-kernel implementation
    gaps = [m[(i, "time_us")] - m[(i, "kernel_time_us")] for spec, _, m in micro_results(FILES)
            for i in ("triton", "compile") if (i, "kernel_time_us") in m]
    print(f"per call - kernel time, triton and compile, every shape: median {statistics.median(gaps):.2f} µs, "
          f"range {min(gaps):.2f}-{max(gaps):.2f}")


PCT_TARGETS = {"rmsnorm": 92, "adaln": 95, "geglu": 95, "rope": 85}  # % of the copy ceiling at >= 32 MB


def target_summary():
    """Issue #3's grid-wide targets by each reading: shapes under 1.0x / 1.2x the better compile, the % targets."""
    rows = list(micro_results(FILES))
    for metric, label in (("time_us", "per call"), ("kernel_time_us", "kernel time"), ("graph_time_us", "graph")):
        under, small = [], []
        for spec, res, m in rows:
            c, own = best_compile(m, metric), m.get(("triton", metric))
            if c is None or own is None:
                continue
            name = f"{spec['kernel']} {'x'.join(map(str, spec['shape']))} {c / own:.2f}x"
            if c / own < 1.0:
                under.append(name)
            if res["details"]["bytes"] <= 8e6:
                small.append(name)
        print(f"\n{label}: below 1.0x the better compile at {len(under)} of {len(rows)} shapes: {', '.join(under)}")
        print(f"{label}: shapes <= 8 MB (target 1.2x): {', '.join(small)}")
    for kernel, target in PCT_TARGETS.items():
        cells = []
        for spec, res, m in rows:
            nbytes, ceiling = res["details"]["bytes"], res["details"]["copy_gbs"]
            if spec["kernel"] != kernel or nbytes < 32e6:
                continue
            t, k = m[("triton", "time_us")], m[("triton", "kernel_time_us")]
            cells.append(f"{nbytes / 1e6:.0f} MB {100 * nbytes / (t * 1e3) / ceiling:.0f}/"
                         f"{100 * nbytes / (k * 1e3) / ceiling:.0f} %")
        print(f"{kernel} (target {target} %), per call/kernel time: {', '.join(sorted(cells, key=lambda c: float(c.split()[0])))}")


def trust_check():
    """DESIGN's check: the event timing within 5 % of a launch-free reading or of the profiler's kernel duration."""
    print("\n| tensors | implementations x shapes | event within 5 % of kernel time | of graph | of either "
          "| median event / kernel time |")
    print("|---|---|---|---|---|---|")
    for lo, hi in ((100e6, 400e6), (400e6, float("inf"))):
        by_kernel, by_graph, either, ratios = 0, 0, 0, []
        for spec, res, m in micro_results(FILES):
            if not lo <= res["details"]["bytes"] < hi:
                continue
            for i in spec["impls"]:
                t, k, g = m.get((i, "time_us")), m.get((i, "kernel_time_us")), m.get((i, "graph_time_us"))
                if t is None or k is None or g is None:
                    continue
                ratios.append(t / k)
                by_kernel += t / k <= 1.05
                by_graph += abs(t / g - 1) <= 0.05
                either += t / k <= 1.05 or abs(t / g - 1) <= 0.05
        span = f"{lo / 1e6:.0f}-{hi / 1e6:.0f} MB" if hi < float("inf") else f">= {lo / 1e6:.0f} MB"
        print(f"| {span} | {len(ratios)} | {by_kernel} | {by_graph} | {either} | {statistics.median(ratios):.3f} |")


if __name__ == "__main__":
    main("--previous" in sys.argv[1:])
    target_summary()
    trust_check()
