"""The e2e job (workers.jobs.e2e.job): LTX-Video's denoising loop in every mode, on a tiny model on the test device (a
GPU with compiled Triton, or the CPU with Triton's interpreter; tests/support/devices.py), the modes a CPU cannot run
skipped there with the reason, and at the seed setting on a GPU."""

import pytest
import torch

from workers.jobs.e2e import job as e2e
from workers.jobs.e2e import ltx as e2e_ltx
from workers.jobs.e2e.spec import MODES
from workers.spec import STATUS_INCORRECT, STATUS_OK, STATUS_SKIPPED, JobResult, JobSpec

CPU = torch.device("cpu")
TINY_SHAPE = [9, 64, 96]  # latent 2 x 2 x 3 through the real 8x/32x compression
SEED_MODES = ("eager", "triton", "compile", "triton+compile")


def _spec(impls=MODES, shape=TINY_SHAPE, dtype="bf16", **params):
    return JobSpec(
        kind="e2e",
        model="ltx-video",
        shape=list(shape),
        dtype=dtype,
        impls=list(impls),
        key="k",
        params={"steps": 2, "repeats": 2, "tiny": True, **params},
    )


def _metrics(res: JobResult) -> dict[tuple[str, str], object]:
    return {(m.impl, m.metric): m for m in res.measurements}


def test_job_runs_eager_and_triton(device):
    res = e2e.run(_spec(impls=["eager", "triton"], pipeline=True), device)
    assert res.status == STATUS_OK, res.error
    JobResult.from_dict(res.to_dict())  # plain JSON data
    m = _metrics(res)
    for mode in ("eager", "triton"):
        step = m[(mode, "ms_per_step")]
        assert step.unit == "ms" and len(step.samples) == 2 and step.value > 0
        assert m[(mode, "total_s")].value > 0 and m[(mode, "warmup_s")].value > 0
        host = m[(mode, "host_ms_per_step")]  # one probe call: steps - 1 host times
        assert host.unit == "ms" and len(host.samples) == 1 and 0 < host.value
        assert m[(mode, "correct")].value == 1.0
        assert m[(mode, "max_abs_vs_eager")].value <= 0.05
        assert m[(mode, "cos_sim_vs_eager")].value > 0.999
        # a device memory figure on a GPU only (the CPU has none)
        assert ((mode, "peak_mem_gb") in m) is (device.type == "cuda")
    assert m[("eager", "max_abs_vs_eager")].value == 0.0  # eager is deterministic run to run
    assert m[("triton", "speedup_vs_eager")].value > 0
    assert res.details["skipped"] == {}
    assert {k[0] for k in m} == {"eager", "triton"}
    cfg = res.details["config"]
    assert cfg["latent"] == [2, 2, 3] and cfg["tokens"] == 12 and cfg["batch"] == 2 and cfg["pipeline"]
    assert res.details["injection"]["triton"]["counts"] == {"attn_processor": 4, "block_forward": 2, "rope_forward": 1}
    assert len(res.details["step_ms"]["triton"]) == 2 * 1  # 2 repeats x (steps - 1)


def test_cpu_job_runs_eager_and_skips_compile_and_graph_modes():
    """On the CPU (on any host: eager needs no Triton) every mode but eager is skipped with the reason, and the job
    still runs eager.  (triton on the CPU needs Triton's interpreter; test_job_runs_eager_and_triton runs it.)"""
    res = e2e.run(_spec(impls=[mode for mode in MODES if mode != "triton"]), CPU)
    assert res.status == STATUS_OK, res.error
    m = _metrics(res)
    assert {k[0] for k in m} == {"eager"} and m[("eager", "correct")].value == 1.0
    assert ("eager", "peak_mem_gb") not in m  # CPU: no device memory figure
    skipped = res.details["skipped"]
    assert set(skipped) == set(MODES) - {"eager", "triton"}
    assert "cannot trace" in skipped["triton+compile"] and "cannot trace" in skipped["triton+compile-max"]
    assert "runs on a GPU" in skipped["compile"] and "runs on a GPU" in skipped["compile-max"]
    assert all("CUDA graphs" in skipped[mode] for mode in MODES if mode.endswith("+graph"))
    # torch.compile's own CUDA-graph modes, with and without the kernels, are GPU-only whatever cpu_compile says
    for mode, torch_mode in (("compile-ro", "reduce-overhead"), ("compile-max-cg", "max-autotune")):
        reason = f"torch.compile's {torch_mode} mode replays CUDA graphs; runs on a CUDA GPU"
        assert skipped[mode] == reason and skipped[f"triton+{mode}"] == reason
        assert e2e.skip_reason(mode, CPU, {"cpu_compile": True}) == reason


