"""FLUX and SD3/SD3.5 injection on tiny models: per-head q/k RMSNorm (torch numerics for FLUX, diffusers numerics
for SD3.5), LayerNorm + modulate through adaln_layer_norm (adaptive norms and the blocks' norm2), FLUX's interleaved
RoPE; outputs within bf16 rounding of the stock model, exact counts, exact restore."""

import pytest
import torch
from diffusers import FluxTransformer2DModel, SD3Transformer2DModel

from kernels.inject import inject, restore
from tests.inject.conftest import BF16, KernelCalls, assert_close_bf16, assert_equal
from tests.support.devices import TEST_DEVICE

B, TXT = 2, 5


def _on_device(**kw):
    """The keyword arguments, their tensors (drawn on the CPU) moved to the test device."""
    return {k: v.to(TEST_DEVICE) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}


def _flux(dtype=BF16, double=2, single=2):
    torch.manual_seed(0)
    return (
        FluxTransformer2DModel(
            patch_size=1,
            in_channels=8,
            num_layers=double,
            num_single_layers=single,
            attention_head_dim=8,
            num_attention_heads=2,
            joint_attention_dim=16,
            pooled_projection_dim=16,
            axes_dims_rope=(2, 2, 4),
        )
        .to(TEST_DEVICE, dtype)
        .eval()
    )


def _flux_inputs(dtype=BF16, seq=12):
    g = torch.Generator().manual_seed(1)
    return _on_device(
        hidden_states=torch.randn(B, seq, 8, generator=g).to(dtype),
        encoder_hidden_states=torch.randn(B, TXT, 16, generator=g).to(dtype),
        pooled_projections=torch.randn(B, 16, generator=g).to(dtype),
        timestep=torch.tensor([0.3, 0.7]).to(dtype),
        img_ids=torch.randn(seq, 3, generator=g) * 4,
        txt_ids=torch.zeros(TXT, 3),
        return_dict=False,
    )


def _sd3(dtype=BF16, layers=3, qk_norm="rms_norm", dual=(0,)):
    torch.manual_seed(0)
    return (
        SD3Transformer2DModel(
            sample_size=8,
            patch_size=2,
            in_channels=4,
            num_layers=layers,
            attention_head_dim=8,
            num_attention_heads=2,
            joint_attention_dim=16,
            caption_projection_dim=16,
            pooled_projection_dim=16,
            out_channels=4,
            pos_embed_max_size=8,
            qk_norm=qk_norm,
            dual_attention_layers=dual,
        )
        .to(TEST_DEVICE, dtype)
        .eval()
    )


def _sd3_inputs(dtype=BF16):
    g = torch.Generator().manual_seed(1)
    return _on_device(
        hidden_states=torch.randn(B, 4, 8, 8, generator=g).to(dtype),
        encoder_hidden_states=torch.randn(B, TXT, 16, generator=g).to(dtype),
        pooled_projections=torch.randn(B, 16, generator=g).to(dtype),
        timestep=torch.tensor([200, 800]),
        return_dict=False,
    )


def _run(model, kw):
    with torch.no_grad():
        return model(**kw)[0]


def _check(model, kw, counts, calls, tol=None):
    ref = _run(model, kw)
    rep = inject(model)
    assert rep.counts() == counts, str(rep)
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert dict(kc.calls) == calls
    if tol is None:
        assert_close_bf16(out, ref)
    else:
        torch.testing.assert_close(out, ref, rtol=tol, atol=tol)
    assert inject(model).already_injected
    assert restore(model) == sum(counts.values())
    assert_equal(_run(model, kw), ref)
    return rep


@pytest.mark.parametrize("dtype", [BF16, torch.float32], ids=["bf16", "fp32"])
def test_flux(dtype):
    d, s = 2, 2
    rep = _check(
        _flux(dtype, d, s),
        _flux_inputs(dtype),
        counts={
            "attn_processor": d + s,
            "block_forward": d,
            "norm_forward": 2 * d + s + 1,
            "activation_forward": 2 * d,
        },
        # adaln_layer_norm: norm1 + norm1_context + norm2 + norm2_context per double block, norm per single block,
        # norm_out; rms_norm: q, k, added q, added k per double block, q, k per single block; RoPE: q and k;
        # linear_gelu: ff and ff_context per double block
        calls={
            "adaln_layer_norm": 4 * d + s + 1,
            "rms_norm": 4 * d + 2 * s,
            "rope_interleaved": 2 * (d + s),
            "linear_gelu": 2 * d,
        },
        tol=None if dtype == BF16 else 1e-5,
    )
    assert rep.families == ("flux",)
    kinds = {r.path: (r.kind, r.kernels) for r in rep.replaced}
    assert kinds["transformer_blocks.0.attn"] == ("attn_processor", ("rmsnorm", "rope"))
    assert kinds["single_transformer_blocks.1.norm"] == ("norm_forward", ("adaln_layer_norm",))
    assert kinds["norm_out"] == ("norm_forward", ("adaln_layer_norm",))
    assert kinds["transformer_blocks.1.ff_context.net.0"] == ("activation_forward", ("linear_gelu",))
    # the single blocks' GELU (act_mlp, inside the block's own forward) is left, with the reason
    assert rep.left_counts() == {"GELU": s}
    assert "act_mlp are two modules" in {x.path: x.reason for x in rep.left}["single_transformer_blocks.0.act_mlp"]


