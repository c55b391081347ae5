"""Why kernels.cross_attention ran 3.6x slower compiled by Inductor inside LTX-Video's blocks (run e: 62-64 us per
call against 17.4 us launched directly).  Written after the ninth session's device time was spent; first run in the
tenth session at 21e5d74 (docs/perf/h200-2026-11-30k/a/): the compiled call alone was as slow, and Inductor's
launch typed the kernel's float argument ``qk_scale`` as fp64, which the kernel then casts (since the tenth
session's fix the switch below no longer exists, attn2 takes the kernel under compile, and setting it does nothing).

At attn2's shape (q [2, 1320, 32, 64], k/v [2, 128, 32, 64], the per-head mask [2, 32, 1, 128], bf16):
1. The direct launch and ``torch.compile(fullgraph=True)`` of a function that only calls the kernel, each timed
   launch-free; the generated code's launch of the kernel (``run_and_get_code``) saved to OUT_DIR.
2. The same inside the injected model's block: one LTX-Video block compiled as the e2e job compiles it (fullgraph,
   ``compile_options()``), with ``kernels.inject.ltx.CROSS_ATTENTION_UNDER_COMPILE`` on, timed launch-free per
   block call.
3. For every compiled variant of ``_cross_attention_kernel`` this process holds (Triton's cache of the direct
   launch, and Inductor's autotuners): num_warps, num_stages, shared memory, and the ``tt.divisibility`` attributes
   of its arguments in the TTIR, to compare the two compilations.
Run on the device: python3 docs/perf/h200-2026-11-30j/xattn_compile_probe.py OUT_DIR
"""
import gc
import os
import re
import sys
import tempfile

import torch

from kernels.cross_attention import _cross_attention_kernel, cross_attention
from workers.timing import graph_time, median

dev = torch.device("cuda")
bf = torch.bfloat16


def attn2_inputs(b=2, sq=1320, h=32, d=64, t=128):
    g = torch.Generator("cpu").manual_seed(0)
    q = torch.randn(b, sq, h * d, generator=g).to(bf).to(dev).unflatten(2, (h, d))
    k = torch.randn(b, t, h * d, generator=g).to(bf).to(dev).unflatten(2, (h, d))
    v = torch.randn(b, t, h * d, generator=g).to(bf).to(dev).unflatten(2, (h, d))
    m = torch.zeros(b, 1, t)
    m[:, :, 96:] = -10000.0
    return q, k, v, m.to(bf).to(dev).repeat_interleave(h, 0).view(b, h, 1, t)


def describe(label, compiled):
    md = compiled.metadata
    ttir = compiled.asm.get("ttir", "")
    head = ttir[ttir.find("tt.func"):ttir.find("{", ttir.find("tt.func"))]
    divisible = re.findall(r"%arg(\d+): [^,)]*\{tt\.divisibility = (\d+)", head)
    print(f"  {label}: num_warps={md.num_warps} num_stages={md.num_stages} shared={md.shared} "
          f"divisibility={dict((int(a), int(v)) for a, v in divisible)}")


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    from torch._inductor.utils import run_and_get_code

    from kernels.inject import compile_options

    torch._inductor.config.static_launch_user_defined_triton_kernels = True
    q, k, v, mask = attn2_inputs()
    direct = median(graph_time(lambda: cross_attention(q, k, v, mask), dev))
    fn = torch.compile(lambda q, k, v, m: cross_attention(q, k, v, m), fullgraph=True, options=compile_options())
    _, code = run_and_get_code(fn, q, k, v, mask)
    with open(os.path.join(out_dir, "xattn-alone-inductor.py"), "w") as f:
        f.write("\n\n".join(code))
    alone = median(graph_time(lambda: fn(q, k, v, mask), dev))
    print(f"1. launch-free us per call: direct {direct:.2f}, torch.compile of the call alone {alone:.2f}")

    from diffusers import LTXVideoTransformer3DModel

    import kernels.inject.ltx as ltx
    from kernels.inject import inject

    sys.path.insert(0, "docs/perf/h200-2026-11-30")
    from host_probe_2 import _ltx_inputs

    torch.manual_seed(0)
    with torch.device(dev):
        model = LTXVideoTransformer3DModel(num_layers=1).to(bf).eval()
    inject(model)
    kw = _ltx_inputs()
    ltx.CROSS_ATTENTION_UNDER_COMPILE = True  # attn2 takes the kernel while traced
    with torch.no_grad():
        model(**kw)
        eager = median(graph_time(lambda: model(**kw), dev, calls=10))
        model.compile_repeated_blocks(fullgraph=True, options=compile_options())
        _, code = run_and_get_code(model, **kw)
        with open(os.path.join(out_dir, "xattn-block-inductor.py"), "w") as f:
            f.write("\n\n".join(code))
        compiled = median(graph_time(lambda: model(**kw), dev, calls=10))
    print(f"2. one-block model, launch-free ms per forward: eager {eager / 1e3:.3f}, compiled {compiled / 1e3:.3f}")
    print("3. compiled variants of _cross_attention_kernel:")
    from kernels.launch import _DIRECT
    direct_launcher = _DIRECT.get(_cross_attention_kernel)
    for key, (compiled_kernel, _constexprs, _raw) in (direct_launcher.cache.items() if direct_launcher else ()):
        describe(f"direct launch {str(key[1])[:60]}", compiled_kernel)
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    for o in gc.get_objects():
        try:
            if isinstance(o, CachingAutotuner) and o.fn.__name__.startswith("_cross_attention_kernel"):
                for launcher in o.launchers:
                    binary = getattr(launcher, "bin", None) or getattr(launcher, "kernel", None)
                    if binary is not None and hasattr(binary, "metadata"):
                        describe(f"Inductor {o.fn.__name__}", binary)
                    else:
                        print(f"  Inductor {o.fn.__name__}: launcher {type(launcher).__name__}, "
                              f"config {launcher.config}")
        except ReferenceError:
            continue


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="xattn-compile-probe-"))
