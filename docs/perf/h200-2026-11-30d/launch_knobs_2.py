"""Launch-knob sweep of the kernels whose knobs were never swept: rope_rotate_half, rope (LTX interleaved),
qk_norm_rope and adaln_layer_norm (bf16, the registry's inputs at the shapes where they miss a target).

Each config is timed launch-free (a CUDA graph of 50 calls, workers.timing.graph_time, median of 10 replays) and per
call between events with the L2 flushed by reading (workers.timing.bench), beside torch.compile of the registry's
eager chain in both modes (default, max-autotune-no-cudagraphs), timed the same two ways in the same process.  Every
config's output must equal the default config's bit for bit (else the row says OUTPUT DIFFERS).  % = the registry's
byte model over the time, against the copy ceiling measured in this process.
Run on the device: python3 docs/perf/h200-2026-11-30d/launch_knobs_2.py [kernel ...]
"""
import sys

import torch

from kernels import registry
from kernels.adaln import _adaln_layer_norm_into
from kernels.launch import next_pow2
from kernels.qk_norm_rope import QkNormRopeConfig, _qk_norm_rope_into, qk_norm_rope_config
from kernels.rmsnorm import NormLaunch, norm_launch_config
from kernels.rope import RopeConfig, _rope_interleaved_into, _rope_rotate_half_into, rope_config
from workers.timing import bench, copy_bandwidth_gbs, graph_time, median

dev = torch.device("cuda")
bf = torch.bfloat16


def rope_configs(heads, block):
    """RopeConfig grid: tiles of 1k-8k elements, every pow2 head block, 2-8 warps (4-16 for tiles of 4k+)."""
    out = []
    for tile in (1024, 2048, 4096, 8192):
        bh = 1
        while bh <= next_pow2(heads) and bh * block <= tile:
            for w in ((2, 4, 8) if tile <= 2048 else (4, 8, 16)):
                out.append(RopeConfig(tile // (bh * block), bh, w))
            bh *= 2
    return out


def norm_configs():
    return [NormLaunch(r, w) for r in (1, 2, 4) for w in (2, 4, 8, 16)]


def sweep_cases():
    """(kernel, shape, default config, configs, call(out, inputs, cfg), out allocator)"""
    for shape in ((2, 4096, 16, 128), (1, 8192, 32, 64), (2, 6336, 32, 64), (1, 4096, 16, 64), (1, 1024, 16, 64)):
        half = next_pow2(shape[-1] // 2)
        yield ("rope_rotate_half", shape, rope_config(shape[2], half, dev, interleaved=False),
               rope_configs(shape[2], half),
               lambda out, i, cfg: _rope_rotate_half_into(out, i["x"], i["cos"], i["sin"], _config=cfg),
               lambda i: torch.empty_like(i["x"]))
    for shape in ((2, 1320, 2048), (1, 1024, 2048), (2, 6336, 2048)):
        yield ("rope", shape, rope_config(1, 2048, dev), rope_configs(1, 2048),
               lambda out, i, cfg: _rope_interleaved_into(out, i["x"], i["cos"], i["sin"], _config=cfg),
               lambda i: torch.empty_like(i["x"]))
    for shape in ((2, 1320, 2048), (2, 6336, 2048)):
        yield ("qk_norm_rope", shape, qk_norm_rope_config(2048, dev),
               [QkNormRopeConfig(r, w) for r in (1, 2) for w in (2, 4, 8, 16)],
               lambda out, i, cfg: _qk_norm_rope_into(out, i["q"], i["k"], i["q_weight"], i["k_weight"], i["cos"],
                                                      i["sin"], i["eps"], _config=cfg),
               lambda i: (torch.empty_like(i["q"]), torch.empty_like(i["k"])))
    for shape in ((1, 4096, 3072), (2, 4096, 1536), (2, 4096, 2432), (2, 1024, 3072), (1, 512, 3072)):
        yield ("adaln_layer_norm", shape, norm_launch_config(next_pow2(shape[-1]), dev, layer_norm=True),
               norm_configs(),
               lambda out, i, cfg: _adaln_layer_norm_into(out, i["x"], i["scale"], i["shift"], eps=i["eps"],
                                                          _config=cfg),
               lambda i: torch.empty_like(i["x"]))


def knobs(cfg):
    return tuple(cfg) if isinstance(cfg, tuple) else (cfg.rows_per_program, cfg.num_warps)


def snap(out):
    return tuple(t.clone() for t in (out if isinstance(out, tuple) else (out,)))


def timed(fn):
    return median(graph_time(fn, dev)), median(bench(fn, dev, rep_ms=60, flush_mode="read"))


def main():
    only = set(sys.argv[1:])
    ceiling = copy_bandwidth_gbs(dev)
    print(f"copy ceiling {ceiling:.0f} GB/s; {torch.cuda.get_device_name()}")
    print("| kernel | shape | MB | config | graph µs | % (graph) | per call µs | % (per call) |")
    print("|---|---|---|---|---|---|---|---|")
    with torch.no_grad():
        for name, shape, default, configs, call, alloc in sweep_cases():
            if only and name not in only:
                continue
            entry = registry.get(name)
            inputs = entry.make_inputs(list(shape), bf, dev, torch.Generator().manual_seed(0))
            nbytes = entry.bytes_moved(list(shape), bf)
            label = f"| {name} | {'x'.join(map(str, shape))} | {nbytes / 1e6:.1f}"

            def row(tag, gt, pc):
                print(f"{label} | {tag} | {gt:.2f} | {nbytes / gt / 1e3 / ceiling * 100:.0f} % | {pc:.2f} | "
                      f"{nbytes / pc / 1e3 / ceiling * 100:.0f} % |", flush=True)

            for impl in ("compile", "compile_max"):
                fn = entry.impls[impl].make()
                try:
                    fn(**inputs)
                    row(impl, *timed(lambda: fn(**inputs)))
                except Exception as e:  # say so, go on
                    print(f"{label} | {impl} | failed: {type(e).__name__}: {str(e)[:80]} | | | |")
            out = alloc(inputs)
            call(out, inputs, default)
            want = snap(out)
            results = []
            for cfg in configs:
                try:
                    call(out, inputs, cfg)
                    same = all(torch.equal(a, b) for a, b in zip(snap(out), want))
                    gt, pc = timed(lambda: call(out, inputs, cfg))
                except Exception as e:  # a config that does not compile or launch
                    print(f"{label} | {knobs(cfg)} | failed: {type(e).__name__}: {str(e)[:80]} | | | |")
                    continue
                results.append((gt, pc, cfg, same))
            best = min(results, key=lambda r: r[0])[2] if results else None
            for gt, pc, cfg, same in results:
                tag = str(knobs(cfg)) + (" (default)" if knobs(cfg) == knobs(default) else "") + \
                    (" **best**" if cfg == best else "") + ("" if same else " OUTPUT DIFFERS")
                row(tag, gt, pc)


if __name__ == "__main__":
    main()
