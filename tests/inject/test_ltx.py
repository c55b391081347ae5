"""LTX-Video injection on a tiny model (2 blocks, width 32) and a tiny pipeline whose VAE has the real 32x/8x
compression: outputs match the stock model within bf16 rounding, the kernels are really called, the replaced
modules are exactly what the architecture implies, restore is exact, and injecting twice is injecting once."""

import json

import pytest
import torch
from diffusers import AutoencoderKLLTXVideo, FlowMatchEulerDiscreteScheduler, LTXPipeline, LTXVideoTransformer3DModel
from diffusers.models.transformers.transformer_ltx import LTXVideoAttnProcessor

from kernels.inject import inject, is_injected, resolve_kernels, restore
from kernels.inject.ltx import LTXKernelAttnProcessor
from tests.inject.conftest import BF16, KernelCalls, assert_close_bf16, assert_equal
from tests.support.devices import TEST_DEVICE
from workers.jobs.e2e.ltx import TINY_TRANSFORMER, TINY_VAE

# the e2e job's tiny configurations (2 blocks, width 32; a VAE of the real compression)
TRANSFORMER, VAE = TINY_TRANSFORMER, TINY_VAE
LAYERS = TRANSFORMER["num_layers"]
FRAMES, HEIGHT, WIDTH = 9, 64, 96  # latent 2 x 2 x 3 = 12 tokens through the real 8x/32x compression
TXT = 16
PER_FORWARD = {
    "qk_norm_rope": LAYERS,
    "rms_norm": 2 * LAYERS,
    "adaln_rms": LAYERS,
    "add_rms_norm_modulate": LAYERS,
    "gated_residual": 2 * LAYERS,
    "linear_gelu": LAYERS,
    "cross_attention": LAYERS,
}


def _transformer(dtype=BF16, seed=0):
    torch.manual_seed(seed)
    return LTXVideoTransformer3DModel(**TRANSFORMER).to(TEST_DEVICE, dtype).eval()


def _inputs(dtype=BF16, batch=2, per_token=False):
    g = torch.Generator().manual_seed(1)
    f, h, w = 2, 2, 3
    mask = torch.ones(batch, TXT)
    mask[0, 10:] = 0
    t = torch.rand(batch, f * h * w, generator=g) * 1000 if per_token else torch.full((batch,), 700.0)
    return dict(
        hidden_states=torch.randn(batch, f * h * w, 8, generator=g).to(dtype).to(TEST_DEVICE),
        encoder_hidden_states=torch.randn(batch, TXT, 32, generator=g).to(dtype).to(TEST_DEVICE),
        timestep=t.to(TEST_DEVICE),
        encoder_attention_mask=mask.to(TEST_DEVICE),
        num_frames=f,
        height=h,
        width=w,
        rope_interpolation_scale=(0.32, 32, 32),
        return_dict=False,
    )


def _run(model, kw):
    with torch.no_grad():
        return model(**kw)[0]


@pytest.fixture(scope="module")
def pipe():
    torch.manual_seed(0)
    transformer = LTXVideoTransformer3DModel(**TRANSFORMER)
    vae = AutoencoderKLLTXVideo(**VAE)
    vae.use_framewise_encoding = False
    vae.use_framewise_decoding = False
    p = LTXPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=None, tokenizer=None, transformer=transformer
    )
    p.to(TEST_DEVICE, dtype=BF16)
    p.set_progress_bar_config(disable=True)
    assert (p.vae_spatial_compression_ratio, p.vae_temporal_compression_ratio) == (32, 8)
    return p


def _call_pipe(p):
    g = torch.Generator().manual_seed(0)
    pe, npe = torch.randn(1, TXT, 32, generator=g).to(BF16), torch.randn(1, TXT, 32, generator=g).to(BF16)
    pm, nm = torch.ones(1, TXT, dtype=torch.long), torch.ones(1, TXT, dtype=torch.long)
    pm[:, 10:] = 0
    nm[:, 4:] = 0
    latents = torch.randn(1, 2 * 2 * 3, 8, generator=g).to(TEST_DEVICE)
    with torch.no_grad():
        return p(
            prompt_embeds=pe.to(TEST_DEVICE),
            prompt_attention_mask=pm.to(TEST_DEVICE),
            negative_prompt_embeds=npe.to(TEST_DEVICE),
            negative_prompt_attention_mask=nm.to(TEST_DEVICE),
            height=HEIGHT,
            width=WIDTH,
            num_frames=FRAMES,
            num_inference_steps=2,
            guidance_scale=3.0,
            latents=latents,
            output_type="pt",
            return_dict=False,
        )[0]