def test_modes_leave_the_model_as_they_found_it(device):
    from kernels.inject import is_injected

    spec = _spec(impls=["triton"], repeats=1)
    p = e2e._params(spec)
    s = e2e.setup(spec, device, p)
    stock = e2e.run_call(s, spec, p, device).latents
    procs = dict(s.pipe.transformer.attn_processors)
    e2e._run_mode("triton", s, spec, p, device)
    assert not is_injected(s.pipe.transformer)
    assert dict(s.pipe.transformer.attn_processors) == procs
    assert torch.equal(e2e.run_call(s, spec, p, device).latents, stock)


def test_a_mode_that_drifts_is_incorrect(monkeypatch, device):
    import kernels.inject.norms as norms

    real = norms.adaln_rms
    # a broken kernel: norm1 + modulate with the sign flipped
    monkeypatch.setattr(norms, "adaln_rms", lambda x, scale, shift, w, eps: -real(x, scale, shift, w, eps))
    res = e2e.run(_spec(impls=["eager", "triton"], repeats=1), device)
    assert res.status == STATUS_INCORRECT
    assert res.error.startswith("triton: final latents drift from eager: rel_err")
    m = _metrics(res)
    assert m[("triton", "correct")].value == 0.0 and m[("eager", "correct")].value == 1.0
    assert ("triton", "speedup_vs_eager") not in m  # no speed-up for an incorrect mode


def test_only_compile_modes_on_cpu_is_skipped():
    res = e2e.run(_spec(impls=["compile", "triton+compile", "compile-max", "eager+graph", "compile-ro"]), CPU)
    assert res.status == STATUS_SKIPPED and "no mode can run here" in res.error
    assert "compile-ro: torch.compile's reduce-overhead mode replays CUDA graphs" in res.error


def test_graph_compile_modes_compile_the_whole_transformer(monkeypatch, device):
    """compile-ro and compile-max-cg: transformer.compile(fullgraph=True) with the mode's options (CUDA graphs on);
    the other compile modes compile the repeated blocks.  Leaving the mode removes the compiled call."""
    from kernels.inject.compile_options import STATIC_LAUNCH_ENV, compile_options

    monkeypatch.setenv(STATIC_LAUNCH_ENV, "1")  # compile_options sets it for the process; undone after the test
    spec = _spec(impls=["eager"], repeats=1)
    p = e2e._params(spec)
    s = e2e.setup(spec, device, p)
    t = s.pipe.transformer
    calls = []
    monkeypatch.setattr(type(t), "compile", lambda self, **kw: calls.append(("model", kw)), raising=False)
    monkeypatch.setattr(type(t), "compile_repeated_blocks", lambda self, **kw: calls.append(("blocks", kw)))
    for mode, scope, torch_mode in (
        ("compile-ro", "model", "reduce-overhead"),
        ("compile-max-cg", "model", "max-autotune"),
        ("compile", "blocks", None),
        ("compile-max", "blocks", "max-autotune-no-cudagraphs"),
    ):
        calls.clear()
        info = e2e.enter_mode(mode, t)
        assert calls == [(scope, {"fullgraph": True, "options": compile_options(torch_mode)})], mode
        assert info["compile_options"].get("triton.cudagraphs", False) is (scope == "model")
        e2e.leave_mode(mode, t)


@pytest.mark.parametrize(
    "spec,message",
    [
        (
            _spec(impls=["eager", "fast"]),
            "unknown mode(s) ['fast']; allowed: eager, triton, compile, triton+compile, "
            "compile-max, triton+compile-max, eager+graph, triton+graph",
        ),
        (_spec(impls=["graph+triton"]), "unknown mode(s) ['graph+triton']"),
        (_spec(shape=[24, 64, 96]), "frames=24: LTX-Video takes 8k+1 frames"),
        (_spec(shape=[9, 60, 96]), "both must be multiples of 32"),
        (_spec(bogus=1), "unknown ['bogus']"),
        (_spec(guidance_scale=1.0), "guidance_scale must be > 1"),
        (_spec(dtype="fp8"), "unknown dtype 'fp8'"),
    ],
)
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(ValueError) as exc:
        e2e.run(spec, CPU)
    assert message in str(exc.value)


@pytest.mark.slow
def test_compile_mode_when_asked(device):
    """The compile path (compile_repeated_blocks(fullgraph=True), then undone): on the CPU's Inductor backend, which
    cpu_compile asks for; on a GPU, where the mode always runs, Inductor's Triton code."""
    res = e2e.run(_spec(impls=["eager", "compile", "triton"], steps=1, repeats=1, warmup=1, cpu_compile=True), device)
    assert res.status == STATUS_OK, res.error
    m = _metrics(res)
    assert m[("compile", "correct")].value == 1.0 and 0 < m[("compile", "rel_err_vs_eager")].value < 0.05
    # triton ran after compile on the same model: the compiled code was removed (exact eager numerics again)
    assert m[("triton", "max_abs_vs_eager")].value <= 0.05 and m[("triton", "correct")].value == 1.0


