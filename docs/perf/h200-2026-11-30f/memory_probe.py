"""Device memory of the full-size LTX-Video transformer (bf16, random weights) around inject/restore: allocated
after building, after inject (fused_qkv makes q/k/v and k/v weights views of one concatenation), the peak of one
forward at the e2e setting in eager and injected mode, the peak while restoring, and allocated after restore.
Run on the device: python3 docs/perf/h200-2026-11-30f/memory_probe.py
"""
import gc
import sys

import torch

sys.path.insert(0, "docs/perf/h200-2026-11-30")
from host_probe_2 import _ltx_inputs, ltx_transformer  # noqa: E402

GB = 1e9


def main():
    from kernels.inject import inject, restore

    model = ltx_transformer()
    kw = _ltx_inputs()
    gc.collect()
    print(f"built: allocated {torch.cuda.memory_allocated() / GB:.3f} GB")
    for mode, sel in (("eager", None), ("triton", "all"), ("triton without fused_qkv", [
            "qk_norm_rope", "adaln_rms", "add_rms_norm_modulate", "gated_residual", "rms_norm"])):
        torch.cuda.reset_peak_memory_stats()
        if sel is not None:
            inject(model, kernels=sel)
        gc.collect()
        after_inject = torch.cuda.memory_allocated()
        peak_inject = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            model(**kw)
        torch.cuda.synchronize()
        peak_fwd = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        if sel is not None:
            restore(model)
        gc.collect()
        peak_restore = torch.cuda.max_memory_allocated()
        print(f"{mode}: allocated after inject {after_inject / GB:.3f} GB (peak while injecting "
              f"{peak_inject / GB:.3f}), forward peak {peak_fwd / GB:.3f} GB, peak while restoring "
              f"{peak_restore / GB:.3f} GB, allocated after restore {torch.cuda.memory_allocated() / GB:.3f} GB",
              flush=True)


if __name__ == "__main__":
    main()