def test_pipeline_matches_stock_counts_and_restores_exactly(pipe):
    ref = _call_pipe(pipe)
    assert ref.shape == (1, FRAMES, 3, HEIGHT, WIDTH)
    report = inject(pipe)
    try:
        assert report.families == ("ltx",)
        assert report.counts() == {"attn_processor": 2 * LAYERS, "block_forward": LAYERS, "rope_forward": 1}
        by_path = {r.path: r for r in report.replaced}
        for i in range(LAYERS):
            assert by_path[f"transformer.transformer_blocks.{i}.attn1"].kernels == ("qk_norm_rope", "fused_qkv")
            assert by_path[f"transformer.transformer_blocks.{i}.attn2"].kernels == (
                "rmsnorm",
                "fused_qkv",
                "cross_attention",
            )
            assert by_path[f"transformer.transformer_blocks.{i}"].kernels == (
                "adaln",
                "add_rms_norm_modulate",
                "gated_residual",
                "linear_gelu",
            )
        left = {x.path: x for x in report.left}
        assert left["transformer.norm_out"].module == "LayerNorm"
        assert not {p for p in left if ".ff." in p}  # the feed-forward's GELU is in its projection's epilogue
        assert all(x.reason for x in report.left)
        json.dumps(report.to_dict())
        with KernelCalls() as kc:
            out = _call_pipe(pipe)
        # 2 steps, classifier-free guidance batched: 2 transformer forwards
        assert dict(kc.calls) == {k: 2 * v for k, v in PER_FORWARD.items()}
        assert_close_bf16(out, ref)
    finally:
        n = restore(pipe)
    assert n == 3 * LAYERS + 1
    assert not is_injected(pipe)
    assert all(type(p) is LTXVideoAttnProcessor for p in pipe.transformer.attn_processors.values())
    assert all("forward" not in b.__dict__ for b in pipe.transformer.transformer_blocks)
    assert_equal(_call_pipe(pipe), ref)


@pytest.mark.parametrize("per_token", [False, True], ids=["temb_broadcast", "temb_per_token"])
def test_both_temb_layouts(per_token):
    model = _transformer()
    kw = _inputs(per_token=per_token)
    seen = []
    model.transformer_blocks[0].register_forward_pre_hook(
        lambda mod, args, kwargs: seen.append(tuple(kwargs["temb"].shape)), with_kwargs=True
    )
    ref = _run(model, kw)
    inject(model)
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert seen[0] == seen[1] == ((2, 12, 6 * 32) if per_token else (2, 1, 6 * 32))
    assert dict(kc.calls) == PER_FORWARD
    assert_close_bf16(out, ref)
    restore(model)
    assert_equal(_run(model, kw), ref)


def test_fp32_matches_closely():
    model = _transformer(torch.float32)
    kw = _inputs(torch.float32)
    ref = _run(model, kw)
    inject(model)
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert dict(kc.calls) == PER_FORWARD
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_inject_twice_is_once_and_restore_is_exact():
    model = _transformer()
    kw = _inputs()
    ref = _run(model, kw)
    first = inject(model)
    procs = dict(model.attn_processors)
    forwards = [b.__dict__["forward"] for b in model.transformer_blocks]
    out1 = _run(model, kw)
    second = inject(model)
    assert second.already_injected and not first.already_injected
    assert second.replaced == first.replaced and second.left == first.left
    assert dict(model.attn_processors) == procs  # the very same processor objects
    assert [b.__dict__["forward"] for b in model.transformer_blocks] == forwards
    assert_equal(_run(model, kw), out1)
    assert restore(model) == 3 * LAYERS + 1
    assert restore(model) == 0  # nothing left to undo
    assert_equal(_run(model, kw), ref)


