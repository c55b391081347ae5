"""Launches the target would refuse: shared memory / LDS beyond what one program may hold there.

The ``isa`` job marks such a launch as unable to run (an ``error`` naming the launch and the limit), for every target,
sm_90 included; and cross_attention, whose one-pass tile grows with the keys and the head dim, launches a tile that
fits every (keys, head dim) it accepts on every target.  Compiled for the targets in a child process (the kernels are
compiled, not interpreted), no GPU needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# fp32 stages 4-byte operands (the largest tiles), bf16 2-byte ones; 130 keys round up to a 256-key tile
CASES = [
    (arch, dtype, keys)
    for arch in ("sm_90", "gfx950", "gfx1201")
    for dtype, keys in (("fp32", 130), ("fp32", 256), ("bf16", 256))
]

_CHILD = r"""
import json, sys, torch
from kernels.cross_attention import AttnConfig, cross_attention_into
from workers.jobs import isa
from workers.jobs import isa_targets
from workers.spec import JobSpec

out = {"jobs": [], "forced": None}
for arch, dtype, keys in json.loads(sys.argv[1]):
    spec = JobSpec(kind="isa", kernel="cross_attention", shape=[1, 64, 2, 128, keys], dtype=dtype, impls=["triton"],
                   params={"arch": arch, "seed": 0})
    res = isa.run(spec)
    out["jobs"].append({"case": [arch, dtype, keys], "status": res.status, "error": res.error,
                        "lds": [p["lds_bytes"] for p in res.details["launches"]],
                        "limit": isa_targets.get(arch).lds_limit})

# the one-pass tile forced (a tune override): 256 keys x head dim 128 in fp32 is 294,912 B on sm_90
def forced(**inputs):
    cross_attention_into(torch.empty_like(inputs["query"]), **inputs, _config=AttnConfig(64, 8, 256))

target = isa_targets.get("sm_90")
(launch,) = isa.wrapper_launches("cross_attention", [1, 64, 2, 128, 256], "fp32", "sm_90", call=forced)
figures = isa.analyse(isa.compile_launch(launch, target), target)
out["forced"] = {"lds": figures["lds_bytes"], "reason": isa_targets.cannot_run(figures, target)}
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(CASES)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.mark.slow
def test_cross_attention_fits_every_target(compiled):
    """The launch for the largest tiles the kernel accepts (256 keys, head dim 128) fits each target's shared memory
    (on the H200 the fp32 one-pass tile did not: 294,912 B against 232,448 B, and Triton refused it at launch)."""
    assert [j["case"] for j in compiled["jobs"]] == [list(c) for c in CASES]
    for job in compiled["jobs"]:
        assert job["status"] == "ok", job
        assert max(job["lds"]) <= job["limit"], job


@pytest.mark.slow
def test_isa_marks_a_launch_over_the_targets_shared_memory(compiled):
    forced = compiled["forced"]
    assert forced["lds"] == 294912
    assert forced["reason"] == "shared memory/LDS 294912 B over the sm_90 limit of 232448 B a program"
