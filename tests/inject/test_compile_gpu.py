"""On a GPU: the kernelfleet ops pass torch.library.opcheck, and injected models compile with fullgraph=True
(``compile_repeated_blocks`` and ``torch.compile`` of the whole model) with the kernels inside the compiled graph
and outputs that still match eager.  On the CPU the kernels run in Triton's interpreter, which torch.compile cannot
trace, so these tests are skipped there."""

import pytest
import torch

from kernels.arch import interpreting
from tests.inject.conftest import GraphRecorder, uncompile

pytestmark = [
    pytest.mark.gpu,
    # compiles and compares, times nothing: a GPU chain of its own beside the timing tests' (tests/conftest.py)
    pytest.mark.xdist_group("gpu-compile"),
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason="needs a CUDA or ROCm GPU (torch.compile of Triton kernels; the CPU interpreter cannot be traced)",
    ),
    pytest.mark.skipif(interpreting(), reason="TRITON_INTERPRET=1 is set: GPU tests need compiled Triton"),
]

DEV = "cuda"
BF16 = torch.bfloat16
# the kernelfleet ops an injected LTX-Video block traces to (addmm_gelu_tanh: the feed-forward's GEMM + GELU)
LTX_OPS = {"qk_norm_rope", "rms_norm", "adaln_rms", "add_rms_norm_modulate", "addmm_gelu_tanh", "cross_attention"}


def _rand(*shape, dtype=BF16):
    return torch.randn(*shape, device=DEV, dtype=torch.float32).to(dtype)


# ----------------------------------------------------------------------------------------------------------------
# opcheck
# ----------------------------------------------------------------------------------------------------------------
def _op_cases():
    B, S, C = 2, 96, 256
    x, r = _rand(B, S, C), _rand(B, S, C)
    w = _rand(C)
    sc, sh = _rand(B, 1, C) * 0.1, _rand(B, 1, C) * 0.1
    sct, sht = _rand(B, S, C) * 0.1, _rand(B, S, C) * 0.1
    cos, sin = _rand(B, S, C, dtype=torch.float32), _rand(B, S, C, dtype=torch.float32)
    q4 = _rand(B, S, 4, 64)
    cos2, sin2 = _rand(S, 64, dtype=torch.float32), _rand(S, 64, dtype=torch.float32)
    qh = _rand(B, 4, S, 64)
    cosb, sinb = _rand(B, S, 64), _rand(B, S, 64)
    ops = torch.ops.kernelfleet
    return {
        "rms_norm_torch": (ops.rms_norm.default, (x, w, 1e-5, "torch")),
        "rms_norm_diffusers": (ops.rms_norm.default, (x, w, 1e-6, "diffusers")),
        "rms_norm_llama_noweight": (ops.rms_norm.default, (x, None, 1e-6, "llama")),
        "adaln_rms": (ops.adaln_rms.default, (x, sc, sh, None, 1e-6)),
        "adaln_rms_per_token": (ops.adaln_rms.default, (x, sct, sht, None, 1e-6)),
        "adaln_layer_norm": (ops.adaln_layer_norm.default, (x, sc, sh, None, None, 1e-6)),
        "qk_norm_rope": (ops.qk_norm_rope.default, (x, r, w, w, cos, sin, 1e-5)),
        "add_rms_norm_modulate": (ops.add_rms_norm_modulate.default, (x, r, sct, sht, 1e-6)),
        "rope_interleaved": (ops.rope_interleaved.default, (q4, cos2, sin2, 1)),
        "rope_rotate_half": (ops.rope_rotate_half.default, (qh, cosb, sinb, 2, True)),
    }


OP_CASES = [
    "rms_norm_torch",
    "rms_norm_diffusers",
    "rms_norm_llama_noweight",
    "adaln_rms",
    "adaln_rms_per_token",
    "adaln_layer_norm",
    "qk_norm_rope",
    "add_rms_norm_modulate",
    "rope_interleaved",
    "rope_rotate_half",
]


@pytest.mark.parametrize("case", OP_CASES)
def test_opcheck(case):
    import kernels  # noqa: F401  (registers the ops)

    op, args = _op_cases()[case]
    torch.library.opcheck(op, args)


# ----------------------------------------------------------------------------------------------------------------
# fullgraph compile of injected models
# ----------------------------------------------------------------------------------------------------------------
class _Recording(GraphRecorder):
    """Dynamo's graphs, compiled with Inductor."""

    def __init__(self):
        super().__init__(inductor=True)

    def kernel_ops(self) -> set[str]:
        names = set()
        for gm in self.graphs:
            for node in gm.graph.nodes:
                if node.op == "call_function" and str(node.target).startswith("kernelfleet."):
                    names.add(str(node.target).split(".")[1])
        return names


