"""Per mode of the e2e results files given: ms/step, device busy ms and kernels per step (the 3-step profile), the
SM clock and power draw (medians of nvidia-smi samples during the timed calls) and the latents' error against eager.
Usage: python docs/perf/h200-2026-11-30k/modes.py RESULTS.jsonl ..."""
import json
import sys

for path in sys.argv[1:]:
    result = [json.loads(line) for line in open(path)][1]["result"]
    by_mode = {}
    for m in result["measurements"]:
        by_mode.setdefault(m["impl"], {})[m["metric"]] = m["value"]
    print(path)
    print("| mode | ms/step | busy ms | kernels/step | SM MHz | W | rel err |")
    print("|---|---|---|---|---|---|---|")
    for mode, v in by_mode.items():
        print(f"| {mode} | {v['ms_per_step']:.2f} | {v['gpu_busy_ms_per_step']:.2f} | {v['kernels_per_step']:.0f} | "
              f"{v['sm_clock_mhz']:.0f} | {v['power_w']:.0f} | {v['rel_err_vs_eager']:.4f} |")
