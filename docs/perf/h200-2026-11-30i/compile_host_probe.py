"""Where the host time of a compiled LTX-Video forward goes: ``compile`` against ``triton+compile``.

The e2e runs find `triton+compile` slower than `compile` in plain calls (25.2 against 21.6 ms/step in the seventh
session's run b) although its device time is lower (17.9 against 19.5 ms): the GPU idles waiting for the host.
This probe, on one GPU with nothing else running, at the e2e setting (full-size transformer, random weights, bf16,
batch 2, 1320 video tokens, 128 text tokens), for each mode (``compile_repeated_blocks(fullgraph=True)``, the e2e
job's call, without and with ``kernels.inject.inject`` first):

1. one forward: host enqueue ms, synced ms (median of 9), device ms (CUDA events around one forward queued behind a
   ~0.1 s sleep kernel, median of 5); Dynamo's counters (graph breaks, recompiles, frames) after the calls;
2. one compiled block (block 0, its real inputs captured by an eager pre-hook before compiling): host µs to enqueue
   one call (median of 200, synced between calls), and a cProfile of 200 calls (own time, top functions);
(``compile_repeated_blocks`` gets ``options=kernels.inject.compile_options()`` where that exists, as the e2e job does.)
3. the generated code of the block's graph goes to OUT/output-code-MODE.py (the Inductor cache file that defines
   ``call``), so the launches it makes can be counted and read.
Run on the device: python3 docs/perf/h200-2026-11-30i/compile_host_probe.py [OUT]
"""
import cProfile
import glob
import io
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time

# A cache folder of this process's own, so the block's generated code can be found afterwards.
CACHE = tempfile.mkdtemp(prefix="inductor-probe-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE

import torch  # noqa: E402

sys.path.insert(0, "docs/perf/h200-2026-11-30")
from host_probe_2 import _ltx_inputs, forward_timings, ltx_transformer  # noqa: E402  (the earlier host probes)

dev = torch.device("cuda")
bf = torch.bfloat16
OUT = sys.argv[1] if len(sys.argv) > 1 else "."


def capture_block_inputs(model, kw):
    seen = {}

    def hook(mod, args, kwargs):
        if "args" not in seen:
            seen["args"] = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
            seen["kwargs"] = {k: (v.clone() if isinstance(v, torch.Tensor) else
                                  tuple(t.clone() for t in v) if isinstance(v, tuple) else v)
                              for k, v in kwargs.items()}

    h = model.transformer_blocks[0].register_forward_pre_hook(hook, with_kwargs=True)
    model(**kw)
    h.remove()
    torch.cuda.synchronize()
    return seen["args"], seen["kwargs"]


def block_host(block, args, kwargs, mode):
    for _ in range(5):
        block(*args, **kwargs)
    torch.cuda.synchronize()
    us = []
    for _ in range(200):
        t = time.perf_counter()
        block(*args, **kwargs)
        us.append((time.perf_counter() - t) * 1e6)
        torch.cuda.synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(200):
        block(*args, **kwargs)
        torch.cuda.synchronize()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
    text = s.getvalue()
    print(f"   block 0 host enqueue: median {statistics.median(us):.1f} us, p10 "
          f"{sorted(us)[20]:.1f}, p90 {sorted(us)[180]:.1f} (200 calls)")
    print(f"   cProfile of 200 block calls ({mode}), own time:")
    print(text[text.find("ncalls") - 3:])


def save_output_code(mode):
    """Copy the generated modules that define ``call`` and were written since the last copy."""
    found = []
    for path in glob.glob(os.path.join(CACHE, "**", "*.py"), recursive=True):
        if path in save_output_code.seen:
            continue
        save_output_code.seen.add(path)
        with open(path) as f:
            text = f.read()
        if "def call(" in text:
            found.append((path, text))
    for i, (path, text) in enumerate(found):
        name = os.path.join(OUT, f"output-code-{mode.replace('+', '-')}-{i}.py")
        shutil.copyfile(path, name)
        launches = text.count(".run(")
        print(f"   generated module {i}: {len(text.splitlines())} lines, {launches} '.run(' launches -> {name}")


save_output_code.seen = set()


def compile_kwargs():
    """What the e2e job passes at this commit: kernels.inject.compile_options where it exists (from the launch
    change on), nothing before it."""
    try:
        from kernels.inject import compile_options
    except ImportError:
        return {}
    return {"options": compile_options()}


def main():
    from kernels.inject import inject, restore

    model = ltx_transformer()
    kw = _ltx_inputs()
    with torch.no_grad():
        for mode in ("compile", "triton+compile"):
            torch._dynamo.reset()
            torch._dynamo.utils.counters.clear()
            if mode.startswith("triton"):
                inject(model)
            args, kwargs = capture_block_inputs(model, kw)
            t = time.perf_counter()
            model.compile_repeated_blocks(fullgraph=True, **compile_kwargs())
            model(**kw)
            torch.cuda.synchronize()
            print(f"== {mode}: first call (compiles) {time.perf_counter() - t:.1f} s", flush=True)
            e, s, d = forward_timings(model, kw)
            print(f"   forward: host enqueue {e:.2f} ms, synced {s:.2f} ms, device {d:.2f} ms")
            c = torch._dynamo.utils.counters
            print(f"   dynamo counters: stats {dict(c['stats'])}, graph_break {dict(c['graph_break'])}, "
                  f"recompiles {dict(c.get('recompiles', {}))}")
            block_host(model.transformer_blocks[0], args, kwargs, mode)
            save_output_code(mode)
            for m in model.modules():
                if getattr(m, "_compiled_call_impl", None) is not None:
                    m._compiled_call_impl = None
            torch._dynamo.reset()
            if mode.startswith("triton"):
                restore(model)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
