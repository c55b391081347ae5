"""The e2e job beyond LTX-Video (workers.jobs.e2e.job with workers.jobs.e2e.image and workers.jobs.e2e.llm): FLUX.1 and
SD3.5's denoising loops and a Llama-family decoder's generate, on tiny models on the test device
(tests/support/devices.py): on the CPU eager and the kernels injected, the compile and graph modes skipped with the
reason; on a GPU every mode runs (test_every_mode_runs_on_a_gpu).  Each mode against eager, each mode leaving the model
as it found it."""

import pytest
import torch

from tests.support.devices import ON_GPU, TEST_DEVICE
from workers.jobs.e2e import image as e2e_image
from workers.jobs.e2e import job as e2e
from workers.jobs.e2e import llm as e2e_llm
from workers.jobs.e2e import model_configs
from workers.jobs.e2e.spec import MODES, param_defaults
from workers.spec import STATUS_INCORRECT, STATUS_OK, JobResult, JobSpec

CPU = torch.device("cpu")
# the modes a job of the tests below asks for: every mode on the CPU (the GPU ones are skipped with the reason), eager
# and the kernels on a GPU (where every mode runs, each compiling: test_every_mode_runs_on_a_gpu)
ASKED = ("eager", "triton") if ON_GPU else MODES
IMAGE = [64, 96]  # latents 8 x 12, 4 x 6 patches of 2 x 2: 24 image tokens


def _spec(model, impls=("eager", "triton"), shape=None, **params):
    defaults = {"llama": {"new_tokens": 3}}.get(model.split("/")[0], {"steps": 2})
    return JobSpec(
        kind="e2e",
        model=model,
        shape=list(shape or ([2, 8] if model.startswith("llama") else IMAGE)),
        dtype="bf16",
        impls=list(impls),
        key="k",
        params={"repeats": 1, "tiny": True, **defaults, **params},
    )


def _metrics(res: JobResult) -> dict[tuple[str, str], object]:
    return {(m.impl, m.metric): m for m in res.measurements}


def _ran_eager_and_triton(res: JobResult) -> dict:
    assert res.status == STATUS_OK, res.error
    JobResult.from_dict(res.to_dict())  # plain JSON data
    m = _metrics(res)
    for mode in ("eager", "triton"):
        assert m[(mode, "ms_per_step")].value > 0 and m[(mode, "correct")].value == 1.0
        assert m[(mode, "host_ms_per_step")].value > 0 and m[(mode, "warmup_s")].value > 0
        assert 0 <= m[(mode, "rel_err_vs_eager")].value <= 0.05
    assert m[("eager", "max_abs_vs_eager")].value == 0.0  # eager is deterministic run to run
    assert {k[0] for k in m} == {"eager", "triton"}
    return m


@pytest.mark.parametrize(
    "model,counts,batch",
    [
        # FLUX: 1 double + 1 single block: the attention processors, the adaptive norms (norm1, norm1_context,
        # norm_out, the single block's norm), the double block's forward (norm2), its two GELU projections
        ("flux", {"attn_processor": 2, "norm_forward": 4, "block_forward": 1, "activation_forward": 2}, 1),
        # SD3.5: 2 joint blocks (the first with dual attention), the per-head q/k RMSNorms, the adaptive norms
        ("sd3", None, 2),
    ],
)
def test_image_model_job(model, counts, batch):
    res = e2e.run(_spec(model, impls=ASKED), TEST_DEVICE)
    _ran_eager_and_triton(res)
    cfg = res.details["config"]
    assert cfg["latent"] == [8, 12] and cfg["tokens"] == 24 and cfg["batch"] == batch and cfg["steps"] == 2
    assert cfg["source"] == "tiny config, random weights" and cfg["params"] > 0
    skipped = res.details["skipped"]
    assert set(skipped) == set(ASKED) - {"eager", "triton"}
    if not ON_GPU:
        assert "cannot trace" in skipped["triton+compile"] and "runs on a GPU" in skipped["compile"]
        assert all("CUDA graphs" in skipped[mode] for mode in MODES if mode.endswith("+graph"))
    injected = res.details["injection"]["triton"]["counts"]
    if counts is not None:
        assert injected == counts
    else:
        assert injected["norm_forward"] > 0 and injected["block_forward"] == 2