def test_kernel_selection():
    model = _transformer()
    kw = _inputs()
    ref = _run(model, kw)
    rep = inject(model, kernels=["rmsnorm"])
    assert rep.counts() == {"attn_processor": 2 * LAYERS}
    assert all(r.kernels == ("rmsnorm",) for r in rep.replaced)
    left = {x.path: x.reason for x in rep.left}
    assert "not selected" in left["transformer_blocks.0.norm1"]
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert dict(kc.calls) == {"rms_norm": 4 * LAYERS}  # attn1's norms unfused (RoPE stays eager), attn2's
    assert_close_bf16(out, ref)
    # a different selection on an injected model: restore, then inject again
    rep = inject(model, kernels=["qk_norm_rope", "adaln"])
    assert not rep.already_injected
    assert rep.counts() == {"attn_processor": LAYERS, "block_forward": LAYERS, "rope_forward": 1}
    assert {x.path: x.reason for x in rep.left}[
        "transformer_blocks.1.attn2"
    ] == "rmsnorm, fused_qkv and cross_attention not selected"
    with KernelCalls() as kc:
        out = _run(model, kw)
    # without add_rms_norm_modulate, norm2 + modulate also goes through adaln_rms
    assert dict(kc.calls) == {"qk_norm_rope": LAYERS, "adaln_rms": 2 * LAYERS}
    assert_close_bf16(out, ref)
    restore(model)
    assert_equal(_run(model, kw), ref)


def test_attention_backend_is_kept_and_settable():
    from diffusers.models.attention_dispatch import _AttentionBackendRegistry

    model = _transformer()
    kw = _inputs()
    before = _AttentionBackendRegistry.get_active_backend()[0]
    try:
        inject(model)
        model.set_attention_backend("_native_math")
        procs = list(model.attn_processors.values())
        assert all(type(p) is LTXKernelAttnProcessor for p in procs)
        assert all(p._attention_backend.value == "_native_math" for p in procs)
        with KernelCalls() as kc:
            _run(model, kw)
        assert kc.calls["qk_norm_rope"] == LAYERS
        restore(model)
        # the backend chosen while injected stays chosen on the stock processors
        assert all(
            type(p) is LTXVideoAttnProcessor and p._attention_backend.value == "_native_math"
            for p in model.attn_processors.values()
        )
    finally:
        model.reset_attention_backend()
        _AttentionBackendRegistry.set_active_backend(before)


def test_native_backend_is_called_directly_other_backends_through_dispatch(monkeypatch):
    """With no backend chosen and the native one active, the processors call diffusers' native attention function
    themselves (what dispatch_attention_fn would call, with the same arguments); a chosen backend, or diffusers'
    argument checks, go through dispatch_attention_fn."""
    from diffusers.models.attention_dispatch import _AttentionBackendRegistry

    from kernels.inject import attention

    # set_attention_backend also makes its backend diffusers' active one, which reset_attention_backend leaves
    monkeypatch.setattr(_AttentionBackendRegistry, "_active_backend", _AttentionBackendRegistry._active_backend)
    model = _transformer()
    kw = _inputs()
    inject(model, kernels=[k for k in resolve_kernels("all") if k != "cross_attention"])
    out = _run(model, kw)
    dispatched = []
    dispatch = attention.dispatch_attention_fn
    monkeypatch.setattr(
        attention, "dispatch_attention_fn", lambda *a, **k: dispatched.append(k["backend"]) or dispatch(*a, **k)
    )
    assert_equal(_run(model, kw), out)
    assert dispatched == []
    monkeypatch.setattr(_AttentionBackendRegistry, "_checks_enabled", True)
    assert_equal(_run(model, kw), out)
    assert dispatched == [None] * 2 * LAYERS
    monkeypatch.setattr(_AttentionBackendRegistry, "_checks_enabled", False)
    try:
        model.set_attention_backend("_native_math")
        dispatched.clear()
        _run(model, kw)
        assert [b.value for b in dispatched] == ["_native_math"] * 2 * LAYERS
    finally:
        model.reset_attention_backend()
    restore(model)


