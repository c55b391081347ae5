"""``compile`` against ``triton+compile`` in plain calls, interleaved in one process (the e2e job runs its modes one
after the other, and this session's hosts changed speed by up to 1.5x between and within runs).

Two copies of the full-size LTX-Video transformer (random weights, bf16, the e2e inputs), one stock and one with the
kernels injected, each ``compile_repeated_blocks(fullgraph=True, options=kernels.inject.compile_options())`` as the
e2e job does.  Then 8 rounds, each timing 7 forwards of one model and then 7 of the other (the order alternates by
round): host enqueue ms and synced ms per forward.  Device ms per forward (behind a ~0.1 s sleep kernel, median of
5) once per model at the end.  Also whether the injected model's kernels were launched by Inductor's static launcher.
Run on the device: python3 docs/perf/h200-2026-11-30i/ab_probe.py
"""
import gc
import statistics
import sys
import time

import torch

sys.path.insert(0, "docs/perf/h200-2026-11-30")
from host_probe_2 import _ltx_inputs, compile_pair, forward_device_ms, interleaved_host_ms  # noqa: E402

dev = torch.device("cuda")


def main():
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner, HeuristicType

    from kernels.inject import compile_options

    models = compile_pair()
    kw = _ltx_inputs()
    with torch.no_grad():
        for name, m in models.items():
            t = time.perf_counter()
            m.compile_repeated_blocks(fullgraph=True, options=compile_options())
            for _ in range(3):
                m(**kw)
            torch.cuda.synchronize()
            print(f"{name}: compiled and warmed in {time.perf_counter() - t:.1f} s", flush=True)
        user = []
        for o in gc.get_objects():
            try:
                if isinstance(o, CachingAutotuner) and o.heuristic_type == HeuristicType.USER_AUTOTUNE:
                    user.append((o.fn.__name__, all(getattr(x, "_is_static", False) for x in o.launchers)))
            except ReferenceError:
                continue
        print(f"user-defined kernels and whether statically launched: {sorted(set(user))}")
        per_round = []

        def report(r, row):
            per_round.append(row)
            print(f"round {r}: " + ", ".join(f"{n} synced {row[n]:.2f} ms" for n in models), flush=True)

        enq, tot = interleaved_host_ms(models, kw, 8, on_round=report)
        print("| model | host enqueue ms (median of 56) | synced ms (median of 56) | rounds triton+compile faster | "
              "device ms |")
        print("|---|---|---|---|---|")
        wins = sum(1 for row in per_round if row["triton+compile"] < row["compile"])
        for name, m in models.items():
            print(f"| {name} | {statistics.median(enq[name]):.2f} | {statistics.median(tot[name]):.2f} | "
                  f"{wins if name == 'triton+compile' else ''} of 8 | {forward_device_ms(m, kw):.2f} |")


if __name__ == "__main__":
    main()