def _rel_l2(a, b):
    a, b = a.double(), b.double()
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item()


def _ltx(layers=2):
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    with torch.device(DEV):
        m = LTXVideoTransformer3DModel(num_layers=layers)  # real width (32 heads x 64 = 2048), fewer blocks
    return m.to(BF16).eval()


def _ltx_inputs(per_token=False, f=4, h=15, w=22):  # default: the seed setting's latent, 1320 tokens
    g = torch.Generator(DEV).manual_seed(1)
    mask = torch.ones(2, 128, device=DEV)
    mask[0, 90:] = 0
    t = torch.rand(2, f * h * w, device=DEV, generator=g) * 1000 if per_token else torch.full((2,), 700.0, device=DEV)
    return dict(
        hidden_states=torch.randn(2, f * h * w, 128, device=DEV, generator=g).to(BF16),
        encoder_hidden_states=torch.randn(2, 128, 4096, device=DEV, generator=g).to(BF16),
        timestep=t,
        encoder_attention_mask=mask,
        num_frames=f,
        height=h,
        width=w,
        rope_interpolation_scale=(0.32, 32, 32),
        return_dict=False,
    )


@pytest.mark.parametrize("per_token", [False, True], ids=["temb_broadcast", "temb_per_token"])
def test_ltx_compile_repeated_blocks_fullgraph(per_token):
    from kernels.inject import inject, restore

    model, kw = _ltx(), _ltx_inputs(per_token)
    with torch.no_grad():
        ref = model(**kw)[0]
        rep = inject(model)
        eager_injected = model(**kw)[0]
        rec = _Recording()
        torch._dynamo.reset()
        model.compile_repeated_blocks(fullgraph=True, backend=rec)
        out = model(**kw)[0]
        with torch._dynamo.config.patch(error_on_recompile=True):  # guards hold: no recompilation
            out2 = model(**kw)[0]
    assert rep.counts() == {"attn_processor": 4, "block_forward": 2, "rope_forward": 1}
    assert rec.graphs, "nothing was compiled"
    assert rec.kernel_ops() == LTX_OPS
    # one graph for both blocks; its GEMMs: attn1's q/k/v as one and out, attn2's q, k/v as one and out, the
    # feed-forward's second (its first is addmm_gelu_tanh)
    assert rec.linears() == [6]
    assert _rel_l2(eager_injected, ref) < 1e-2
    assert _rel_l2(out, ref) < 3e-2 and torch.isfinite(out).all()
    assert torch.equal(out, out2)
    uncompile(model)
    restore(model)
    with torch.no_grad():
        assert torch.equal(model(**kw)[0], ref)


def _user_kernel_autotuners() -> dict[int, object]:
    """Inductor's launch objects (CachingAutotuner) of user-defined Triton kernels alive in this process."""
    import gc

    from torch._inductor.runtime.triton_heuristics import CachingAutotuner, HeuristicType

    found = {}
    for o in gc.get_objects():
        try:
            if isinstance(o, CachingAutotuner) and o.heuristic_type == HeuristicType.USER_AUTOTUNE:
                found[id(o)] = o
        except ReferenceError:  # a weak proxy whose object is gone
            continue
    return found


def test_ltx_compiled_with_static_launch_of_our_kernels():
    """What ``kernels.inject.compile_options`` asks Inductor for: our kernels launched by its static launcher, with
    the same results.  (Set on this process's config and compiled in this process: compile workers started by
    earlier tests lack the environment variable compile_options sets for workers it precedes.)"""
    from kernels.inject import inject, restore
    from kernels.inject.compile_options import STATIC_LAUNCH

    model = _ltx()
    # a latent size no other test compiles: Inductor reuses a generated module of the same source in-process, and
    # with it the launchers made when it was first loaded
    kw = _ltx_inputs(f=2, h=12, w=20)
    with torch.no_grad():
        ref = model(**kw)[0]
        inject(model)
        torch._dynamo.reset()
        before = _user_kernel_autotuners()
        with torch._inductor.config.patch({STATIC_LAUNCH: True, "compile_threads": 1}):
            model.compile_repeated_blocks(fullgraph=True)
            out = model(**kw)[0]
        again = model(**kw)[0]
    # the autotuners that launched something (an in-process compile also leaves some that never loaded a launcher)
    used = [a for k, a in _user_kernel_autotuners().items() if k not in before and a.launchers]
    assert {"_adaln_kernel", "_qk_norm_rope_kernel", "_add_rms_norm_modulate_kernel", "_rms_norm_kernel"} <= {
        a.fn.__name__ for a in used
    }
    not_static = sorted({a.fn.__name__ for a in used if not all(getattr(x, "_is_static", False) for x in a.launchers)})
    assert not not_static, f"launched through Triton's own launcher: {not_static}"
    assert _rel_l2(out, ref) < 3e-2 and torch.isfinite(out).all()
    assert torch.equal(out, again)
    uncompile(model)
    restore(model)


