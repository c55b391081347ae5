"""Where the host time of an eager call goes, on the device, with nothing else running (one GPU).

1. Host microseconds per call (1000 back-to-back calls at [1,16,2048] bf16, one sync at the end: the kernels take
   ~2-3 us on the GPU, so the loop runs at the host's pace) of PyTorch yardsticks and of every public kernel
   function the LTX-Video injection calls, through each launch path of ``kernels.launch`` (VARIANTS below).
2. The full-size LTX-Video transformer (default config, random weights, bf16) at the e2e setting (batch 2, 1320
   video tokens, 128 text tokens), eager and injected: the host time to enqueue one forward, the synced time of one
   forward, whether anything in the forward synchronises with the device (torch.cuda.set_sync_debug_mode), and a
   cProfile of one forward (own time, top functions).
Run on the device: python3 docs/perf/h200-2026-11-30/host_probe_2.py
"""
import contextlib
import copy
import cProfile
import io
import pstats
import statistics
import time
import warnings

import torch
import torch.nn.functional as F

import kernels
from host_probe import host_us  # (this folder's first probe)
from kernels import launch

dev = torch.device("cuda")
bf = torch.bfloat16


def per_call():
    torch.manual_seed(0)
    x = torch.randn(1, 16, 2048, device=dev, dtype=bf)
    r = torch.randn_like(x)
    sc, sh = torch.randn(1, 1, 2048, device=dev, dtype=bf), torch.randn(1, 1, 2048, device=dev, dtype=bf)
    norm = torch.nn.RMSNorm(2048, eps=1e-5, device=dev, dtype=bf)
    lin = torch.nn.Linear(2048, 2048, device=dev, dtype=bf)
    w, w2 = norm.weight, torch.nn.RMSNorm(2048, eps=1e-5, device=dev, dtype=bf).weight  # norm_q's, norm_k's
    cos, sin = torch.randn(1, 16, 2048, device=dev), torch.randn(1, 16, 2048, device=dev)
    q4 = torch.randn(1, 32, 16, 64, device=dev, dtype=bf)
    yard = {
        "torch add": lambda: x + r,
        "x * (1 + s) + t (3 ops)": lambda: x * (1 + sc) + sh,
        "nn.RMSNorm": lambda: norm(x),
        "nn.Linear 2048x2048": lambda: lin(x),
        "sdpa [1,32,16,64]": lambda: F.scaled_dot_product_attention(q4, q4, q4),
    }
    ours = {
        "adaln_rms": lambda: kernels.adaln_rms(x, sc, sh),
        "add_rms_norm_modulate": lambda: kernels.add_rms_norm_modulate(x, r, sc, sh),
        "rms_norm (weight)": lambda: kernels.rms_norm(x, w, 1e-5),
        "qk_norm_rope": lambda: kernels.qk_norm_rope(x, r, w, w2, cos, sin, 1e-5),
        "gelu_tanh": lambda: kernels.gelu_tanh(x),
    }
    print("== 1. host us per call, [1,16,2048] bf16, no_grad (1000 calls, one sync)")
    with torch.no_grad():
        for name, fn in yard.items():
            print(f"  {name:28s} {host_us(fn, n=1000, warmup=50)[0]:7.1f}")
        paths = {name: {} for name in ours}
        for variant in VARIANTS:
            with _variant(variant):
                if variant == "plan, no launch":
                    for fn in ours.values():
                        fn()  # record the plans
                    _without_launch()
                for name, fn in ours.items():
                    paths[name][variant] = host_us(fn, n=1000, warmup=50)[0]
    print(f"  {'kernel':28s}" + "".join(f" {v:>14s}" for v in VARIANTS))
    for name, p in paths.items():
        print(f"  {name:28s}" + "".join(f" {p[v]:14.1f}" for v in VARIANTS))


# plan: a repeat call replays its launch plan (the default); no plan: every call takes the full path (checks,
# set-up) and the compiled kernel's C launch; triton: Triton's own JITFunction.run (KERNELFLEET_FAST_LAUNCH=0);
# plan, no launch: the plan's replay with the C launch replaced by a no-op (our Python alone)
VARIANTS = ("plan", "no plan", "triton", "plan, no launch")


@contextlib.contextmanager
def _variant(name):
    saved_find = launch.LaunchPlans.find
    launch.forget_launches()
    if name == "no plan":
        launch.LaunchPlans.find = lambda self, *items: (None, None)
    if name == "triton":
        launch.FAST_LAUNCH = False
    try:
        yield
    finally:
        launch.LaunchPlans.find = saved_find
        launch.FAST_LAUNCH = True


