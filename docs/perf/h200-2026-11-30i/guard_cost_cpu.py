"""The Dynamo guards of one compiled LTX-Video block, stock against injected: how many, and what one check costs
(CPU, this repository's development machine; Dynamo's guards are host work whatever the device).

A small LTX-Video configuration (2 blocks, 4 heads of 32, the real block code),
``compile_repeated_blocks(fullgraph=True, backend="eager")``.  Injected, the kernels run in Triton's interpreter,
which Dynamo cannot trace on fake tensors, so for this experiment only each kernelfleet op gets a stand-in fake kernel
(the output shapes); the traced Python is the block code the GPU compile traces, branches on the device aside.  The
block's cache entry is then checked against its own call's locals (arguments and the forward's closure variables),
5 rounds of 20000 times.  With TORCH_LOGS=guards the log has every guard.
Run: python docs/perf/h200-2026-11-30i/guard_cost_cpu.py stock|triton
"""
import inspect
import os
import sys
import time

os.environ["TRITON_INTERPRET"] = "1"  # before kernels is imported

import torch  # noqa: E402
from diffusers import LTXVideoTransformer3DModel  # noqa: E402
from torch._dynamo.eval_frame import _debug_get_cache_entry_list  # noqa: E402

from kernels.inject import inject  # noqa: E402


def stand_in_fakes():
    like = lambda x, *a, **k: torch.empty_like(x)  # noqa: E731
    pair = lambda a, b, *rest, **k: (torch.empty_like(a), torch.empty_like(a))  # noqa: E731
    for name, fn in {"adaln_rms": like, "rms_norm": like, "gated_residual": like, "add_rms_norm_modulate": pair,
                     "qk_norm_rope": lambda q, k, *a, **kw: (torch.empty_like(q), torch.empty_like(k))}.items():
        torch.library.register_fake(f"kernelfleet::{name}", fn, allow_override=True)


def main(mode: str) -> None:
    torch.manual_seed(0)
    m = LTXVideoTransformer3DModel(num_layers=2, num_attention_heads=4, attention_head_dim=32, cross_attention_dim=128,
                                   caption_channels=64).eval()
    b, f, h, w, txt = 2, 2, 4, 4, 8
    kw = dict(hidden_states=torch.randn(b, f * h * w, 128), encoder_hidden_states=torch.randn(b, txt, 64),
              timestep=torch.full((b,), 700.0), encoder_attention_mask=torch.ones(b, txt), num_frames=f, height=h,
              width=w, rope_interpolation_scale=(8 / 25, 32, 32), return_dict=False)
    if mode == "triton":
        inject(m)
        stand_in_fakes()
    blk = m.transformer_blocks[0]
    seen = {}
    hook = blk.register_forward_pre_hook(lambda mod, a, k: seen.setdefault("call", (a, k)), with_kwargs=True)
    torch.set_grad_enabled(False)
    m(**kw)  # eager: the block's real arguments
    hook.remove()
    m.compile_repeated_blocks(fullgraph=True, backend="eager")
    m(**kw)
    fwd = getattr(blk.forward, "__func__", blk.forward)
    args, kwargs = seen["call"]
    bound = inspect.signature(fwd).bind(blk, *args, **kwargs)
    bound.apply_defaults()
    f_locals = dict(bound.arguments)
    f_locals.update(zip(fwd.__code__.co_freevars, (c.cell_contents for c in fwd.__closure__ or ())))
    entries = _debug_get_cache_entry_list(fwd.__code__)
    gm = entries[0].guard_manager
    verdict = gm.check_verbose(f_locals)
    assert verdict.result, verdict.verbose_code_parts
    n, rounds = 20000, []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            gm.check(f_locals)
        rounds.append((time.perf_counter() - t) / n * 1e6)
    where = f"{fwd.__code__.co_filename.split('/')[-1]}:{fwd.__code__.co_name}"
    print(f"{mode}: {len(entries)} cache entry for {where}; guard check, us per call, 5 rounds of {n}: "
          f"{', '.join(f'{r:.2f}' for r in rounds)} (lowest {min(rounds):.2f})")


if __name__ == "__main__":
    main(sys.argv[1])
