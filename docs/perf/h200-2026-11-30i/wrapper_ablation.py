"""Host cost of each kind of call in a compiled LTX-Video block's Inductor wrapper, by taking it out.

compile_host_probe.py (this folder) found one compiled block call taking 626 us of host time under ``compile`` and
876 us under ``triton+compile``, with about the same number of launches.  Its cProfile cannot say which calls cost
the difference (the profiler inflates Python frames and not C work).  This probe runs the generated wrappers the
probe saved (b/output-code-*.py.gz, the block's ``call``) without Dynamo, and again with one kind of call taken out
of the source (the values computed are then wrong; the host time of what is left is what is measured):

* our Triton kernels' launches (``_..._kernel_N.run(``), Inductor's own (``triton_...run(``), the GEMMs
  (``extern_kernels.addmm(``);
* ``kernelfleet::linear_gelu_tanh`` called through a ``torch.library.custom_op`` (as generated), through an op
  made with ``torch.library.Library.define`` + ``impl`` (no Python autograd and aliasing wrappers), and as a plain
  function.

Host µs per ``call`` (median of 100 calls, synced between calls), three rounds over the variants in turn; the
median of the rounds is printed.  Run on the device: python3 docs/perf/h200-2026-11-30i/wrapper_ablation.py [FILE...]
(default: the two wrappers of run b; d/output-code-triton-compile-0.py.gz is the injected block's wrapper after this
session's changes, not yet run through this probe).
"""
import gzip
import importlib.util
import os
import re
import statistics
import sys
import tempfile
import time

import torch

from kernels.inject.linear_gelu import _linear_gelu  # also registers kernelfleet::linear_gelu_tanh

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "b")
OP = "torch.ops.kernelfleet.linear_gelu_tanh.default("

_lib = torch.library.Library("kfprobe", "FRAGMENT")
_lib.define("linear_gelu(Tensor x, Tensor weight, Tensor bias) -> Tensor")
_lib.impl("linear_gelu", _linear_gelu, "CUDA")


def _drop(pattern):
    rx = re.compile(pattern)
    return lambda src: "\n".join(line for line in src.splitlines() if not rx.match(line))


VARIANTS = {
    "as generated": lambda src: src,
    "without our kernels' launches": _drop(r"^\s+_\w+_kernel_\d+\.run\("),
    "without Inductor's kernel launches": _drop(r"^\s+triton_\w+\.run\("),
    "without the GEMMs (addmm)": _drop(r"^\s+extern_kernels\.addmm\("),
    "linear_gelu: op from Library.define": lambda src: src.replace(OP, "torch.ops.kfprobe.linear_gelu.default("),
    "linear_gelu: plain function": lambda src: src.replace(OP, "_kf_plain_linear_gelu("),
}


def load(name, src):
    src = "from kernels.inject.linear_gelu import _linear_gelu as _kf_plain_linear_gelu\n" + src
    fd, path = tempfile.mkstemp(suffix=".py", prefix=name)
    with os.fdopen(fd, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def host_us(mod, args, n=100):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        mod.call(list(args))
        out.append((time.perf_counter() - t) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


def main(paths):
    for path in paths:
        fname = os.path.basename(path)
        with gzip.open(path, "rt") as f:
            src = f.read()
        mods, args = {}, None
        for i, (label, edit) in enumerate(VARIANTS.items()):
            new = edit(src)
            if label != "as generated" and new == src:
                continue  # nothing of that kind in this wrapper
            mods[label] = load(f"wrapper{i}_", new)
            args = args or mods[label].get_args()
        counts = {"our launches": len(re.findall(r"(?m)^\s+_\w+_kernel_\d+\.run\(", src)),
                  "Inductor launches": len(re.findall(r"(?m)^\s+triton_\w+\.run\(", src)),
                  "addmm": src.count("extern_kernels.addmm("), "linear_gelu op": src.count(OP)}
        with torch.no_grad():
            for mod in mods.values():
                for _ in range(20):
                    mod.call(list(args))
            torch.cuda.synchronize()
            rounds = {label: [] for label in mods}
            for _ in range(3):
                for label, mod in mods.items():
                    rounds[label].append(host_us(mod, args))
        print(f"== {fname}: {counts}")
        base = statistics.median(rounds["as generated"])
        for label, xs in rounds.items():
            m = statistics.median(xs)
            print(f"  {label:40s} {m:7.1f} us  (rounds {', '.join(f'{x:.1f}' for x in xs)}; "
                  f"{m - base:+.1f} against as generated)")


if __name__ == "__main__":
    main(sys.argv[1:] or [os.path.join(HERE, f) for f in ("output-code-compile-0.py.gz",
                                                          "output-code-triton-compile-0.py.gz")])
