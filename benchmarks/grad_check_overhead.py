"""Host cost per call of the gradient check that every injected kernel call makes (kernels.inject.grad).

Every call site of an injected kernel reads ``not (grad_enabled() and stock_for_grad(module, kernel, x, w))``
before the kernel; under ``torch.no_grad()``/``inference_mode()`` only ``grad_enabled()`` (``torch.is_grad_enabled``)
runs.  Measured here, host time per call (median of interleaved repeats, each a loop of many calls):

- ``check/no_grad``, ``check/inference_mode``: that expression alone, less an empty statement's loop;
- ``check/grad_on_nothing_requires_grad``: the same with autograd recording and no tensor requiring grad (a frozen
  model run without no_grad: the tensors are looked at, the kernel still runs);
- ``call/with_check``, ``call/without_check``: one injected call (the LlamaRMSNorm replacement forward,
  :func:`kernels.inject.llama.llama_rms_norm_forward`) and the same forward without the check (its code before the
  check was added), interleaved, and ``call/difference`` (the medians' difference, noisier than ``check``).

On a GPU the calls are enqueued without synchronising (a small tensor: the device keeps up, the host bounds the
loop); on the CPU the kernel runs under Triton's interpreter, so the call figures there are the interpreter's.
It backs the gradient check's figure in docs/perf/kernels-h200.md (run on the H200).

    python -m benchmarks.grad_check_overhead --out grad_check.jsonl [--calls 2000] [--repeats 31]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import timeit

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before kernels is imported

import triton  # noqa: E402

from kernels import rms_norm  # noqa: E402
from kernels.inject.grad import grad_enabled, stock_for_grad  # noqa: E402
from kernels.inject.llama import llama_rms_norm_forward, llama_rms_norm_ok  # noqa: E402


def _without_check(self, hidden_states):
    """``llama_rms_norm_forward`` as it was before the gradient check."""
    if llama_rms_norm_ok(self, hidden_states):
        return rms_norm(hidden_states, self.weight, float(self.variance_epsilon), numerics="llama")
    return type(self).forward(self, hidden_states)


def _stats(samples: list[float]) -> dict:
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"us_per_call": statistics.median(samples), "iqr_us": q[2] - q[0], "samples_us": samples}


def measure_check(ctx, x, w, module, calls: int, repeats: int) -> list[float]:
    """µs per evaluation of the call sites' check under ``ctx``, less an empty statement's."""
    ns = {"grad_enabled": grad_enabled, "stock_for_grad": stock_for_grad, "m": module, "x": x, "w": w}
    check = timeit.Timer("not (grad_enabled() and stock_for_grad(m, 'rms_norm', x, w))", globals=ns)
    empty = timeit.Timer("pass", globals=ns)
    out = []
    with ctx():
        for _ in range(repeats):
            t_check = check.timeit(number=calls)
            t_empty = empty.timeit(number=calls)
            out.append((t_check - t_empty) / calls * 1e6)
    return out


def measure_calls(module, x, calls: int, repeats: int, sync) -> tuple[list[float], list[float]]:
    """µs per injected call with and without the check, interleaved, under no_grad."""
    fns = (llama_rms_norm_forward, _without_check)
    samples: tuple[list[float], list[float]] = ([], [])
    with torch.no_grad():
        for fn in fns:  # warm-up: JIT, launch plans
            for _ in range(3):
                fn(module, x)
        sync()
        for _ in range(repeats):
            for fn, acc in zip(fns, samples):
                t0 = time.perf_counter_ns()
                for _ in range(calls):
                    fn(module, x)
                t1 = time.perf_counter_ns()
                sync()
                acc.append((t1 - t0) / calls / 1e3)
    return samples


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.grad_check_overhead", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSON lines file to write (one record per measurement)")
    ap.add_argument("--calls", type=int, default=None, help="calls per timed loop (default 2000 on a GPU, 20 on CPU)")
    ap.add_argument("--check-calls", type=int, default=200_000, help="evaluations per timed loop of the check alone")
    ap.add_argument("--repeats", type=int, default=31, help="timed loops per measurement (interleaved)")
    ap.add_argument("--width", type=int, default=2048, help="hidden size of the norm's input [1, 16, width] (GPU)")
    args = ap.parse_args(argv)
    if args.repeats < 1 or (args.calls is not None and args.calls < 1) or args.check_calls < 1:
        ap.error("--calls, --check-calls and --repeats must be positive")

    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if cuda:
        dtype, shape, calls = torch.bfloat16, (1, 16, args.width), args.calls or 2000
        device_name = torch.cuda.get_device_name()
        sync = torch.cuda.synchronize
    else:
        dtype, shape, calls = torch.float32, (1, 4, 64), args.calls or 20
        device_name = f"cpu ({os.cpu_count()} cores, Triton interpreter)"

        def sync():
            return None

    module = LlamaRMSNorm(shape[-1]).to(device=device, dtype=dtype)
    assert module.weight.requires_grad  # as loaded: only the grad mode keeps the kernel path
    x = torch.randn(*shape, device=device, dtype=dtype)
    base = {
        "benchmark": "grad_check_overhead",
        "device": device_name,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": sys.version.split()[0],
        "commit": _commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "repeats": args.repeats,
    }
    records = []
    for name, ctx in (
        ("check/no_grad", torch.no_grad),
        ("check/inference_mode", torch.inference_mode),
        ("check/grad_on_nothing_requires_grad", torch.enable_grad),
    ):
        w = module.weight.detach() if name.endswith("nothing_requires_grad") else module.weight
        samples = measure_check(ctx, x, w, module, args.check_calls, args.repeats)
        records.append({**base, "name": name, "calls": args.check_calls, **_stats(samples)})
    with_check, without_check = measure_calls(module, x, calls, args.repeats, sync)
    for name, samples in (("call/with_check", with_check), ("call/without_check", without_check)):
        records.append(
            {**base, "name": name, "calls": calls, "shape": list(shape), "dtype": str(dtype), **_stats(samples)}
        )
    diff = statistics.median(with_check) - statistics.median(without_check)
    records.append({**base, "name": "call/difference", "calls": calls, "us_per_call": diff})

    with open(args.out, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    print(f"{device_name}, commit {base['commit']}, {args.repeats} repeats")
    for r in records:
        iqr = f" (IQR {r['iqr_us']:.4f})" if "iqr_us" in r else ""
        print(f"  {r['name']:40s} {r['us_per_call']:10.4f} us/call{iqr}")
    print(f"wrote {len(records)} records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