def test_cross_attention_kernel_where_the_native_backend_would_run(monkeypatch):
    """attn2's attention goes through kernels.cross_attention where dispatch would run the native backend with its
    defaults; diffusers' argument checks, a chosen backend, or a call that wants gradients keep diffusers' path."""
    from diffusers.models.attention_dispatch import _AttentionBackendRegistry

    monkeypatch.setattr(_AttentionBackendRegistry, "_active_backend", _AttentionBackendRegistry._active_backend)
    model = _transformer()
    kw = _inputs()
    ref = _run(model, kw)
    rep = inject(model)
    assert all("cross_attention" in r.kernels for r in rep.replaced if r.path.endswith("attn2"))
    assert not any("cross_attention" in r.kernels for r in rep.replaced if r.path.endswith("attn1"))
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert kc.calls["cross_attention"] == LAYERS
    assert_close_bf16(out, ref)
    monkeypatch.setattr(_AttentionBackendRegistry, "_checks_enabled", True)
    with KernelCalls() as kc:
        _run(model, kw)
    assert "cross_attention" not in kc.calls
    monkeypatch.setattr(_AttentionBackendRegistry, "_checks_enabled", False)
    with torch.enable_grad(), KernelCalls() as kc:
        for p in model.parameters():
            p.requires_grad_(True)
        model(**kw)
        for p in model.parameters():
            p.requires_grad_(False)
    assert "cross_attention" not in kc.calls and "qk_norm_rope" not in kc.calls  # the model's code for autograd
    try:
        model.set_attention_backend("_native_math")
        with KernelCalls() as kc:
            assert_close_bf16(_run(model, kw), ref)
        assert "cross_attention" not in kc.calls
    finally:
        model.reset_attention_backend()
    restore(model)


def test_wrapped_forward_is_left_alone_with_reason():
    model = _transformer()
    blk = model.transformer_blocks[0]
    stock = blk.forward

    def wrapper(*args, **kwargs):  # what accelerate's offloading or a cache hook does to a module
        return stock(*args, **kwargs)

    blk.forward = wrapper
    rep = inject(model)
    assert rep.counts() == {"attn_processor": 2 * LAYERS, "block_forward": LAYERS - 1, "rope_forward": 1}
    why = {x.path: x.reason for x in rep.left}["transformer_blocks.0"]
    assert "already replaced" in why and "before" in why
    restore(model)
    assert blk.forward is wrapper  # the user's wrapper is untouched


def test_attention_hooks_still_run():
    """The injected block calls a plain attention module's processor directly (LTXAttention.forward only inspects
    the processor's signature); a hooked attention module is called as a module, so its hooks run, and the output
    is the same either way."""
    model = _transformer()
    kw = _inputs()
    ref = _run(model, kw)
    inject(model)
    plain = _run(model, kw)
    seen = []
    handles = [
        model.transformer_blocks[i].attn1.register_forward_hook(lambda mod, args, out: seen.append(mod))
        for i in range(LAYERS)
    ]
    hooked = _run(model, kw)
    for h in handles:
        h.remove()
    assert len(seen) == LAYERS
    assert_equal(hooked, plain)
    assert_close_bf16(plain, ref)


def _storages(model):
    return [p.untyped_storage().data_ptr() for p in model.parameters()]