def _whole_model_cases():
    from diffusers import FluxTransformer2DModel, SD3Transformer2DModel
    from transformers import LlamaConfig, LlamaForCausalLM

    def ltx():
        return _ltx(1), _ltx_inputs(), LTX_OPS

    def flux():
        torch.manual_seed(0)
        with torch.device(DEV):
            m = FluxTransformer2DModel(
                num_layers=1,
                num_single_layers=1,
                num_attention_heads=4,
                joint_attention_dim=256,
                pooled_projection_dim=128,
            )
        g = torch.Generator(DEV).manual_seed(1)
        seq, txt = 256, 32
        kw = dict(
            hidden_states=torch.randn(2, seq, 64, device=DEV, generator=g).to(BF16),
            encoder_hidden_states=torch.randn(2, txt, 256, device=DEV, generator=g).to(BF16),
            pooled_projections=torch.randn(2, 128, device=DEV, generator=g).to(BF16),
            timestep=torch.tensor([0.3, 0.7], device=DEV).to(BF16),
            guidance=torch.tensor([3.5, 3.5], device=DEV).to(BF16) if m.config.guidance_embeds else None,
            img_ids=torch.randint(0, 16, (seq, 3), device=DEV).float(),
            txt_ids=torch.zeros(txt, 3, device=DEV),
            return_dict=False,
        )
        return m.to(BF16).eval(), kw, {"rms_norm", "rope_interleaved", "adaln_layer_norm", "addmm_gelu_tanh"}

    def sd3():
        torch.manual_seed(0)
        with torch.device(DEV):
            m = SD3Transformer2DModel(
                sample_size=32,
                num_layers=2,
                attention_head_dim=64,
                num_attention_heads=4,
                joint_attention_dim=256,
                caption_projection_dim=256,
                pooled_projection_dim=128,
                pos_embed_max_size=32,
                qk_norm="rms_norm",
                dual_attention_layers=(0,),
            )
        g = torch.Generator(DEV).manual_seed(1)
        kw = dict(
            hidden_states=torch.randn(2, 16, 32, 32, device=DEV, generator=g).to(BF16),
            encoder_hidden_states=torch.randn(2, 32, 256, device=DEV, generator=g).to(BF16),
            pooled_projections=torch.randn(2, 128, device=DEV, generator=g).to(BF16),
            timestep=torch.tensor([200, 800], device=DEV),
            return_dict=False,
        )
        return m.to(BF16).eval(), kw, {"rms_norm", "adaln_layer_norm", "addmm_gelu_tanh"}

    def llama():
        torch.manual_seed(0)
        cfg = LlamaConfig(
            hidden_size=256,
            intermediate_size=512,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=1000,
        )
        with torch.device(DEV):
            m = LlamaForCausalLM(cfg)
        ids = torch.randint(0, 1000, (2, 64), device=DEV, generator=torch.Generator(DEV).manual_seed(1))
        return (
            m.to(BF16).eval(),
            dict(input_ids=ids, use_cache=False, return_dict=False),
            {"rms_norm", "rope_rotate_half"},
        )

    return {"ltx": ltx, "flux": flux, "sd3": sd3, "llama": llama}


@pytest.mark.parametrize("family", ["ltx", "flux", "sd3", "llama"])
def test_torch_compile_whole_model_fullgraph(family):
    from kernels.inject import inject, restore

    model, kw, expected_ops = _whole_model_cases()[family]()
    with torch.no_grad():
        ref = model(**kw)[0]
        inject(model)
        rec = _Recording()
        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True, backend=rec)
        out = compiled(**kw)[0]
        with torch._dynamo.config.patch(error_on_recompile=True):  # guards hold: no recompilation
            again = compiled(**kw)[0]
    assert torch.equal(out, again)
    assert rec.kernel_ops() == expected_ops
    assert torch.isfinite(out.float()).all()
    assert _rel_l2(out, ref) < 3e-2
    torch._dynamo.reset()
    restore(model)
    with torch.no_grad():
        assert torch.equal(model(**kw)[0], ref)