def _without_launch():
    """Make each recorded plan's C launch a no-op."""
    for plans in launch.PLANS.values():
        for key, plan in list(plans.plans.items()):
            if isinstance(plan, launch._Plan):
                plans.plans[key] = launch._Plan(tuple(
                    ((lambda *a: None, prefix),) + tuple(rest) for (fn, prefix), *rest in plan.launches))


def _ltx_inputs():
    g = torch.Generator("cpu").manual_seed(0)
    b, f, h, w, txt = 2, 4, 15, 22, 128
    mask = torch.ones(b, txt)
    mask[:, 96:] = 0
    return dict(hidden_states=torch.randn(b, f * h * w, 128, generator=g).to(dev, bf),
                encoder_hidden_states=torch.randn(b, txt, 4096, generator=g).to(dev, bf),
                timestep=torch.full((b,), 700.0, device=dev), encoder_attention_mask=mask.to(dev),
                num_frames=f, height=h, width=w, rope_interpolation_scale=(8 / 25, 32, 32), return_dict=False)


def ltx_transformer():
    """The full-size LTX-Video transformer (diffusers' default config), random weights from seed 0, bf16, on the GPU,
    in eval mode: the model every host and gap probe times."""
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    with torch.device(dev):
        return LTXVideoTransformer3DModel().to(bf).eval()


def compile_pair() -> dict:
    """``{"compile": ltx_transformer(), "triton+compile": a copy of it with the kernels injected}``, not compiled
    yet: the two models the compiled A/B probes compare."""
    from kernels.inject import inject

    stock = ltx_transformer()
    injected = copy.deepcopy(stock)
    inject(injected)
    return {"compile": stock, "triton+compile": injected}


def forward_host_ms(model, kw, n):
    """Per forward, ``n`` of them: the host time to enqueue it and the time until it finished (synced after each)."""
    enq, tot = [], []
    for _ in range(n):
        t = time.perf_counter()
        model(**kw)
        enq.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
        tot.append((time.perf_counter() - t) * 1e3)
    return enq, tot


def forward_device_ms(model, kw, n=5):
    """Median device ms of one forward, each queued behind a ~0.1 s sleep kernel so the host is ahead."""
    out = []
    for _ in range(n):
        torch.cuda._sleep(200_000_000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        model(**kw)
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return statistics.median(out)


def forward_timings(model, kw, n=9):
    """After 3 warm-up forwards: median host enqueue ms and synced ms of ``n`` forwards, median device ms of 5."""
    for _ in range(3):
        model(**kw)
    torch.cuda.synchronize()
    enq, tot = forward_host_ms(model, kw, n)
    return statistics.median(enq), statistics.median(tot), forward_device_ms(model, kw)


def interleaved_host_ms(models: dict, kw, rounds: int, n: int = 7, on_round=None):
    """``rounds`` rounds of ``n`` forwards of each model (``forward_host_ms``), the order of the models reversed
    every other round: per model, every forward's host enqueue ms and synced ms.  ``on_round(r, medians)`` after
    each round, with each model's median synced ms of that round."""
    enq = {name: [] for name in models}
    tot = {name: [] for name in models}
    for r in range(rounds):
        medians = {}
        for name in (list(models) if r % 2 == 0 else list(models)[::-1]):
            e, s = forward_host_ms(models[name], kw, n)
            enq[name] += e
            tot[name] += s
            medians[name] = statistics.median(s)
        if on_round is not None:
            on_round(r, medians)
    return enq, tot


def model_host():
    from kernels.inject import inject

    model = ltx_transformer()
    kw = _ltx_inputs()
    for mode in ("eager", "triton"):
        if mode == "triton":
            inject(model)
        with torch.no_grad():
            for _ in range(3):
                model(**kw)
            torch.cuda.synchronize()
            enq, tot = forward_host_ms(model, kw, 7)
            torch.cuda.set_sync_debug_mode("warn")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model(**kw)
            torch.cuda.set_sync_debug_mode("default")
            torch.cuda.synchronize()
            pr = cProfile.Profile()
            pr.enable()
            model(**kw)
            pr.disable()
            torch.cuda.synchronize()
        print(f"== 2. {mode}: forward host enqueue {statistics.median(enq):.2f} ms, synced "
              f"{statistics.median(tot):.2f} ms (median of 7); synchronising calls in one forward: {len(caught)}")
        for w in caught[:5]:
            print(f"   sync: {w.filename}:{w.lineno}: {str(w.message)[:160]}")
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(28)
        print(s.getvalue()[s.getvalue().find("ncalls") - 3:])


if __name__ == "__main__":
    per_call()
    model_host()
