"""Is ``rope_rotate_half`` (transformers' per-op bf16 rounding) slower than Inductor's kernel because of its math?

The shipped kernel (direct launch, fp fusion off) computes each product in fp32 and rounds it to bf16 by a cast,
then the sum, as transformers' separate bf16 ops do: 6 down-conversions and 6 up-conversions per pair of outputs.
Inductor's kernel for the same eager chain computes in fp32 and rounds once.  Three variants of the rotate-half
body, same tiles and launch as the shipped kernel (``kernels.rope.rope_config``), fp fusion off:

* ``casts``  - the shipped math (fp32 products, each rounded by a cast);
* ``native`` - x, cos, sin kept in bf16 and multiplied/added as bf16 (a correctly rounded product of two bf16 values
  is the fp32 product rounded once, and the sum of two bf16 values rounded from fp32 is the sum rounded once, so the
  result should equal transformers' bit for bit: checked here against the eager chain);
* ``fp32``   - one rounding at the end (Inductor's numerics): the speed of this tiling without the rounding work.

Per shape of the kernel grid (bf16, cos/sin [S, D] bf16): per-call µs (L2 flushed by a read, as the sweep) and
launch-free µs (CUDA graph) of the shipped function, the three variants and both torch.compile modes; whether each
variant equals the eager chain bit for bit.  Inductor's generated code for two shapes goes to OUT_DIR.
Run on the device: python3 docs/perf/h200-2026-11-30j/rope_half_math.py OUT_DIR
"""
import os
import sys
import tempfile

import torch
import triton
import triton.language as tl

from kernels import registry
from kernels.launch import cdiv, next_pow2
from kernels.rope import rope_config
from workers.timing import bench, copy_bandwidth_gbs, graph_time, median

dev = torch.device("cuda")
MATHS = {"casts": 0, "native": 1, "fp32": 2}


