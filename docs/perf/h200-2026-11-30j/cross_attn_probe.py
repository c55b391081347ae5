"""kernels.cross_attention (whole key sequence in one tile) against PyTorch's SDPA at LTX-Video's attn2 shapes.

attn2 of every LTX-Video block: queries [B, Sq, 32, 64] from to_q, keys and values [B, 128, 32, 64] as views of the
fused key/value projection [B, 128, 4096], the additive padding mask (0 / -10000 per text token, 32 of 128 padded)
as the processor prepares it, [B, 32, 1, 128] (a per-head copy), and broadcast [B, 1, 1, 128].  Per shape: per-call
µs (L2 flushed by a read) and launch-free µs of the kernel at several launch configurations, and of
F.scaled_dot_product_attention on the [B, H, S, D] views as diffusers' native backend calls it (default backend
choice: cuDNN on the H200), with the efficient and math backends forced; max abs error of each against SDPA in fp64.
Run on the device: python3 docs/perf/h200-2026-11-30j/cross_attn_probe.py
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from kernels.cross_attention import AttnConfig, _cross_attention_into, cross_attention
from workers.timing import bench, graph_time, median

dev = torch.device("cuda")
bf = torch.bfloat16


def inputs(b, sq, h=32, d=64, t=128, valid=96, seed=0):
    g = torch.Generator("cpu").manual_seed(seed)
    q = (torch.randn(b, sq, h * d, generator=g) * 2).to(bf).to(dev).unflatten(2, (h, d))
    kv = (torch.randn(b, t, 2 * h * d, generator=g) * 2).to(bf).to(dev)
    k, v = kv[..., :h * d].unflatten(2, (h, d)), kv[..., h * d:].unflatten(2, (h, d))
    m = torch.zeros(b, 1, t)
    m[:, :, valid:] = -10000.0
    per_head = m.to(bf).to(dev).repeat_interleave(h, 0).view(b, h, 1, t)
    return q, k, v, per_head, m.to(bf).to(dev).view(b, 1, 1, t)


def sdpa(q, k, v, mask, backend=None):
    args = (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    if backend is None:
        return F.scaled_dot_product_attention(*args, attn_mask=mask).transpose(1, 2)
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(*args, attn_mask=mask).transpose(1, 2)


def main():
    print(f"torch {torch.__version__}")
    for b, sq in ((2, 1320), (2, 6336)):
        q, k, v, per_head, bcast = inputs(b, sq)
        ref = sdpa(q.double(), k.double(), v.double(), per_head.double())
        out = torch.empty(q.shape, dtype=bf, device=dev)
        impls = {
            "sdpa default (per-head mask)": lambda: sdpa(q, k, v, per_head),
            "sdpa efficient": lambda: sdpa(q, k, v, per_head, SDPBackend.EFFICIENT_ATTENTION),
            "sdpa cudnn": lambda: sdpa(q, k, v, per_head, SDPBackend.CUDNN_ATTENTION),
            "sdpa math": lambda: sdpa(q, k, v, per_head, SDPBackend.MATH),
            "kernel (per-head mask)": lambda: cross_attention(q, k, v, per_head),
            "kernel (broadcast mask)": lambda: cross_attention(q, k, v, bcast),
        }
        for bm, nw in ((64, 4), (64, 8), (128, 4), (128, 8)):
            impls[f"kernel block_m={bm} warps={nw}"] = (
                lambda bm=bm, nw=nw: _cross_attention_into(out, q, k, v, per_head, _config=AttnConfig(bm, nw)))
        print(f"== q [{b}, {sq}, 32, 64], k/v [{b}, 128, 32, 64] (views of a fused projection), mask 96 of 128")
        print("| impl | per call µs | launch-free µs | max abs err vs fp64 |")
        print("|---|---|---|---|")
        for name, fn in impls.items():
            try:
                err = (fn().double() - ref).abs().max().item()
                call = median(bench(fn, dev, flush=True, flush_mode="read"))
                graph = median(graph_time(fn, dev))
                print(f"| {name} | {call:.2f} | {graph:.2f} | {err:.2e} |", flush=True)
            except Exception as e:  # a backend that does not take these inputs
                print(f"| {name} | {type(e).__name__}: {str(e)[:100]} | | |", flush=True)


if __name__ == "__main__":
    main()