def test_fused_projections_share_one_gemm_and_restore_unshares(monkeypatch, tmp_path):
    from kernels.inject import fused_linear

    model = _transformer()
    kw = _inputs()
    ref = _run(model, kw)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert len(set(_storages(model))) == len(params)
    inject(model)
    blk = model.transformer_blocks[0]
    # q/k/v of attn1 and k/v of attn2 now live in one storage each, with their values unchanged
    assert blk.attn1.to_q.weight.untyped_storage().data_ptr() == blk.attn1.to_v.weight.untyped_storage().data_ptr()
    assert blk.attn2.to_k.bias.untyped_storage().data_ptr() == blk.attn2.to_v.bias.untyped_storage().data_ptr()
    assert blk.attn2.to_q.weight.untyped_storage().data_ptr() != blk.attn2.to_k.weight.untyped_storage().data_ptr()
    assert all(torch.equal(p, params[n]) for n, p in model.named_parameters())
    calls = []
    fused_call = fused_linear.FusedLinear.__call__
    monkeypatch.setattr(
        fused_linear.FusedLinear, "__call__", lambda self, x: calls.append(len(self.sizes)) or fused_call(self, x)
    )
    with KernelCalls() as kc:
        out = _run(model, kw)
    assert sorted(calls) == [2] * LAYERS + [3] * LAYERS
    assert dict(kc.calls) == PER_FORWARD
    assert_close_bf16(out, ref)
    # a weight replaced after injection (a new Parameter, as .to()/offloading do): that attention goes back to its
    # own three projections, with the new values
    with torch.no_grad():
        new_w = blk.attn1.to_k.weight.detach().clone()
        new_w[:3] *= -1
    blk.attn1.to_k.weight = torch.nn.Parameter(new_w)
    calls.clear()
    changed = _run(model, kw)
    assert sorted(calls) == [2] * LAYERS + [3] * (LAYERS - 1)
    procs = [b.attn1.processor for b in model.transformer_blocks] + [
        b.attn2.processor for b in model.transformer_blocks
    ]
    restore(model)
    # the concatenations are dropped at restore (each freed as soon as its modules hold their own copies)
    assert all(p.qkv is None or (p.qkv.weight is None and not p.qkv.intact()) for p in procs)
    assert all(p.kv is None or (p.kv.weight is None and p.kv.bias is None) for p in procs)
    assert_close_bf16(changed, _run(model, kw))
    with torch.no_grad():
        blk.attn1.to_k.weight.copy_(params["transformer_blocks.0.attn1.to_k.weight"])
    # every parameter has its own storage again, holding the original values: bit-identical outputs, and
    # safetensors (which refuses shared memory) can save the model
    assert len(set(_storages(model))) == len(params)
    assert all(torch.equal(p, params[n]) for n, p in model.named_parameters())
    assert_equal(_run(model, kw), ref)
    model.save_pretrained(tmp_path)


def test_projections_that_cannot_be_fused_are_reported():
    from kernels.inject import fused_linear

    model = _transformer()
    blk = model.transformer_blocks[1]
    blk.attn1.to_v.bias = None
    rep = inject(model)
    by_path = {r.path: r for r in rep.replaced}
    assert by_path["transformer_blocks.1.attn1"].kernels == ("qk_norm_rope",)
    assert "projections not fused: some have a bias and some do not" in by_path["transformer_blocks.1.attn1"].note
    assert by_path["transformer_blocks.0.attn1"].kernels == ("qk_norm_rope", "fused_qkv")
    with pytest.raises(ValueError, match="cannot fuse these projections: some have a bias"):
        fused_linear.fuse((blk.attn1.to_q, blk.attn1.to_v))
    restore(model)


def test_rope_tables_are_computed_once_and_shared_by_the_batch(device):
    """The injected rope hands every block one cos/sin table expanded over the batch (batch stride 0), bit for bit
    the stock tables; per-element coordinates (video_coords) take the stock path."""
    model = _transformer()
    kw = _inputs()
    args = (kw["hidden_states"], kw["num_frames"], kw["height"], kw["width"], kw["rope_interpolation_scale"])
    coords = (torch.rand(2, 3, 12, generator=torch.Generator().manual_seed(3)) * 4).to(device)
    stock, stock_coords = model.rope(*args), model.rope(kw["hidden_states"], video_coords=coords)
    rep = inject(model)
    assert {r.path: r.kind for r in rep.replaced}["rope"] == "rope_forward"
    cos, sin = model.rope(*args)
    assert cos.shape == stock[0].shape == (2, 12, 32) and cos.stride(0) == 0 and sin.stride(0) == 0
    assert torch.equal(cos, stock[0]) and torch.equal(sin, stock[1])
    per_element = model.rope(kw["hidden_states"], video_coords=coords)
    assert per_element[0].stride(0) != 0 and torch.equal(per_element[0], stock_coords[0])
    restore(model)
    assert "forward" not in vars(model.rope)
    left = {x.path: x.reason for x in inject(model, kernels=["adaln"]).left}
    assert left["rope"] == "qk_norm_rope not selected (the tables stay per batch element)"
    restore(model)


