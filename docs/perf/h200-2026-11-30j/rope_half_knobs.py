"""rope_rotate_half with native half math (22d2cde): launch knobs and cache hints against torch.compile.

After the native math the kernel is within 1-3 % of Inductor's at 17-105 MB (b/results-kernels-rope-half.jsonl).
The tiles were chosen (``kernels.rope.rope_config``: 1024 elements per half-row load, warps by row_num_warps) when
the math cost more.  Here the rotate-half body of ``kernels.rope._rope_kernel`` with native half math, fp fusion off,
over elements per half load (512-4096) x warps (2, 4, 8) x cache hints (none; x and out streamed with
evict_first and the tables kept with evict_last, as Inductor marks its table loads): per-call µs (L2 flushed by a
read, as the sweep) and launch-free µs at the five grid shapes, with both torch.compile modes in the same process.
Every variant is checked bit for bit against the eager chain.
Run on the device: python3 docs/perf/h200-2026-11-30j/rope_half_knobs.py
"""
import itertools

import torch
import triton
import triton.language as tl

from kernels import registry
from kernels.launch import cdiv, next_pow2
from rope_half_math import half_row_tiles, load_halves  # this folder (the script's own)
from workers.timing import bench, graph_time, median

dev = torch.device("cuda")


@triton.jit
def _knob_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, S, H, D, sxb, sxs, sxh, scs,
                 HINTS: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    off, coff, mask, cmask, half = half_row_tiles(S, H, D, sxb, sxs, sxh, scs, BLOCK_S, BLOCK_H, BLOCK_D)
    if HINTS:
        x1 = tl.load(x_ptr + off, mask=mask, other=0.0, eviction_policy="evict_first")
        x2 = tl.load(x_ptr + off + half, mask=mask, other=0.0, eviction_policy="evict_first")
        c1 = tl.load(cos_ptr + coff, mask=cmask, other=0.0, eviction_policy="evict_last")
        c2 = tl.load(cos_ptr + coff + half, mask=cmask, other=0.0, eviction_policy="evict_last")
        s1 = tl.load(sin_ptr + coff, mask=cmask, other=0.0, eviction_policy="evict_last")
        s2 = tl.load(sin_ptr + coff + half, mask=cmask, other=0.0, eviction_policy="evict_last")
    else:
        x1, x2, c1, c2, s1, s2 = load_halves(x_ptr, cos_ptr, sin_ptr, off, coff, mask, cmask, half)
    out1 = x1 * c1 - x2 * s1
    out2 = x2 * c2 + x1 * s2
    if HINTS:
        tl.store(out_ptr + off, out1, mask=mask, eviction_policy="evict_first")
        tl.store(out_ptr + off + half, out2, mask=mask, eviction_policy="evict_first")
    else:
        tl.store(out_ptr + off, out1, mask=mask)
        tl.store(out_ptr + off + half, out2, mask=mask)


def variant(per_load, warps, hints):
    def run(x, cos, sin):
        batch, seq, heads, width = x.shape
        out = torch.empty_like(x)
        block_d = next_pow2(width // 2)
        block_h = min(next_pow2(heads), max(1, per_load // block_d))
        block_s = max(1, per_load // (block_d * block_h))
        grid = (batch * cdiv(seq, block_s) * cdiv(heads, block_h),)
        _knob_kernel[grid](x, cos, sin, out, seq, heads, width, x.stride(0), x.stride(1), x.stride(2),
                           cos.stride(0), HINTS=hints, BLOCK_S=block_s, BLOCK_H=block_h, BLOCK_D=block_d,
                           num_warps=warps, enable_fp_fusion=False)
        return out
    return run


def main():
    entry = registry.get("rope_rotate_half")
    shapes = [[1, 1024, 16, 64], [1, 4096, 16, 64], [2, 4096, 16, 128], [1, 8192, 32, 64], [2, 6336, 32, 64]]
    knobs = list(itertools.product((512, 1024, 2048, 4096), (2, 4, 8), (False, True)))
    impls = {"shipped": entry.impls["triton"].make(), "compile": entry.impls["compile"].make(),
             "compile_max": entry.impls["compile_max"].make()}
    impls.update({f"{p}/{w}w/{'hints' if h else 'plain'}": variant(p, w, h) for p, w, h in knobs})
    eager = entry.impls["eager"].make()
    for shape in shapes:
        inp = entry.make_inputs(shape, torch.bfloat16, dev, torch.Generator("cpu").manual_seed(0))
        ref = eager(**inp)
        rows = []
        for name, fn in impls.items():
            exact = torch.equal(fn(**inp), ref)
            call = median(bench(lambda: fn(**inp), dev, flush=True, flush_mode="read"))
            graph = median(graph_time(lambda: fn(**inp), dev))
            rows.append((call, graph, name, exact))
        best_compile = min(c for c, _, n, _ in rows if n.startswith("compile"))
        print(f"== {'x'.join(map(str, shape))}: per call µs / launch-free µs / x best compile per call / bit-exact")
        for call, graph, name, exact in sorted(rows):
            print(f"  {name:22s} {call:7.2f} {graph:7.2f}  {best_compile / call:5.3f}x  {exact}")
        print(flush=True)


if __name__ == "__main__":
    main()
