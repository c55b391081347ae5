"""The target table of docs/perf/kernels-h200.md from the raw results beside this file.

Per kernel and shape, the newest measurement of the triton implementation: per-call median (device events, L2
flushed before each call) and launch-free time (a CUDA graph of 50 calls, warm L2), each as % of the measured copy
ceiling for the kernel's byte model, and the ratio to the better of torch.compile default / max-autotune-no-
cudagraphs measured in the same job.  Run from the repo root: python docs/perf/h200-2026-11-30/targets.py
"""
import gzip
import json
from pathlib import Path

HERE = Path(__file__).parent
# oldest first: a later file's measurement of the same (kernel, shape) replaces an earlier one
SOURCES = [("d781859", ["results-kernels-1.jsonl.gz", "results-kernels-2.jsonl.gz"]),
           ("9cc7fd0", ["results-adaln-1.jsonl.gz", "results-adaln-2.jsonl.gz"]),
           # second session of the day: L2 flushed by reading (8db33ff), then launch plans + norm warps (b8383d9)
           ("8db33ff", [f"../h200-2026-11-30b/results-kernels-{i}.jsonl.gz" for i in (1, 2)]),
           ("b8383d9", [f"../h200-2026-11-30c/results-kernels-{i}.jsonl.gz" for i in (1, 2)]),
           # fourth session: RoPE rounding by casts + measured RoPE tiles, gated_residual (73262fc)
           ("73262fc", [f"../h200-2026-11-30d/results-kernels-{i}.jsonl.gz" for i in (1, 2)]),
           # adaln_layer_norm with its measured warps (0d141c4)
           ("0d141c4", ["../h200-2026-11-30e/results-kernels.jsonl.gz"]),
           # seventh session: the whole grid again after the row-pointer review (9df2eea) and TABLE_ONCE (73ae34f)
           ("73ae34f", [f"../h200-2026-11-30h/c/results-kernels-{i}.jsonl.gz" for i in (1, 2)])]


def micro_results(names):
    """(spec, result, {(impl, metric): value}) of every micro job in the files."""
    for name in names:
        with gzip.open(HERE / name, "rt") as f:
            for line in f:
                d = json.loads(line)
                if "result" in d and d["spec"]["kind"] == "micro":
                    res = d["result"]
                    yield d["spec"], res, {(x["impl"], x["metric"]): x["value"] for x in res["measurements"]}


def main():
    rows = {}
    for commit, names in SOURCES:
        for spec, res, m in micro_results(names):
            ceiling = res["details"]["copy_gbs"]
            t, g, gbs = m[("triton", "time_us")], m[("triton", "graph_time_us")], m[("triton", "gbs")]
            nbytes = gbs * 1e3 * t  # GB/s x us = kB; bytes = gbs * 1e9 * t * 1e-6
            comp = [i for i in ("compile", "compile_max") if (i, "time_us") in m]
            rows[(spec["kernel"], "x".join(map(str, spec["shape"])))] = (
                nbytes / 1e6, t, 100 * gbs / ceiling, g, 100 * nbytes / (g * 1e3) / ceiling,
                min(m[(i, "time_us")] for i in comp) / t, min(m[(i, "graph_time_us")] for i in comp) / g, commit)
    print("| kernel | shape | MB | median µs | % ceiling | graph µs | % ceiling (graph) | × best compile "
          "| × best compile (graph) | commit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (kernel, shape), (mb, t, pct, g, pctg, xc, xcg, commit) in sorted(rows.items()):
        print(f"| {kernel} | {shape} | {mb:.1f} | {t:.1f} | {pct:.0f} % | {g:.1f} | {pctg:.0f} % | {xc:.2f}× "
              f"| {xcg:.2f}× | `{commit}` |")


def trust_check(min_mb=100.0):
    print(f"\n| run | implementations x shapes >= {min_mb:.0f} MB | event within 5 % of graph | median event / graph |")
    print("|---|---|---|---|")
    for commit, names in SOURCES:
        ratios = []
        for spec, _, m in micro_results(names):
            if m[("triton", "gbs")] * m[("triton", "time_us")] * 1e-3 < min_mb:
                continue
            ratios += [m[(i, "time_us")] / m[(i, "graph_time_us")] for i in spec["impls"] if (i, "graph_time_us") in m]
        ratios.sort()
        if not ratios:  # a run of small shapes only
            continue
        ok = sum(r <= 1.05 for r in ratios)
        print(f"| `{commit}` | {len(ratios)} | {ok} | {ratios[len(ratios) // 2]:.2f} |")


if __name__ == "__main__":
    main()
    trust_check()
