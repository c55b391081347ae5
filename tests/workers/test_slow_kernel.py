"""The A/A test's slow knob (tests/support/slow_kernel.py): a test-only plugin that makes one implementation
slower by a set fraction of its own time and changes nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support import slow_kernel
from tests.support.kernel_tests import gpu_test

REPO = Path(__file__).resolve().parents[2]


def test_the_setting_is_parsed_or_refused_in_one_line():
    assert slow_kernel.parse("rmsnorm:triton:0.10, rope:eager:0.2") == [
        ("rmsnorm", "triton", 0.10),
        ("rope", "eager", 0.2),
    ]
    for bad in ("rmsnorm:triton", "rmsnorm:triton:x", "rmsnorm:triton:0", "a:b:0.1:9"):
        with pytest.raises(ValueError, match="KERNEL:IMPL:FRACTION"):
            slow_kernel.parse(bad)


def test_slowed_keeps_the_output_and_adds_its_fraction_on_the_cpu():
    x = torch.randn(256, 256)
    slowed = slow_kernel.Slowed(lambda x: x @ x, 0.5)
    assert torch.equal(slowed(x=x), x @ x)
    (key,) = slowed.extra
    assert slowed.extra[key] == pytest.approx(0.5 * slowed.base_s[key])


def test_a_plugin_run_slows_the_named_implementation_only():
    code = (
        "from kernels import registry; e = registry.get('rmsnorm'); "
        "print(e.impls['triton'].description); print(e.impls['eager'].description)"
    )
    env = {
        **os.environ,
        "KERNELFLEET_PLUGINS": "tests.support.slow_kernel",
        "KERNELFLEET_SLOW": "rmsnorm:triton:0.1",
        "PYTHONPATH": str(REPO),
    }
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    triton, eager = out.stdout.splitlines()[-2:]
    assert "slowed by 10%" in triton and "slowed" not in eager
    bad = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**env, "KERNELFLEET_SLOW": "rmsnorm:nope:0.1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode != 0 and "has no implementation 'nope'" in bad.stderr


@gpu_test
def test_the_slowed_triton_rmsnorm_is_about_ten_percent_slower_on_the_gpu():
    from kernels import registry
    from workers.runtime import timing

    impl = registry.get("rmsnorm").impls["triton"]
    entry = registry.get("rmsnorm")
    dev = torch.device("cuda")
    inputs = entry.make_inputs([2, 4096, 2048], torch.bfloat16, dev, torch.Generator().manual_seed(0))
    fn = impl.make()
    slowed = slow_kernel.Slowed(fn, 0.10)
    base = timing.median(timing.bench(lambda: fn(**inputs), dev, warmup_ms=25, rep_ms=200))
    slow = timing.median(timing.bench(lambda: slowed(**inputs), dev, warmup_ms=25, rep_ms=200))
    assert 1.05 < slow / base < 1.2, (base, slow)