@triton.jit
def half_row_tiles(S, H, D, sxb, sxs, sxh, scs, BLOCK_S: tl.constexpr, BLOCK_H: tl.constexpr,
                   BLOCK_D: tl.constexpr):
    """This program's tile (the shipped kernel's: BLOCK_S positions x BLOCK_H heads of one batch element): offsets
    of the first halves of its rows of x/out and of its table rows, their masks, and the half width."""
    pid = tl.program_id(0)
    n_h_blocks = tl.cdiv(H, BLOCK_H)
    n_s_blocks = tl.cdiv(S, BLOCK_S)
    hb = pid % n_h_blocks
    rest = pid // n_h_blocks
    sb = rest % n_s_blocks
    b = (rest // n_s_blocks).to(tl.int64)
    s0 = (sb * BLOCK_S).to(tl.int64)
    h0 = (hb * BLOCK_H).to(tl.int64)
    ls = tl.arange(0, BLOCK_S)[:, None, None]
    lh = tl.arange(0, BLOCK_H)[None, :, None]
    d = tl.arange(0, BLOCK_D)[None, None, :]
    half = D // 2
    off = b * sxb + (s0 + ls) * sxs + (h0 + lh) * sxh + d
    coff = (s0 + ls) * scs + d
    mask = ((s0 + ls) < S) & ((h0 + lh) < H) & (d < half)
    cmask = ((s0 + ls) < S) & (d < half)
    return off, coff, mask, cmask, half


@triton.jit
def load_halves(x_ptr, cos_ptr, sin_ptr, off, coff, mask, cmask, half):
    """Both halves of the tile's rows of x and of its cos/sin rows, in their storage dtype."""
    x1 = tl.load(x_ptr + off, mask=mask, other=0.0)
    x2 = tl.load(x_ptr + off + half, mask=mask, other=0.0)
    c1 = tl.load(cos_ptr + coff, mask=cmask, other=0.0)
    c2 = tl.load(cos_ptr + coff + half, mask=cmask, other=0.0)
    s1 = tl.load(sin_ptr + coff, mask=cmask, other=0.0)
    s2 = tl.load(sin_ptr + coff + half, mask=cmask, other=0.0)
    return x1, x2, c1, c2, s1, s2


@triton.jit
def _half_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, S, H, D, sxb, sxs, sxh, scs,
                 MATH: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    off, coff, mask, cmask, half = half_row_tiles(S, H, D, sxb, sxs, sxh, scs, BLOCK_S, BLOCK_H, BLOCK_D)
    x1, x2, c1, c2, s1, s2 = load_halves(x_ptr, cos_ptr, sin_ptr, off, coff, mask, cmask, half)
    ty = out_ptr.dtype.element_ty
    if MATH == 0:
        x1f, x2f = x1.to(tl.float32), x2.to(tl.float32)
        p1 = (x1f * c1.to(tl.float32)).to(ty).to(tl.float32)
        p2 = (-x2f * s1.to(tl.float32)).to(ty).to(tl.float32)
        p3 = (x2f * c2.to(tl.float32)).to(ty).to(tl.float32)
        p4 = (x1f * s2.to(tl.float32)).to(ty).to(tl.float32)
        out1 = (p1 + p2).to(ty)
        out2 = (p3 + p4).to(ty)
    elif MATH == 1:
        out1 = x1 * c1 + (-x2) * s1
        out2 = x2 * c2 + x1 * s2
    else:
        x1f, x2f = x1.to(tl.float32), x2.to(tl.float32)
        out1 = (x1f * c1.to(tl.float32) - x2f * s1.to(tl.float32)).to(ty)
        out2 = (x2f * c2.to(tl.float32) + x1f * s2.to(tl.float32)).to(ty)
    tl.store(out_ptr + off, out1, mask=mask)
    tl.store(out_ptr + off + half, out2, mask=mask)


def variant(math):
    def run(x, cos, sin):
        batch, seq, heads, width = x.shape
        out = torch.empty_like(x)
        block_d = next_pow2(width // 2)
        cfg = rope_config(heads, block_d, x.device, False)
        grid = (batch * cdiv(seq, cfg.block_s) * cdiv(heads, cfg.block_h),)
        _half_kernel[grid](x, cos, sin, out, seq, heads, width, x.stride(0), x.stride(1), x.stride(2),
                           cos.stride(0), MATH=MATHS[math], BLOCK_S=cfg.block_s, BLOCK_H=cfg.block_h,
                           BLOCK_D=block_d, num_warps=cfg.num_warps, enable_fp_fusion=False)
        return out
    return run


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    entry = registry.get("rope_rotate_half")
    shapes = [[1, 1024, 16, 64], [1, 4096, 16, 64], [2, 4096, 16, 128], [1, 8192, 32, 64], [2, 6336, 32, 64]]
    ceiling = copy_bandwidth_gbs(dev)
    print(f"copy ceiling {ceiling:.0f} GB/s; torch {torch.__version__}, triton {triton.__version__}")
    impls = {"shipped": entry.impls["triton"].make(), **{m: variant(m) for m in MATHS},
             "compile": entry.impls["compile"].make(), "compile_max": entry.impls["compile_max"].make()}
    eager = entry.impls["eager"].make()
    print("| shape | MB | " + " | ".join(f"{n} call / graph µs" for n in impls) + " | bit-equal to eager |")
    print("|---|---|" + "---|" * len(impls) + "---|")
    for shape in shapes:
        g = torch.Generator("cpu").manual_seed(0)
        inp = entry.make_inputs(shape, torch.bfloat16, dev, g)
        mb = entry.bytes_moved(shape, torch.bfloat16) / 1e6
        ref = eager(**inp)
        equal = []
        cells = []
        for name, fn in impls.items():
            out = fn(**inp)
            if name in MATHS or name == "shipped":
                equal.append(f"{name} {torch.equal(out, ref)}")
            call = median(bench(lambda: fn(**inp), dev, flush=True, flush_mode="read"))
            graph = median(graph_time(lambda: fn(**inp), dev))
            cells.append(f"{call:.2f} / {graph:.2f}")
        print(f"| {'x'.join(map(str, shape))} | {mb:.1f} | " + " | ".join(cells) + " | " + ", ".join(equal) + " |",
              flush=True)
        if shape in ([1, 4096, 16, 64], [2, 6336, 32, 64]):
            from torch._inductor.utils import run_and_get_code
            for mode in (None, "max-autotune-no-cudagraphs"):
                torch._dynamo.reset()
                fn = torch.compile(eager, mode=mode, dynamic=False)
                _, code = run_and_get_code(fn, **inp)
                name = f"inductor-{'x'.join(map(str, shape))}-{mode or 'default'}.py"
                with open(os.path.join(out_dir, name), "w") as f:
                    f.write("\n\n".join(code))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="rope-half-math-"))