@pytest.mark.gpu
@pytest.mark.xdist_group("gpu-compile")  # times nothing: beside the timing tests' chain
@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU (the seed setting, full model)")
def test_seed_setting_on_gpu():
    from kernels.arch import interpreting

    if interpreting():
        pytest.skip("TRITON_INTERPRET=1 is set (tests/conftest.py sets it by default); run with TRITON_INTERPRET=0")
    # the four base modes (max-autotune's GEMM search alone takes ~100 s here; the e2e runs in docs/perf time it)
    spec = JobSpec(
        kind="e2e",
        model="ltx-video",
        shape=[25, 480, 704],
        dtype="bf16",
        impls=list(SEED_MODES),
        key="seed",
        params={"steps": 30, "repeats": 3},
    )
    res = e2e.run(spec, torch.device("cuda"))
    assert res.status == STATUS_OK, res.error
    m = _metrics(res)
    assert res.details["config"]["tokens"] == 1320 and res.details["config"]["layers"] == 28
    for mode in SEED_MODES:
        assert m[(mode, "correct")].value == 1.0
        assert m[(mode, "peak_mem_gb")].value > 3.8  # 1.9 B bf16 parameters alone
        assert len(m[(mode, "ms_per_step")].samples) == 3
    assert res.details["injection"]["triton"]["counts"] == {
        "attn_processor": 56,
        "block_forward": 28,
        "rope_forward": 1,
    }


@pytest.mark.gpu
@pytest.mark.xdist_group("gpu-compile")  # times nothing: beside the timing tests' chain
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (CUDA graphs)")
def test_graph_enabled_modes_on_gpu_replay_graphs():
    """Every graph-enabled mode on the tiny model: torch.compile's reduce-overhead and max-autotune on the whole
    transformer with and without the kernels (Inductor's CUDA graph trees, none skipped) and the kernels under
    kernels.inject.cuda_graphs; latents within tolerance of eager."""
    from kernels.arch import interpreting

    if interpreting():
        pytest.skip("TRITON_INTERPRET=1 is set (tests/conftest.py sets it by default); run with TRITON_INTERPRET=0")
    modes = ["eager", "compile-ro", "triton+compile-ro", "compile-max-cg", "triton+compile-max-cg", "triton+graph"]
    res = e2e.run(_spec(impls=modes, steps=3), torch.device("cuda"))
    assert res.status == STATUS_OK, res.error
    assert res.details["skipped"] == {}
    m = _metrics(res)
    for mode in modes:
        assert m[(mode, "correct")].value == 1.0, mode
    for mode in modes[1:5]:
        assert res.details.get("compile_graphs", {}).get(mode) == {"cudagraph_skips": 0}, mode
    assert res.details["graph"]["triton+graph"]["replays"] > 0


@pytest.mark.parametrize("layout", ["pipeline", "transformer"])
def test_model_path_loads_a_local_diffusers_folder(tmp_path, layout, device):
    """model_path: a saved pipeline (model_index.json) or a transformer folder; loaded offline, nothing downloaded."""
    from diffusers import (
        AutoencoderKLLTXVideo,
        FlowMatchEulerDiscreteScheduler,
        LTXPipeline,
        LTXVideoTransformer3DModel,
    )

    torch.manual_seed(0)
    transformer = LTXVideoTransformer3DModel(**e2e_ltx.TINY_TRANSFORMER)
    if layout == "pipeline":
        LTXPipeline(
            scheduler=FlowMatchEulerDiscreteScheduler(),
            vae=AutoencoderKLLTXVideo(**e2e_ltx.TINY_VAE),
            text_encoder=None,
            tokenizer=None,
            transformer=transformer,
        ).save_pretrained(tmp_path)
    else:
        transformer.save_pretrained(tmp_path)
    res = e2e.run(
        _spec(
            impls=["eager", "triton"],
            repeats=1,
            tiny=False,
            model_path=str(tmp_path),
            text_len=16,
            pipeline=layout == "pipeline",
        ),
        device,
    )
    assert res.status == STATUS_OK, res.error
    assert res.details["config"]["source"] == f"{layout} {tmp_path}" and res.details["config"]["layers"] == 2
    assert _metrics(res)[("triton", "correct")].value == 1.0


def test_model_path_must_be_a_diffusers_folder(tmp_path, device):
    with pytest.raises(ValueError, match="neither a diffusers pipeline"):
        e2e.run(_spec(impls=["eager"], tiny=False, model_path=str(tmp_path)), device)
