"""SM clock and power of GPU 0 per busy stretch of an nvidia-smi log (stage d: smi-d.csv, 200 ms samples taken
while the e2e plan with the +graph modes ran there).

A stretch is a run of samples drawing more than 200 W; per stretch: its first and last sample, the median SM clock
and power, and the median and lowest clock of the samples at more than 600 W (the GPU's limit is 700 W).  The
stretches follow the plan's modes in order (eager, eager+graph, triton+graph, compile+graph, triton+compile+graph);
the idle gaps between them are each mode's set-up (model changes, graph capture, torch.compile).
Run from the repo root: python docs/perf/h200-2026-11-30h/clocks.py [CSV]
"""
import statistics
import sys

from workers.parsers.nvidia_smi import parse_query
from workers.parsers.text_values import number


def main(path="docs/perf/h200-2026-11-30h/d/smi-d.csv"):
    rows = parse_query(open(path).read())
    gpu0 = [(r["timestamp"][11:23], number(r["clocks.current.sm"]), number(r["power.draw"])) for r in rows
            if r["index"] == "0"]
    stretches, cur = [], []
    for sample in gpu0:
        if sample[2] > 200:
            cur.append(sample)
        elif cur:
            stretches.append(cur)
            cur = []
    if cur:
        stretches.append(cur)
    print("| from | to | samples | median SM MHz | median W | samples > 600 W | their median MHz | their lowest MHz |")
    print("|---|---|---|---|---|---|---|---|")
    for s in stretches:
        hot = [x for x in s if x[2] > 600]
        med = f"{statistics.median(x[1] for x in hot):.0f}" if hot else "-"
        low = f"{min(x[1] for x in hot):.0f}" if hot else "-"
        print(f"| {s[0][0]} | {s[-1][0]} | {len(s)} | {statistics.median(x[1] for x in s):.0f} | "
              f"{statistics.median(x[2] for x in s):.0f} | {len(hot)} | {med} | {low} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
