"""Where ``triton+compile`` spends the ~3 ms of host time per forward that ``compile`` does not (the eighth session's
ab_probe: 32.0 against 29.1 ms per forward, both host-bound).

The two models as ab_probe builds them (full-size LTX-Video transformer, random weights, bf16, the e2e inputs;
stock and injected, each ``compile_repeated_blocks(fullgraph=True, options=compile_options())``).  For each, after
warm-up:

1. cProfile over 5 forwards: own time and calls per forward by function; then the functions whose own time per
   forward differs most between the two models, and the Python calls per forward.
2. torch.profiler with CPU activity only (no CUPTI) over 3 forwards: the ops by self CPU time.

Run on the device: python3 docs/perf/h200-2026-11-30j/host_profile.py
"""
import cProfile
import collections
import os
import pstats
import sys

import torch

sys.path.insert(0, "docs/perf/h200-2026-11-30")
from host_probe_2 import _ltx_inputs, compile_pair, forward_timings  # noqa: E402

dev = torch.device("cuda")
N_PROFILED = 5


def by_function(prof: cProfile.Profile) -> tuple[dict, int]:
    """{(file basename, line, function): (own ms per forward, calls per forward)}, Python calls per forward."""
    stats = pstats.Stats(prof).stats
    out = collections.defaultdict(lambda: [0.0, 0.0])
    total = 0
    for (path, line, func), (_cc, nc, tt, _ct, _callers) in stats.items():
        key = (os.path.basename(path) if path != "~" else "~", line, func)
        out[key][0] += tt * 1e3 / N_PROFILED
        out[key][1] += nc / N_PROFILED
        total += nc
    return dict(out), total // N_PROFILED


def main():
    from kernels.inject import compile_options

    models = compile_pair()
    kw = _ltx_inputs()
    funcs = {}
    with torch.no_grad():
        for name, m in models.items():
            m.compile_repeated_blocks(fullgraph=True, options=compile_options())
            enq, synced, device = forward_timings(m, kw)
            print(f"{name}: host enqueue {enq:.2f} ms, synced {synced:.2f} ms, device {device:.2f} ms per forward",
                  flush=True)
        for name, m in models.items():
            torch.cuda.synchronize()
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(N_PROFILED):
                m(**kw)
            prof.disable()
            torch.cuda.synchronize()
            funcs[name], calls = by_function(prof)
            own = sum(v[0] for v in funcs[name].values())
            print(f"\n== {name}: cProfile, per forward: {own:.2f} ms own time in all functions, {calls} Python calls")
            print("| own ms | calls | function |")
            print("|---|---|---|")
            for key, (ms, nc) in sorted(funcs[name].items(), key=lambda kv: -kv[1][0])[:30]:
                print(f"| {ms:.3f} | {nc:.0f} | {key[0]}:{key[1]} {key[2]} |")
        a, b = funcs["compile"], funcs["triton+compile"]
        keys = set(a) | set(b)
        diff = sorted(keys, key=lambda k: -abs(b.get(k, [0, 0])[0] - a.get(k, [0, 0])[0]))
        print("\n== own ms per forward, triton+compile minus compile (largest differences)")
        print("| diff ms | compile ms (calls) | triton+compile ms (calls) | function |")
        print("|---|---|---|---|")
        for k in diff[:40]:
            (ta, na), (tb, nb) = a.get(k, [0.0, 0.0]), b.get(k, [0.0, 0.0])
            print(f"| {tb - ta:+.3f} | {ta:.3f} ({na:.0f}) | {tb:.3f} ({nb:.0f}) | {k[0]}:{k[1]} {k[2]} |")
        for name, m in models.items():
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                for _ in range(3):
                    m(**kw)
                torch.cuda.synchronize()
            print(f"\n== {name}: torch.profiler, CPU only, 3 forwards")
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=70))


if __name__ == "__main__":
    main()