def test_flux_rope_only():
    model, kw = _flux(), _flux_inputs()
    ref = _run(model, kw)
    rep = inject(model, kernels=["rope"])
    assert rep.counts() == {"attn_processor": 4}
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert dict(kc.calls) == {"rope_interleaved": 8}
    assert_close_bf16(out, ref)
    assert "rmsnorm not selected" in {x.path: x.reason for x in rep.left}["transformer_blocks.0.attn.norm_q"]
    restore(model)


@pytest.mark.parametrize("dtype", [BF16, torch.float32], ids=["bf16", "fp32"])
def test_sd35_dual_attention_and_qk_norm(dtype):
    layers = 3  # block 0 dual attention (SD35AdaLayerNormZeroX), block 2 context-pre-only (AdaLayerNormContinuous)
    rep = _check(
        _sd3(dtype, layers),
        _sd3_inputs(dtype),
        # norm_forward: q/k/added_q/added_k per block + attn2's q/k in block 0; norm1 x3, norm1_context x3; norm_out
        counts={
            "block_forward": layers,
            "norm_forward": 4 * layers + 2 + 2 * layers + 1,
            "activation_forward": 2 * layers - 1,
        },
        # adaln_layer_norm: block0 norm1 (two modulations) + ctx + norm2 + norm2_ctx = 5, block1 4, block2 (no
        # context FF) 3, norm_out 1; rms_norm: the per-head q/k norms; linear_gelu: ff (+ ff_context but in block2)
        calls={"adaln_layer_norm": 5 + 4 + 3 + 1, "rms_norm": 4 * layers + 2, "linear_gelu": 2 * layers - 1},
        tol=None if dtype == BF16 else 1e-5,
    )
    assert rep.families == ("sd3",)
    kinds = {r.path: (r.module, r.kernels) for r in rep.replaced}
    assert kinds["transformer_blocks.0.norm1"] == ("SD35AdaLayerNormZeroX", ("adaln_layer_norm",))
    assert kinds["transformer_blocks.2.norm1_context"] == ("AdaLayerNormContinuous", ("adaln_layer_norm",))
    assert kinds["transformer_blocks.1.attn.norm_added_k"] == ("RMSNorm", ("rmsnorm",))
    assert kinds["transformer_blocks.2.ff.net.0"] == ("GELU", ("linear_gelu",))
    assert rep.left_counts() == {}


def test_sd3_without_qk_norm():
    layers = 2
    _check(
        _sd3(BF16, layers, qk_norm=None, dual=()),
        _sd3_inputs(),
        counts={"block_forward": layers, "norm_forward": 2 * layers + 1, "activation_forward": 2 * layers - 1},
        calls={"adaln_layer_norm": 4 + 3 + 1, "linear_gelu": 2 * layers - 1},
    )


def test_sd3_qk_norm_numerics_follow_the_weight_dtype(device):
    """diffusers RMSNorm rounds to a half weight's dtype before the weight multiply, and with an fp32 weight returns
    fp32 (no cast back): the injected norm does the same, on SD3's transposed [B, H, S, D] layout."""
    model = _sd3(BF16, 2)
    inject(model)
    norm = model.transformer_blocks[0].attn.norm_q
    x = torch.randn(B, 7, 2, 8, generator=torch.Generator().manual_seed(3)).to(BF16).to(device).transpose(1, 2)
    for weight_dtype in (BF16, torch.float32):
        norm.to(weight_dtype)
        with torch.no_grad():
            norm.weight.copy_(torch.linspace(0.5, 1.5, 8, device=device))
            ref = type(norm).forward(norm, x)
            with KernelCalls() as kc:
                out = norm(x)
        assert kc.calls["rms_norm"] == 1
        assert out.dtype == ref.dtype == weight_dtype
        assert out.stride() == ref.stride()  # normalised in place of the transposed view: no copy, same layout
        if weight_dtype == BF16:
            assert_close_bf16(out, ref)
        else:
            torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)
    restore(model)
