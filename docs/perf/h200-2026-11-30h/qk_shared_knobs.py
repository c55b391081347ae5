"""qk_norm_rope with cos/sin shared by the batch, as the injected LTX-Video model passes them (an fp32 [1, S, C]
table expanded over B = 2, batch stride 0): one row per program (token-major, the second row of a token reads the
table from L2) against one program per token (TABLE_ONCE: both rows, the table row loaded once), 2-16 warps.

Each config: launch-free (a CUDA graph of 50 calls, median of 10 replays) and per call between events with the L2
flushed by reading (workers.timing).  Every output must equal the per-batch-table launch's bit for bit.  Bytes: q
and k read and written, each table read once per token (the fewest bytes with shared tables).
Run on the device: python3 docs/perf/h200-2026-11-30h/qk_shared_knobs.py
"""
import torch

from kernels.entries.rope import ltx_rope_tables
from kernels.qk_norm_rope import QkNormRopeConfig, _qk_norm_rope_into, qk_norm_rope, shared_table_config
from workers.timing import bench, copy_bandwidth_gbs, graph_time, median

dev = torch.device("cuda")


def main():
    ceiling = copy_bandwidth_gbs(dev)
    print(f"copy ceiling {ceiling:.0f} GB/s; {torch.cuda.get_device_name()}")
    print("| shape | MB | config (rows, warps) | graph us | % (graph) | per call us | % (per call) |")
    print("|---|---|---|---|---|---|---|")
    for batch, seq, width in ((2, 1320, 2048), (2, 6336, 2048)):
        g = torch.Generator(device=dev).manual_seed(0)
        q = torch.randn(batch, seq, width, device=dev, generator=g).to(torch.bfloat16)
        k = torch.randn(batch, seq, width, device=dev, generator=g).to(torch.bfloat16)
        qw = (1 + 0.1 * torch.randn(width, device=dev, generator=g)).to(torch.bfloat16)
        kw = (1 + 0.1 * torch.randn(width, device=dev, generator=g)).to(torch.bfloat16)
        cos, sin = (t.to(dev) for t in ltx_rope_tables(torch.tensor([0]), seq, width))
        cos_b, sin_b = cos.expand(batch, -1, -1), sin.expand(batch, -1, -1)
        want = qk_norm_rope(q, k, qw, kw, cos_b.contiguous(), sin_b.contiguous())
        nbytes = 4 * q.numel() * 2 + 2 * seq * width * 4
        label = f"| {batch}x{seq}x{width} | {nbytes / 1e6:.1f}"
        default = shared_table_config(batch, width, dev)
        out = (torch.empty_like(q), torch.empty_like(k))
        for cfg in [QkNormRopeConfig(1, w) for w in (2, 4, 8, 16)] + [QkNormRopeConfig(2, w) for w in (4, 8, 16)]:
            def call():
                _qk_norm_rope_into(out, q, k, qw, kw, cos_b, sin_b, 1e-5, _config=cfg)
            call()
            same = torch.equal(out[0], want[0]) and torch.equal(out[1], want[1])
            gt, pc = median(graph_time(call, dev)), median(bench(call, dev, rep_ms=60, flush_mode="read"))
            tag = f"{tuple(cfg)}{' (default)' if cfg == default else ''}{'' if same else ' OUTPUT DIFFERS'}"
            print(f"{label} | {tag} | {gt:.2f} | {nbytes / gt / 1e3 / ceiling * 100:.0f} % | {pc:.2f} | "
                  f"{nbytes / pc / 1e3 / ceiling * 100:.0f} % |", flush=True)


if __name__ == "__main__":
    with torch.no_grad():
        main()