def test_llm_job_measures_prefill_and_decode():
    res = e2e.run(_spec("llama", impls=ASKED), TEST_DEVICE)
    m = _ran_eager_and_triton(res)
    cfg = res.details["config"]
    assert (cfg["batch"], cfg["prompt_len"], cfg["new_tokens"], cfg["layers"]) == (2, 8, 3, 2)
    for mode in ("eager", "triton"):
        step, prefill = m[(mode, "ms_per_step")], m[(mode, "prefill_ms")]
        assert len(step.samples) == 1 and len(res.details["step_ms"][mode]) == 2  # 3 tokens: 2 decode steps
        assert m[(mode, "decode_tokens_per_s")].value == pytest.approx(2 * 1e3 / step.value)
        assert m[(mode, "prefill_tokens_per_s")].value == pytest.approx(2 * 8 * 1e3 / prefill.value)
        assert m[(mode, "decode_tokens_per_s")].unit == "tokens/s"
    # the decoder's forward updates its KV cache: no kernels.inject.cuda_graphs, whatever the device
    skipped = res.details["skipped"]
    for mode in (m_ for m_ in MODES if m_.endswith("+graph")):
        assert ON_GPU or "updates the KV cache" in skipped[mode]
        assert "updates the KV cache" in e2e.skip_reason(mode, torch.device("cuda"), {}, "llama")
    assert e2e.skip_reason("compile-ro", torch.device("cuda"), {}, "llama") is None
    assert res.details["injection"]["triton"]["counts"] == {"norm_forward": 5, "attention_forward": 2}


def test_llm_logits_follow_the_fixed_tokens_in_every_mode():
    """Every call decodes the same forced tokens, so the logits of every step are comparable across modes and
    calls (a greedy argmax of random weights would diverge at the first tie)."""
    spec = _spec("llama", impls=["eager"], new_tokens=4)
    p = e2e._params(spec)
    s = e2e.setup(spec, CPU, p)
    a = e2e.run_call(s, spec, p, CPU)
    b = e2e.run_call(s, spec, p, CPU, host_probe=True)
    assert a.output.shape == (2, 4, 256) and torch.equal(a.output, b.output)
    assert len(a.step_ms) == 3 and len(b.host_ms) == 3 and a.first_ms > 0


def test_a_broken_kernel_makes_the_llm_mode_incorrect(monkeypatch):
    import kernels.inject.llama as llama

    real = llama.rms_norm
    monkeypatch.setattr(llama, "rms_norm", lambda x, w, eps, **kw: real(x, w, eps, **kw) * 1.5)
    res = e2e.run(_spec("llama", impls=["eager", "triton"]), TEST_DEVICE)
    assert res.status == STATUS_INCORRECT
    assert res.error.startswith("triton: logits drift from eager: rel_err")
    assert ("triton", "speedup_vs_eager") not in _metrics(res)


@pytest.mark.parametrize("model", ["flux", "sd3", "llama"])
def test_modes_leave_the_model_as_they_found_it(model):
    from kernels.inject import is_injected

    spec = _spec(model, impls=["triton"])
    p = e2e._params(spec)
    s = e2e.setup(spec, TEST_DEVICE, p)
    stock = e2e.run_call(s, spec, p, TEST_DEVICE).output
    e2e._run_mode("triton", s, spec, p, TEST_DEVICE)
    assert not is_injected(s.model)
    assert torch.equal(e2e.run_call(s, spec, p, TEST_DEVICE).output, stock)


@pytest.mark.parametrize(
    "model,mode,scope",
    [
        ("sd3", "compile", "blocks"),  # SD3 declares no repeated blocks: its JointTransformerBlocks one by one
        ("sd3", "compile-ro", "model"),
        ("flux", "compile-max", "repeated"),
        ("llama", "compile", "model"),  # the decoder's step is one forward: every compile mode compiles it whole
        ("llama", "compile-max", "model"),
    ],
)
def test_what_each_compile_mode_compiles(monkeypatch, model, mode, scope):
    from kernels.inject.compile_options import STATIC_LAUNCH_ENV

    monkeypatch.setenv(STATIC_LAUNCH_ENV, "1")
    spec = _spec(model, impls=["eager"])
    p = e2e._params(spec)
    s = e2e.setup(spec, CPU, p)
    calls = []
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, **kw: calls.append(type(self).__name__))
    if hasattr(type(s.model), "compile_repeated_blocks"):
        monkeypatch.setattr(type(s.model), "compile_repeated_blocks", lambda self, **kw: calls.append("repeated"))
    e2e.enter_mode(mode, s.model, model)
    e2e.leave_mode(mode, s.model)
    expected = {
        "blocks": ["JointTransformerBlock"] * 2,
        "model": [type(s.model).__name__],
        "repeated": ["repeated"],
    }[scope]
    assert calls == expected


def test_profile_of_the_decoder_covers_its_decode_steps(monkeypatch):
    monkeypatch.setattr(e2e, "mark_profiler_used", lambda: None)  # this test process goes on timing
    res = e2e.run(_spec("llama", impls=["eager"], profile_steps=2), CPU)
    assert res.status == STATUS_OK, res.error
    prof = res.details["profile"]["eager"]
    assert prof["steps"] == 2 and prof["source"] == "host ops (no device kernels)" and prof["top"]


