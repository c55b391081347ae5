"""Fused q/k/v projections under torch.compile (real Dynamo with an eager backend; only ``fused_qkv`` is injected,
so no Triton kernel is traced): compiled LTX-Video blocks use the fused GEMM while the transformer's forward finds
the fused weights intact, are compiled again without it when a weight is replaced, and torch.compile of the whole
transformer keeps the projections separate.  Runs on the test device (tests/support/devices.py); the GPU tests
(test_compile_gpu.py) compile with Inductor."""

import torch
import torch.nn as nn
from diffusers import LTXVideoTransformer3DModel

from kernels.inject import inject, restore
from tests.inject.conftest import GraphRecorder, uncompile
from tests.inject.test_ltx import TRANSFORMER, _inputs
from tests.support.devices import TEST_DEVICE

LAYERS = TRANSFORMER["num_layers"]
# nn.Linear calls per block: attn1 q/k/v (3) + out (1), attn2 q (1) + k/v (2) + out (1), feed-forward (2)
LINEARS_SEPARATE = 10
LINEARS_FUSED = LINEARS_SEPARATE - 2 - 1  # q/k/v as one GEMM, k/v as one


def _model():
    torch.manual_seed(0)
    return LTXVideoTransformer3DModel(**TRANSFORMER).to(TEST_DEVICE).eval()  # fp32: fused and separate GEMMs agree


def test_compiled_blocks_use_the_fused_projections_until_a_weight_is_replaced():
    model, kw = _model(), _inputs(torch.float32)
    with torch.no_grad():
        ref = model(**kw)[0]
        rep = inject(model, kernels=["fused_qkv"])
        assert rep.counts() == {"attn_processor": 2 * LAYERS}
        rec = GraphRecorder()
        torch._dynamo.reset()
        model.compile_repeated_blocks(fullgraph=True, backend=rec)
        out = model(**kw)[0]
        with torch._dynamo.config.patch(error_on_recompile=True):  # the check's answer is the same: no recompile
            assert torch.equal(model(**kw)[0], out)
        assert rec.linears() == [LINEARS_FUSED]  # one graph serves every block
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)

        # a new Parameter: the fused weight no longer holds to_k's values, so the blocks compile again unfused
        attn = model.transformer_blocks[0].attn1
        attn.to_k.weight = nn.Parameter(attn.to_k.weight * 0.5)
        changed = model(**kw)[0]
        assert rec.linears() == [LINEARS_FUSED, LINEARS_SEPARATE]
    uncompile(model)
    restore(model)
    with torch.no_grad():
        torch.testing.assert_close(changed, model(**kw)[0], rtol=1e-5, atol=1e-5)  # the new weight is what counted
        assert not torch.allclose(changed, ref, rtol=1e-3, atol=1e-3)


def test_a_block_called_outside_the_transformers_forward_and_the_whole_model_compiled_stay_separate(device):
    model, kw = _model(), _inputs(torch.float32)
    inject(model, kernels=["fused_qkv"])
    block = model.transformer_blocks[0]
    x = torch.randn(2, 12, block.attn1.query_dim).to(device)
    states = torch.randn(2, 16, block.attn2.cross_attention_dim).to(device)
    temb = torch.randn(2, 1, 6 * block.attn1.query_dim).to(device)
    rec = GraphRecorder()
    torch._dynamo.reset()
    with torch.no_grad():
        model(**kw)  # an eager forward found the weights intact; its answer ends with it
        torch.compile(block, fullgraph=True, backend=rec)(x, states, temb)
        assert rec.linears() == [LINEARS_SEPARATE]  # nothing checked the weights this time
        torch._dynamo.reset()
        rec.graphs.clear()
        compiled = torch.compile(model, fullgraph=True, backend=rec)
        out = compiled(**kw)[0]
    # every nn.Linear of the model called once: the projections stay separate
    assert rec.linears() == [sum(isinstance(m, nn.Linear) for m in model.modules())]
    with torch.no_grad():
        torch.testing.assert_close(out, model(**kw)[0], rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()


def test_restore_removes_the_forward_check():
    model = _model()
    hooks = (dict(model._forward_pre_hooks), dict(model._forward_hooks))
    inject(model, kernels=["fused_qkv"])
    assert len(model._forward_pre_hooks) == len(hooks[0]) + 1 and len(model._forward_hooks) == len(hooks[1]) + 1
    inject(model, kernels=["fused_qkv"])  # injecting twice is injecting once
    assert len(model._forward_pre_hooks) == len(hooks[0]) + 1
    fused = model.transformer_blocks[0].attn1.processor.qkv
    restore(model)
    assert (dict(model._forward_pre_hooks), dict(model._forward_hooks)) == hooks
    assert fused.check is None
