"""transformers Llama family: LlamaRMSNorm (numerics "llama") and rotate-half RoPE through the kernels, on built
models (per-instance) and through transformers' patch API (register_patch_mapping + apply_patches)."""

import pytest
import torch
from transformers import GemmaConfig, GemmaForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from kernels.inject import inject, restore
from kernels.inject import llama as kl
from tests.inject.conftest import BF16, KernelCalls, assert_close_bf16, assert_equal
from tests.support.devices import TEST_DEVICE

LAYERS = 2
SMALL = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=LAYERS,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=100,
    head_dim=16,
)


def _model(config_cls=LlamaConfig, model_cls=LlamaForCausalLM, dtype=BF16):
    torch.manual_seed(0)
    return model_cls(config_cls(**SMALL)).to(TEST_DEVICE, dtype).eval()


IDS = torch.randint(0, 100, (2, 7), generator=torch.Generator().manual_seed(5))  # moved to the device per call


def _logits(model):
    with torch.no_grad():
        return model(input_ids=IDS.to(TEST_DEVICE)).logits


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_built_model(family):
    model = _model(*{"llama": (LlamaConfig, LlamaForCausalLM), "qwen2": (Qwen2Config, Qwen2ForCausalLM)}[family])
    ref = _logits(model)
    rep = inject(model)
    assert rep.families == ("llama",)
    assert rep.counts() == {"norm_forward": 2 * LAYERS + 1, "attention_forward": LAYERS}
    assert set(rep.paths("attention_forward")) == {f"model.layers.{i}.self_attn" for i in range(LAYERS)}
    assert {x.module for x in rep.left} == {"SiLUActivation"}
    with KernelCalls() as kc:
        out = _logits(model)
    assert dict(kc.calls) == {"rms_norm": 2 * LAYERS + 1, "rope_rotate_half": 2 * LAYERS}
    assert_close_bf16(out, ref)
    assert inject(model).already_injected
    assert restore(model) == 3 * LAYERS + 1
    assert all("forward" not in m.__dict__ for m in model.modules())
    assert_equal(_logits(model), ref)


def test_generate_with_kv_cache(device):
    """The attention forward keeps the stock code (cache update included): greedy decoding is unchanged."""
    model = _model(dtype=torch.float32)
    ids = IDS[:1].to(device)
    with torch.no_grad():
        ref = model.generate(ids, max_new_tokens=4, do_sample=False, output_logits=True, return_dict_in_generate=True)
        inject(model)
        with KernelCalls() as kc:
            out = model.generate(
                ids, max_new_tokens=4, do_sample=False, output_logits=True, return_dict_in_generate=True
            )
    assert kc.calls["rope_rotate_half"] == 2 * LAYERS * 4  # q and k, every layer, every decoding step
    assert torch.equal(out.sequences, ref.sequences)
    for a, b in zip(out.logits, ref.logits):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    restore(model)


def test_other_rmsnorm_numerics_are_left_with_reason():
    model = _model(GemmaConfig, GemmaForCausalLM)  # GemmaRMSNorm: (1 + weight), fp32 multiply: not Llama's
    ref = _logits(model)
    rep = inject(model)
    assert rep.counts() == {"attention_forward": LAYERS}
    norms = [x for x in rep.left if x.module == "GemmaRMSNorm"]
    assert len(norms) == 2 * LAYERS + 1 and all("differs from LlamaRMSNorm" in x.reason for x in norms)
    acts = [x for x in rep.left if x.path.endswith("mlp.act_fn")]
    assert len(acts) == LAYERS and all("gated GELU" in x.reason for x in acts)
    with KernelCalls() as kc:
        out = _logits(model)
    assert dict(kc.calls) == {"rope_rotate_half": 2 * LAYERS}
    assert_close_bf16(out, ref)
    restore(model)


def test_patch_api_builds_kernel_classes_and_restores_the_registry(device):
    from transformers import monkey_patching as mp

    ref = _logits(_model())
    before = mp.get_patch_mapping()
    with kl.patched() as mapping:
        torch.manual_seed(0)
        patched = LlamaForCausalLM(LlamaConfig(**SMALL)).to(device, BF16).eval()
    assert mp.get_patch_mapping() == before
    names = {type(m).__name__ for m in patched.modules()}
    assert {"KernelLlamaRMSNorm", "KernelLlamaAttention"} <= names
    assert set(mapping) == {"LlamaRMSNorm", "LlamaAttention"}
    # a model built outside the context is stock
    assert not {"KernelLlamaRMSNorm", "KernelLlamaAttention"} & {type(m).__name__ for m in _model().modules()}
    with KernelCalls() as kc:
        out = _logits(patched)
    assert dict(kc.calls) == {"rms_norm": 2 * LAYERS + 1, "rope_rotate_half": 2 * LAYERS}
    assert_close_bf16(out, ref)
    # inject() on such a model replaces nothing and says why
    rep = inject(patched)
    assert rep.counts() == {}
    assert sum("patch classes" in x.reason for x in rep.left) == 3 * LAYERS + 1