def test_model_paths_load_local_folders(tmp_path):
    """model_path: a saved FLUX transformer (diffusers) and a saved decoder (transformers), loaded offline."""
    from diffusers import FluxTransformer2DModel
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    FluxTransformer2DModel(**e2e_image.TINY_FLUX).save_pretrained(tmp_path / "flux" / "transformer")
    LlamaForCausalLM(LlamaConfig(**e2e_llm.TINY_LLAMA)).save_pretrained(tmp_path / "llama")
    for model, path in (("flux", tmp_path / "flux"), ("llama", tmp_path / "llama")):
        extra = {"text_len": 16} if model == "flux" else {}
        spec = _spec(model, impls=["eager", "triton"], tiny=False, model_path=str(path), **extra)
        res = e2e.run(spec, TEST_DEVICE)
        assert res.status == STATUS_OK, res.error
        assert str(path) in res.details["config"]["source"]
    with pytest.raises(ValueError, match="not a local transformers folder"):
        e2e.run(_spec("llama", impls=["eager"], tiny=False, model_path=str(tmp_path)), CPU)


GPU_MODES = {
    "flux": ["eager", "triton", "compile", "triton+compile", "compile-ro", "triton+graph", "triton+compile+graph"],
    "sd3": ["eager", "triton", "compile", "triton+compile", "compile-ro", "triton+graph", "triton+compile+graph"],
    "llama": ["eager", "triton", "compile", "triton+compile", "compile-ro", "triton+compile-ro"],
}


@pytest.mark.gpu
@pytest.mark.xdist_group("gpu-e2e-models")  # compiles and compares, times nothing: a GPU chain of its own
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA or ROCm GPU with compiled Triton (torch.compile, CUDA graphs)")
@pytest.mark.parametrize("model", sorted(GPU_MODES))
def test_every_mode_runs_on_a_gpu(model):
    """The GPU-only modes on the tiny models: torch.compile with the kernels inside, reduce-overhead (for the decoder
    through ``generate`` with its static cache) and the injected CUDA-graph replay, each against eager."""
    modes = GPU_MODES[model]
    res = e2e.run(_spec(model, impls=modes), TEST_DEVICE)
    assert res.status == STATUS_OK, res.error
    assert not res.details["skipped"], res.details["skipped"]
    m = _metrics(res)
    for mode in modes:
        assert m[(mode, "ms_per_step")].value > 0 and m[(mode, "correct")].value == 1.0, mode
        assert 0 <= m[(mode, "rel_err_vs_eager")].value <= 0.05, (mode, m[(mode, "rel_err_vs_eager")].value)


@pytest.mark.parametrize(
    "spec,message",
    [
        (_spec("flux", shape=[64, 90]), "both must be multiples of 16"),
        (_spec("flux", shape=[9, 64, 96]), "shape must be [height, width]"),
        (_spec("llama", shape=[2]), "shape must be [batch, prompt_len]"),
        (_spec("llama", new_tokens=1), "new_tokens must be >= 2"),
        (_spec("llama", steps=2), "unknown ['steps']"),
        (_spec("sd3", guidance_scale=1.0), "guidance_scale must be > 1"),
        (_spec("flux", guidance_scale=0.0), "guidance_scale must be > 0"),
        (_spec("mochi"), "unknown model 'mochi'"),
        (_spec("llama", shape=[1, 250], new_tokens=8), "max_position_embeddings 256"),
        (_spec("flux", tiny=False, config="flux.2-pro"), "config 'flux.2-pro': no such configuration"),
        (_spec("sd3", tiny=False, config="flux.1-dev"), "is a 'flux' configuration, not 'sd3'"),
    ],
)
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(ValueError) as exc:
        e2e.run(spec, CPU)
    assert message in str(exc.value)


def test_the_configurations_are_the_published_ones():
    """conf/models holds each family's published configuration (the sizes the e2e pages quote)."""
    assert set(model_configs.names()) >= {"flux.1-dev", "sd3.5-medium", "sd3.5-large", "tinyllama-1.1b", "llama-3-8b"}
    flux = model_configs.load("flux.1-dev", "flux")["transformer"]
    assert (flux["num_layers"], flux["num_single_layers"], flux["num_attention_heads"]) == (19, 38, 24)
    large = model_configs.load("sd3.5-large", "sd3")["transformer"]
    assert (large["num_layers"], large["num_attention_heads"], large["qk_norm"]) == (38, 38, "rms_norm")
    llama = model_configs.load("llama-3-8b", "llama")["config"]
    assert (llama["hidden_size"], llama["num_key_value_heads"], llama["vocab_size"]) == (4096, 8, 128256)
    assert param_defaults("llama")["config"] == "tinyllama-1.1b"


def test_a_planned_model_name_runs_its_family():
    res = e2e.run(_spec("llama/tiny", impls=["eager"]), CPU)
    assert res.status == STATUS_OK, res.error
    assert res.details["config"]["source"] == "tiny config, random weights"


def test_a_models_own_config_json_is_a_decoder_configuration(tmp_path):
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2}))
    assert model_configs.load(str(path), "llama")["config"]["hidden_size"] == 64
    with pytest.raises(ValueError, match="is a 'llama' configuration, not 'flux'"):
        model_configs.load(str(path), "flux")
    path.write_text("{not json")
    with pytest.raises(ValueError, match="is not a JSON file"):
        model_configs.load(str(path), "llama")
