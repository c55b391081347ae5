"""Sweep of the row kernels' launch knobs (rows per program x warps) on the device, launch-free.

For rms_norm (weight, numerics torch), adaln_rms ([B,1,C] scale/shift, LTX-Video's t2v layout) and
add_rms_norm_modulate, bf16, at LTX-Video's shapes and the >= 32 MB shapes of the targets, each
(rows_per_program, num_warps) is timed by replaying a CUDA graph of 50 calls (workers.timing.graph_time: no launch
gaps, median of 10 replays) and also per call between events with the L2 flushed by reading (workers.timing.bench).
The current default (kernels.rmsnorm.norm_launch_config) is marked; % = the byte model over the time against the
copy ceiling measured in the same process.  Every config's output is checked equal to the default's first.
Run on the device: python3 docs/perf/h200-2026-11-30/launch_knobs.py
"""
import torch

from kernels.adaln import _adaln_rms_into
from kernels.residual_norm import _add_rms_norm_modulate_into
from kernels.rmsnorm import NormLaunch, _rms_norm_into, norm_launch_config
from workers.timing import bench, copy_bandwidth_gbs, graph_time, median

dev = torch.device("cuda")
bf = torch.bfloat16
SHAPES = [(2, 1320, 2048), (2, 6336, 2048), (1, 8192, 2048), (4, 4096, 3072), (4, 1024, 2048)]
ROWS = (1, 2, 4)
WARPS = (2, 4, 8, 16)


def cases(shape):
    g = torch.Generator(device=dev).manual_seed(0)
    b, s, c = shape
    x = torch.randn(shape, generator=g, device=dev).to(bf)
    r = torch.randn(shape, generator=g, device=dev).to(bf)
    w = torch.randn(c, generator=g, device=dev).to(bf)
    sc = torch.randn(b, 1, c, generator=g, device=dev).to(bf)
    sh = torch.randn(b, 1, c, generator=g, device=dev).to(bf)
    out, out2 = torch.empty_like(x), torch.empty_like(x)
    n = x.numel() * 2
    return {
        # kernel: (call with a config, bytes read + written)
        "rms_norm": (lambda cfg: _rms_norm_into(out, x, w, 1e-6, _config=cfg), 2 * n + 2 * c,
                     lambda: (out.clone(),)),
        "adaln_rms": (lambda cfg: _adaln_rms_into(out, x, sc, sh, None, 1e-6, _config=cfg), 2 * n + 4 * b * c,
                      lambda: (out.clone(),)),
        "add_rms_norm_modulate": (lambda cfg: _add_rms_norm_modulate_into((out, out2), x, r, sc, sh, 1e-6,
                                                                          _config=cfg),
                                  4 * n + 4 * b * c, lambda: (out.clone(), out2.clone())),
    }


def main():
    ceiling = copy_bandwidth_gbs(dev)
    print(f"copy ceiling {ceiling:.0f} GB/s")
    print("| kernel | shape | MB | rows x warps | graph µs | % (graph) | per call µs (flush read) | % (per call) |")
    print("|---|---|---|---|---|---|---|---|")
    with torch.no_grad():
        for shape in SHAPES:
            for name, (call, nbytes, snap) in cases(shape).items():
                block = 1 << (shape[-1] - 1).bit_length()
                default = norm_launch_config(block, dev)
                call(default)
                want = snap()
                rows = []
                for r in ROWS:
                    for w in WARPS:
                        cfg = NormLaunch(r, w)
                        try:
                            call(cfg)
                            same = all(torch.equal(a, b) for a, b in zip(snap(), want))
                            gt = median(graph_time(lambda: call(cfg), dev))
                            pc = median(bench(lambda: call(cfg), dev, rep_ms=60, flush_mode="read"))
                        except Exception as e:  # a config that does not compile or launch: say so, go on
                            print(f"| {name} | {'x'.join(map(str, shape))} | | {r} x {w} | failed: "
                                  f"{type(e).__name__}: {str(e)[:80]} | | | |")
                            continue
                        rows.append((gt, r, w, pc, same))
                best = min(rows)[0] if rows else None
                for gt, r, w, pc, same in rows:
                    mark = (" (default)" if (r, w) == (default.rows_per_program, default.num_warps) else "") + \
                           (" **best**" if gt == best else "") + ("" if same else " OUTPUT DIFFERS")
                    print(f"| {name} | {'x'.join(map(str, shape))} | {nbytes / 1e6:.1f} | {r} x {w}{mark} | "
                          f"{gt:.2f} | {nbytes / gt / 1e3 / ceiling * 100:.0f} % | {pc:.2f} | "
                          f"{nbytes / pc / 1e3 / ceiling * 100:.0f} % |")


if __name__ == "__main__":
    main()
