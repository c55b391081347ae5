"""Whether Inductor launches one of our kernels statically when it compiles in this process (compile_threads=1),
with the static launch of user-defined kernels asked for: torch's strict switches turn a bypass into an error that
names its reason.  (Run after the GPU test's third version had found our kernels' autotuners without static
launchers: no bypass here.  The fourth version, which passed, counts only autotuners that loaded a launcher.)
Run on the device: python3 docs/perf/h200-2026-11-30i/static_why.py
"""
import torch
import torch._inductor.config as c

import kernels

x = torch.randn(64, 2048, device="cuda", dtype=torch.bfloat16)
w = torch.randn(2048, device="cuda", dtype=torch.bfloat16)
names = [n for n in ("strict_static_triton_launcher", "strict_static_cuda_launcher") if hasattr(c, n)]
print("strict options:", names)
f = torch.compile(lambda x, w: kernels.rms_norm(x, w, 1e-6) * 2, fullgraph=True)
with c.patch({"static_launch_user_defined_triton_kernels": True, "compile_threads": 1, **{n: True for n in names}}):
    try:
        f(x, w)
        print("in-process compile: no bypass")
    except Exception as e:  # the strict switches raise the bypass's reason
        print("ERR", type(e).__name__, str(e)[-1500:])