def test_cross_attention_mask_is_prepared_once_per_forward(monkeypatch, device):
    """Every block's attn2 gets the transformer's one mask: the per-head copy is made by the first block and handed
    to the rest; a changed mask, other sizes or an inference-mode mask are prepared again, each time as diffusers
    does."""
    from diffusers.models.attention import AttentionModuleMixin

    from kernels.inject import attention

    made = []
    stock = AttentionModuleMixin.prepare_attention_mask

    def counting(self, *args, **kwargs):
        made.append(self.heads)
        return stock(self, *args, **kwargs)

    monkeypatch.setattr(AttentionModuleMixin, "prepare_attention_mask", counting)
    model, kw = _transformer(), _inputs()
    expected = _run(model, kw)
    assert len(made) == LAYERS
    inject(model)
    made.clear()
    assert_close_bf16(_run(model, kw), expected)
    assert len(made) == 1
    restore(model)

    attn = model.transformer_blocks[0].attn2
    mask = torch.zeros(2, 1, TXT, device=device)
    mask[0, :, 10:] = -10000.0
    made.clear()
    first = attention.prepared_mask(attn, mask, TXT, 2)
    assert torch.equal(first, stock(attn, mask, TXT, 2).view(2, attn.heads, -1, TXT))
    assert attention.prepared_mask(attn, mask, TXT, 2) is first and len(made) == 1
    mask[1, :, 12:] = -10000.0  # changed in place: its version moved
    again = attention.prepared_mask(attn, mask, TXT, 2)
    assert again is not first and torch.equal(again, stock(attn, mask, TXT, 2).view(2, attn.heads, -1, TXT))
    assert attention.prepared_mask(attn, mask.clone(), TXT, 2) is not again  # another object
    assert attention.prepared_mask(attn, mask[:1], TXT, 1).shape == (1, attn.heads, 1, TXT)
    assert attention.prepared_mask(attn, None, TXT, 2) is None
    with torch.inference_mode():
        frozen = mask.clone()
        one, two = attention.prepared_mask(attn, frozen, TXT, 2), attention.prepared_mask(attn, frozen, TXT, 2)
    assert one is not two and torch.equal(one, two)


def test_modulation_values_of_all_blocks_in_one_add(device):
    """The injected blocks take their shift/scale/gate rows from one add per forward over every block's table, the
    same values bit for bit as each block's own add; a table changed after injection is stacked again; a per-token
    temb, grad mode and restore give each block its own add back."""
    from kernels.inject.ltx import AdaValues

    model, kw = _transformer(), _inputs()
    expected = _run(model, kw)
    rep = inject(model)
    notes = [r.note for r in rep.replaced if r.kind == "block_forward"]
    assert len(notes) == LAYERS and all(
        n.endswith(f"; modulation values of all {LAYERS} blocks in one add per forward") for n in notes
    )
    blocks = list(model.transformer_blocks)
    shared = vars(blocks[0])["_kf_ada"][0]
    assert isinstance(shared, AdaValues) and [vars(b)["_kf_ada"] for b in blocks] == [
        (shared, i) for i in range(LAYERS)
    ]
    assert_close_bf16(_run(model, kw), expected)
    assert (shared.builds, shared.adds) == (1, 1)
    _run(model, kw)
    assert (shared.builds, shared.adds) == (1, 2)

    width = blocks[0].scale_shift_table.shape[1]
    temb = torch.randn(2, 1, 6 * width, generator=torch.Generator().manual_seed(5)).to(BF16).to(device)
    with torch.no_grad():
        for i, blk in enumerate(blocks):
            own = blk.scale_shift_table[None, None] + temb.reshape(2, 1, 6, -1)
            got = shared.values(i, temb, 2)
            assert torch.equal(got, own) and got.stride() == own.stride()
        assert shared.adds == 3
        blocks[1].scale_shift_table.add_(0.5)  # in place: the stacked copy is stale for block 1
        own = blocks[1].scale_shift_table[None, None] + temb.reshape(2, 1, 6, -1)
        assert torch.equal(shared.values(1, temb, 2), own)
        assert shared.builds == 2
        assert shared.values(0, torch.randn(2, 3, 6 * width).to(BF16).to(device), 2) is None  # per-token temb
    assert shared.values(0, temb, 2) is None  # grad mode
    changed = _run(model, kw)
    restore(model)
    assert all("_kf_ada" not in vars(b) for b in blocks)
    assert_close_bf16(changed, _run(model, kw))
