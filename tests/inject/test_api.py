"""inject()/restore() as an API: kernel selection, what it accepts, the report."""

import json

import pytest
import torch

from kernels.inject import KERNEL_NAMES, REWRITES, inject, is_injected, resolve_kernels, restore


def test_kernel_selection_is_checked():
    assert resolve_kernels("all") == tuple(sorted(KERNEL_NAMES + tuple(REWRITES)))
    assert resolve_kernels(["fused_qkv", "rmsnorm"]) == ("fused_qkv", "rmsnorm")
    assert resolve_kernels(["rmsnorm", "rmsnorm", "adaln"]) == ("adaln", "rmsnorm")
    # a public function's name stands for its kernel (kernels.registry.PUBLIC_NAMES)
    assert resolve_kernels(["rms_norm", "adaln_rms", "rope_interleaved"]) == ("adaln", "rmsnorm", "rope")
    with pytest.raises(ValueError, match=r"unknown kernel 'rms_nrom'; injectable kernels: adaln, adaln_layer_norm"):
        resolve_kernels(["rms_nrom"])
    with pytest.raises(ValueError, match=r"kernel 'gelu_tanh' cannot be injected: GELU-tanh is one PyTorch kernel"):
        resolve_kernels(["gelu_tanh"])
    with pytest.raises(ValueError, match="empty selection"):
        resolve_kernels([])


def test_rules_select_by_registered_names_only():
    """The rules' names are checked against the registry when kernels.inject.rules is imported, and a rule that
    asks for another name raises instead of being silently off."""
    from kernels.inject import rules
    from kernels.inject.report import InjectionReport
    from kernels.inject.state import Session

    with pytest.raises(ValueError, match="no kernel 'rms_nrom' in the registry"):
        rules._kernel("rms_nrom")
    with pytest.raises(ValueError, match="kernel 'geglu' says no injection uses it"):
        rules._kernel("geglu")
    s = Session(torch.nn.Linear(2, 2), "", ("rmsnorm",), InjectionReport("Linear", ("rmsnorm",)))
    assert s.allowed(rules.RMSNORM) and not s.allowed(rules.ROPE)
    with pytest.raises(ValueError, match="no injection rule selects by 'rms_norm'"):
        s.allowed("rms_norm")


def test_only_models_and_pipelines():
    with pytest.raises(TypeError, match="takes a torch.nn.Module"):
        inject(object())


def test_a_model_of_no_known_family_is_reported_not_changed(device):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.GELU(approximate="tanh"))
    model.to(device)
    rep = inject(model)
    assert rep.families == () and rep.replaced == []
    assert {x.module for x in rep.left} == {"LayerNorm", "GELU"}
    assert "nothing" in rep.summary()
    json.dumps(rep.to_dict())
    assert restore(model) == 0
    assert not is_injected(model)


def test_pipeline_report_merges_components_with_paths(device):
    from diffusers import FlowMatchEulerDiscreteScheduler, LTXPipeline, LTXVideoTransformer3DModel

    torch.manual_seed(0)
    transformer = LTXVideoTransformer3DModel(
        in_channels=8,
        out_channels=8,
        num_attention_heads=2,
        attention_head_dim=8,
        cross_attention_dim=16,
        num_layers=1,
        caption_channels=16,
    )
    pipe = LTXPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=None,
        text_encoder=None,
        tokenizer=None,
        transformer=transformer,
    )
    pipe.to(device)
    rep = inject(pipe)
    assert rep.target == "LTXPipeline"
    assert all(r.path.startswith("transformer.") for r in rep.replaced)
    assert is_injected(pipe) and is_injected(pipe.transformer)
    again = inject(pipe)
    assert again.already_injected and again.replaced == rep.replaced
    text = str(rep)
    assert "transformer.transformer_blocks.0.attn1 [attn_processor: qk_norm_rope+fused_qkv]" in text
    assert "transformer.rope [rope_forward: qk_norm_rope]" in text
    assert restore(pipe) == 4  # 2 processors, the block's forward, the rope's forward
    assert not is_injected(pipe)
