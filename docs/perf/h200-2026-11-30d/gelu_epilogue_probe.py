"""Does cuBLASLt's GELU epilogue (torch._addmm_activation(..., use_gelu=True)) compute GELU-tanh, and what does it
save at LTX-Video's FF up-projection ([2*1320, 2048] x [2048, 8192] + bias, bf16)?

Prints the error of the epilogue against (a) eager F.gelu(F.linear(x), approximate="tanh") (GELU on the rounded
GEMM output) and (b) GELU-tanh and GELU-erf in fp64 of the fp32 GEMM, so the form it computes is visible; then the
launch-free time (CUDA graph, workers.timing.graph_time) of linear + gelu against the epilogue.
Run on the device: python3 docs/perf/h200-2026-11-30d/gelu_epilogue_probe.py
"""
import torch
import torch.nn.functional as F

from workers.timing import graph_time, median

dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(0)
for rows in (2 * 1320, 2 * 6336):
    x = torch.randn(rows, 2048, generator=g, device=dev).to(torch.bfloat16)
    w = (torch.randn(8192, 2048, generator=g, device=dev) / 2048 ** 0.5).to(torch.bfloat16)
    b = (torch.randn(8192, generator=g, device=dev) * 0.1).to(torch.bfloat16)
    with torch.no_grad():
        eager = F.gelu(F.linear(x, w, b), approximate="tanh")
        fused = torch._addmm_activation(b, x, w.t(), use_gelu=True)
        acc = (x.double() @ w.double().t() + b.double())
        ref_tanh = F.gelu(acc, approximate="tanh")
        ref_erf = F.gelu(acc)
        for name, ref in (("eager", eager.double()), ("fp64 tanh", ref_tanh), ("fp64 erf", ref_erf)):
            d = (fused.double() - ref)
            print(f"rows {rows}: epilogue vs {name}: max abs {d.abs().max():.3e}, rel L2 "
                  f"{d.norm() / ref.norm():.3e}")
        d = eager.double() - ref_tanh
        print(f"rows {rows}: eager vs fp64 tanh: max abs {d.abs().max():.3e}, rel L2 {d.norm() / ref_tanh.norm():.3e}")
        t_eager = median(graph_time(lambda: F.gelu(F.linear(x, w, b), approximate="tanh"), dev, calls=20))
        t_lin = median(graph_time(lambda: F.linear(x, w, b), dev, calls=20))
        t_fused = median(graph_time(lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True), dev, calls=20))
        print(f"rows {rows}: launch-free µs: linear {t_lin:.1f}, linear + gelu {t_eager:.1f}, epilogue {t_fused:.1f}")
