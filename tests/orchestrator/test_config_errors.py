"""Every kind of bad configuration fails before Ray starts: exit code 2, one clear line, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    (["+sweep=nosuch"], "sweep=nosuch: no such sweep; allowed: adaln"),
    (["+sweep=smoke", "sweep.dtype=[bf16]"], "sweep.dtype: no such key; allowed keys in sweep: name, kinds"),
    (["+sweep=smoke", "nosuchkey=1"], "nosuchkey: no such key; allowed keys: sweep, kernels, target"),
    (["+sweep=smoke", "+nosuchkey=1"], "nosuchkey: no such key; allowed keys: sweep, kernels, target"),
    (["+sweep=smoke", "+sweep.nosuchkey=1"], "sweep.nosuchkey: no such key; allowed keys in sweep: name, kinds"),
    (
        ["+sweep=smoke", "+kernels.rmsnorm.nosuchkey=1"],
        "kernels.rmsnorm.nosuchkey: no such key; allowed keys in kernels.rmsnorm: name, shapes",
    ),
    (["+sweep=smoke", "sweep.dtypes=[bf17]"], "unknown dtype 'bf17' for rmsnorm; allowed: fp32, bf16, fp16"),
    (["+sweep=smoke", "sweep.impls=[triton,cuda_magic]"], "unknown implementation 'cuda_magic' of rmsnorm"),
    (["+sweep=smoke", "sweep.kernels=[nosuch]"], "sweep.kernels: 'nosuch' is not in this sweep"),
    (["+sweep=smoke", "+kernel@kernels.foo=nosuch"], "kernel=nosuch: no such kernel; allowed:"),
    (["+sweep=smoke", "kernels.rmsnorm.name=nosuch"], "kernels.rmsnorm.name: unknown kernel 'nosuch'; known kernels:"),
    (["+sweep=smoke", "target=nosuch"], "target=nosuch: no such target; allowed: all, any"),
    (["+sweep=smoke", "sweep.shapes=[[2,-1,8]]"], "kernels.rmsnorm.shapes[0]: [2, -1, 8] is not a shape"),
    (["+sweep=smoke", "sweep.shapes=[[2,abc]]"], "sweep.shapes"),
    (["+sweep=rope", "sweep.shapes=[[2,3]]"], "kernels.rope.shapes[0]: [2, 3]"),
    (["+sweep=smoke", "sweep.rounds=abc"], "sweep.rounds: 'abc' is not a valid"),
    (["+sweep=smoke", "sweep.kinds=[bench]"], "sweep.kinds: unknown job kind 'bench'; allowed: correctness"),
    (["sweep.dtypes=[bf16]"], "no sweep chosen: add +sweep=NAME; allowed:"),
    (["+sweep=smoke", "sweep.batch_size=0"], "sweep.batch_size: must be >= 1"),
    (["+sweep=smoke", "sweep.flush=cold"], "sweep.flush: unknown 'cold'; allowed: write, read"),
    (["+sweep=smoke", "sweep.dtypes=bf16"], "sweep.dtypes takes a list: write sweep.dtypes=[bf16]"),
    (["+sweep=smoke", "sweep.impls=triton"], "sweep.impls takes a list: write sweep.impls=[triton]"),
    # sweep.e2e is typed too (schema.E2ECfg): its types, keys and enumerations are checked while composing
    (["+sweep=ltx_e2e", "sweep.e2e.repeats=abc"], "sweep.e2e.repeats: 'abc' is not a valid Integer"),
    (
        ["+sweep=ltx_e2e", "sweep.e2e.tiny=maybe"],
        "sweep.e2e.tiny: 'maybe' is not a valid Boolean; allowed: true, false",
    ),
    (
        ["+sweep=ltx_e2e", "sweep.e2e.colour=1"],
        "sweep.e2e.colour: no such key; allowed keys in sweep.e2e: model, configs",
    ),
    (["+sweep=ltx_e2e", "+sweep.e2e.colour=1"], "sweep.e2e.colour: no such key; allowed keys in sweep.e2e: model,"),
    (
        ["+sweep=ltx_e2e", "sweep.e2e.model=mochi"],
        "sweep.e2e.model: unknown model 'mochi'; allowed: ltx-video, flux, sd3",
    ),
    (
        ["+sweep=flux_e2e", "sweep.e2e.dtypes=[bf16,fp8]"],
        "sweep.e2e.dtypes: unknown dtype 'fp8'; allowed: fp32, bf16, fp16",
    ),
    (["+sweep=ltx_e2e", "sweep.e2e.frames=25"], "sweep.e2e.frames takes a list: write sweep.e2e.frames=[25]"),
    (
        ["+sweep=flux_e2e", "sweep.e2e.resolutions=[1024,768]"],
        "sweep.e2e.resolutions takes a list of lists: write sweep.e2e.resolutions=[[1024,768]]",
    ),
    (
        ["+sweep=ltx_e2e", "sweep.e2e.model_path=[a,b]"],
        "sweep.e2e.model_path: ['a', 'b'] (a list) is not a valid String",
    ),
    # a key of the schema that the sweep's model does not take: the model's keys, and whose key it is
    (
        ["+sweep=llm_e2e", "sweep.e2e.steps=[2]"],
        "sweep.e2e.steps: no such key; allowed keys in sweep.e2e: model, configs, batches, prompt_lens, dtypes",
    ),
    (["+sweep=llm_e2e", "sweep.e2e.pipeline=true"], "(for model llama; pipeline is for ltx-video)"),
]


def run_cli(args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, timeout=120, env=env
    )


def _check_one_line(code: int, stdout: str, stderr: str, expected: str, store) -> None:
    out = stdout + stderr
    assert code == 2, out
    assert expected in out, out
    assert "Traceback" not in out
    assert "Started a local Ray instance" not in out
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("config error: "), out
    assert stdout.strip() == "", out
    assert not store.exists()  # nothing was written either


@pytest.mark.parametrize("args,expected", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_config_exits_2_with_one_line(args, expected, tmp_path, capsys):
    # the command's own entry point in this process (each case as a fresh process would spend seconds importing
    # torch again); test_a_bad_config_in_a_fresh_process_exits_2 runs one as a user does
    from orchestrator.__main__ import main

    code = main([*args, f"store.url=sqlite:///{tmp_path}/kf.db"])
    captured = capsys.readouterr()
    _check_one_line(code, captured.out, captured.err, expected, tmp_path / "kf.db")


def test_a_bad_config_in_a_fresh_process_exits_2(tmp_path):
    args, expected = CASES[6]  # an unknown dtype: found by the checks against the kernel registry
    p = run_cli([*args, f"store.url=sqlite:///{tmp_path}/kf.db"])
    _check_one_line(p.returncode, p.stdout, p.stderr, expected, tmp_path / "kf.db")


def test_cfg_job_prints_the_composed_config():
    p = run_cli(
        [
            "+sweep=rmsnorm",
            "sweep.dtypes=[bf16]",
            "target=h200",
            "store.url=sqlite:///x.db",
            "cluster.address=10.0.0.1:6379",
            "--cfg",
            "job",
        ]
    )
    assert p.returncode == 0, p.stderr
    assert "name: rmsnorm" in p.stdout
    assert "kernelfleet.io/gpu: h200" in p.stdout
    assert "url: sqlite:///x.db" in p.stdout
    assert "address: 10.0.0.1:6379" in p.stdout
    assert "- bf16" in p.stdout
