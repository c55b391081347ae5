"""Device-side driver: the e2e job at the seed setting (all modes) and a pipeline=True check; JSON to $OUT."""
import json, os, sys, time
import torch
from workers import e2e
from workers.spec import JobSpec

out = os.environ.get("OUT", ".")
which = sys.argv[1:] or ["seed"]
runs = {
    "seed": JobSpec(kind="e2e", model="ltx-video", shape=[25, 480, 704], dtype="bf16",
                    impls=["eager", "triton", "compile", "triton+compile"], key="seed", params={"steps": 30, "repeats": 3}),
    "pipeline": JobSpec(kind="e2e", model="ltx-video", shape=[25, 480, 704], dtype="bf16",
                        impls=["eager", "triton"], key="pipe", params={"steps": 30, "repeats": 1, "pipeline": True}),
    "f121": JobSpec(kind="e2e", model="ltx-video", shape=[121, 480, 704], dtype="bf16",
                    impls=["eager", "triton", "compile", "triton+compile"], key="f121", params={"steps": 30, "repeats": 2}),
}
for name in which:
    t = time.time()
    res = e2e.run(runs[name], torch.device("cuda"))
    d = res.to_dict()
    d["wall_s"] = time.time() - t
    with open(f"{out}/e2e_{name}.json", "w") as f:
        json.dump(d, f, indent=1)
    print(name, res.status, res.error, round(time.time() - t, 1), "s")
    for m in res.measurements:
        if m.metric in ("ms_per_step", "warmup_s", "peak_mem_gb", "rel_err_vs_eager", "max_abs_vs_eager", "cos_sim_vs_eager", "speedup_vs_eager"):
            print(f"  {m.impl:16s} {m.metric:18s} {m.value:.5g}")
    print("  skipped", d["details"]["skipped"], "errors", {k: v[:300] for k, v in d["details"]["errors"].items()})
    sys.stdout.flush()
