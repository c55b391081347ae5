"""An injected model asked for gradients (kernels.inject.grad), checked as transformers' Llama tests and diffusers'
LTX-Video/FLUX/SD3 training tests check the stock models: a tiny model of each family, injected, takes a training
step whose gradients (every parameter's) are the uninjected model's; with gradient checkpointing on; with
``retain_grad`` on a block's output; under ``torch.compile`` in training mode.  Under ``no_grad`` and
``inference_mode`` the same model still runs the injected kernels; ``grad="error"`` raises at the first call that
wants a gradient, naming the module."""

import copy
import warnings

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from kernels import registry
from kernels.inject import GRAD_MODES, GradNotSupported, cuda_graphs, inject, remove_cuda_graphs, restore
from kernels.inject import grad as kgrad
from tests.inject.conftest import KernelCalls
from tests.inject.test_flux_sd3 import _flux, _flux_inputs, _sd3, _sd3_inputs
from tests.inject.test_llama import SMALL
from tests.inject.test_ltx import _inputs as _ltx_inputs
from tests.inject.test_ltx import _transformer as _ltx
from tests.support.devices import TEST_DEVICE

F32 = torch.float32
FAMILIES = ["llama", "ltx", "flux", "sd3"]
IDS = torch.randint(0, SMALL["vocab_size"], (2, 7), generator=torch.Generator().manual_seed(5))


class _Family:
    """A tiny fp32 model of one family in training mode, its inputs, its loss and its first block."""

    def __init__(self, name: str):
        self.name = name

    def model(self) -> torch.nn.Module:
        if self.name == "llama":
            torch.manual_seed(0)
            m = LlamaForCausalLM(LlamaConfig(**SMALL))
        elif self.name == "ltx":
            m = _ltx(dtype=F32)
        elif self.name == "flux":
            m = _flux(dtype=F32)
        else:
            m = _sd3(dtype=F32)
        return m.to(TEST_DEVICE, F32).train()

    def inputs(self) -> dict:
        if self.name == "llama":
            ids = IDS.to(TEST_DEVICE)
            return dict(input_ids=ids, labels=ids)
        return {"ltx": _ltx_inputs, "flux": _flux_inputs, "sd3": _sd3_inputs}[self.name](dtype=F32)

    def loss(self, model, kw) -> torch.Tensor:
        if self.name == "llama":
            return model(**kw).loss
        out = model(**kw)[0]
        return (out.float() - 0.5).square().mean()

    def first_block(self, model) -> torch.nn.Module:
        if self.name == "llama":
            return model.model.layers[0]
        return model.transformer_blocks[0]

    def checkpointing(self, model, reentrant: bool = False) -> None:
        if self.name == "llama":
            assert not _checkpointing_on(model)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # the deprecated name the peers' tests call
                model.gradient_checkpointing_enable({"use_reentrant": reentrant})
            assert _checkpointing_on(model)
        else:
            model.enable_gradient_checkpointing()
            assert model.is_gradient_checkpointing


def _checkpointing_on(model) -> bool:
    """Whether a transformers model checkpoints activations: one of its modules has its ``gradient_checkpointing``
    flag set.  (What transformers' own property computes: 4.50 to 5.17 name it ``is_gradient_checkpointing``, 5.24
    ``is_activation_checkpointing``, with the old name a deprecated alias.)"""
    return any(bool(getattr(m, "gradient_checkpointing", False)) for m in model.modules())


def _pair(fam: _Family, **inject_kw):
    """The stock model and an injected copy of it (same weights)."""
    ref = fam.model()
    model = copy.deepcopy(ref)
    rep = inject(model, **inject_kw)
    assert rep.replaced, rep.summary()
    return ref, model, rep


def _retain_first_block_output(fam: _Family, model) -> list:
    """Keep the first block's output(s) with ``retain_grad`` (a forward hook); returns the list they go in."""
    kept = []

    def hook(module, args, output):
        for t in output if isinstance(output, tuple) else (output,):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                t.retain_grad()
                kept.append(t)

    fam.first_block(model).register_forward_hook(hook)
    return kept


def _assert_same_grads(ref, model, rtol=1e-5, atol=1e-6) -> int:
    """Every parameter's gradient equal within fp32 rounding; returns how many parameters got one."""
    n = 0
    for (name, p), (name2, q) in zip(ref.named_parameters(), model.named_parameters(), strict=True):
        assert name == name2
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            torch.testing.assert_close(q.grad, p.grad, rtol=rtol, atol=atol, msg=lambda m, name=name: f"{name}: {m}")
            n += 1
    return n


def _train_step(fam: _Family, model, kw, opt) -> float:
    opt.zero_grad()
    loss = fam.loss(model, kw)
    loss.backward()
    return loss.item()


# ----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("checkpointing", [False, True], ids=["plain", "checkpointing"])
@pytest.mark.parametrize("family", FAMILIES)
def test_training_step_has_the_stock_gradients(family, checkpointing):
    """Forward, backward, an optimizer step and a second forward: the injected model's losses and every parameter's
    gradient are the stock model's, no kernel runs while autograd wants gradients, the retained grad of a block's
    output is the stock one; then, on the same (training-mode) model, no_grad and inference_mode use the kernels."""
    fam = _Family(family)
    ref, model, rep = _pair(fam)
    assert rep.grad == "fallback" and "grad=fallback" in rep.summary() and rep.to_dict()["grad"] == "fallback"
    if checkpointing:
        fam.checkpointing(ref)
        fam.checkpointing(model)
    kw = fam.inputs()
    kept_ref, kept = _retain_first_block_output(fam, ref), _retain_first_block_output(fam, model)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)

    loss_ref = _train_step(fam, ref, kw, opt_ref)
    with KernelCalls() as kc:
        loss = _train_step(fam, model, kw, opt)
    assert dict(kc.calls) == {}  # every kernel call wanted a gradient: the model's own code ran
    assert loss == pytest.approx(loss_ref, rel=1e-6)
    n = _assert_same_grads(ref, model)
    assert n >= 0.9 * sum(1 for _ in ref.parameters())
    assert kept and len(kept) == len(kept_ref)
    for t, r in zip(kept, kept_ref):
        assert t.grad is not None
        torch.testing.assert_close(t.grad, r.grad, rtol=1e-5, atol=1e-6)

    # the step changes the weights alike (fused projections included: their modules' weights are views)
    opt_ref.step()
    opt.step()
    loss_ref2, loss2 = _train_step(fam, ref, kw, opt_ref), _train_step(fam, model, kw, opt)
    assert loss2 == pytest.approx(loss_ref2, rel=1e-5) and loss2 != pytest.approx(loss_ref, rel=1e-6)
    _assert_same_grads(ref, model, rtol=1e-4, atol=1e-5)

    # the same model, its parameters still requiring grad, in training mode: no_grad (inference_mode with
    # checkpointing on, to keep the interpreted calls few) uses the kernels
    with (torch.inference_mode if checkpointing else torch.no_grad)(), KernelCalls() as kc:
        out = fam.loss(model, kw)
        ref_out = fam.loss(ref, kw)
    # the report names kernels, the counter their public functions
    assert sum(kc.calls.values()) > 0 and {registry.kernel_name(f) for f in kc.calls} <= set(rep.kernels_used())
    assert out.item() == pytest.approx(ref_out.item(), rel=1e-4)


def test_reentrant_checkpointing_runs_kernels_forward_and_stock_code_in_the_recompute():
    """transformers' reentrant variant runs the checkpointed forward under no_grad (the kernels) and recomputes it
    for backward with autograd on (the model's code): gradients within fp32 rounding of the stock model's."""
    fam = _Family("llama")
    ref, model, _ = _pair(fam)
    fam.checkpointing(ref, reentrant=True)
    fam.checkpointing(model, reentrant=True)
    kw = fam.inputs()
    fam.loss(ref, kw).backward()
    with KernelCalls() as kc:
        fam.loss(model, kw).backward()
    # the layers' checkpointed forwards (two norms, RoPE on q and k each); not the recomputes, nor the final norm
    assert dict(kc.calls) == {
        "rms_norm": 2 * SMALL["num_hidden_layers"],
        "rope_rotate_half": 2 * SMALL["num_hidden_layers"],
    }
    _assert_same_grads(ref, model, rtol=1e-4, atol=1e-5)


def test_only_the_calls_that_want_gradients_fall_back():
    """With the weights frozen and the input not requiring grad, autograd records nothing through the kernels:
    they run (with grad mode on); an input that requires grad makes exactly the calls it reaches fall back."""
    fam = _Family("ltx")
    ref, model, rep = _pair(fam)
    for m in (ref, model):
        m.requires_grad_(False)
    kw = fam.inputs()
    with KernelCalls() as kc:
        out = model(**kw)[0]
    assert not out.requires_grad and kc.calls["qk_norm_rope"] == 2 and kc.calls["gated_residual"] == 4
    # a grad-requiring encoder state reaches attn2 (k/v, cross-attention) and everything after it in each block
    kw["encoder_hidden_states"] = kw["encoder_hidden_states"].clone().requires_grad_()
    with KernelCalls() as kc:
        out = model(**kw)[0]
    assert out.requires_grad
    assert kc.calls["qk_norm_rope"] == 1  # block 0's self-attention comes before any grad-requiring tensor
    assert kc.calls["adaln_rms"] == 1 and kc.calls["gated_residual"] == 1  # block 0's norm1 and attn1 residual
    assert kc.calls["rms_norm"] == 1  # block 0's attn2 norm_q (its query comes from the hidden states)
    assert "cross_attention" not in kc.calls and "add_rms_norm_modulate" not in kc.calls
    kw_ref = dict(kw, encoder_hidden_states=kw["encoder_hidden_states"].detach().clone().requires_grad_())
    ((ref(**kw_ref)[0] - 0.5).square().mean()).backward()
    ((out - 0.5).square().mean()).backward()
    torch.testing.assert_close(
        kw["encoder_hidden_states"].grad, kw_ref["encoder_hidden_states"].grad, rtol=1e-4, atol=1e-6
    )


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llama", "ltx"])
def test_compile_in_training_mode_traces_the_model_code(family):
    """torch.compile (fullgraph, AOTAutograd) of an injected model in training mode: the graph holds no kernelfleet
    op (the fallback is what Dynamo traces, so it compiles where the Triton ops could not) and the gradients are
    the stock eager model's."""
    from torch._dynamo.backends.registry import lookup_backend

    fam = _Family(family)
    ref, model, _ = _pair(fam)
    kw = fam.inputs()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return lookup_backend("aot_eager")(gm, example_inputs)

    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, backend=backend, fullgraph=True)
        fam.loss(ref, kw).backward()
        fam.loss(compiled, kw).backward()
    finally:
        torch._dynamo.reset()
    assert graphs
    targets = {str(n.target) for gm in graphs for n in gm.graph.nodes if n.op == "call_function"}
    assert not [t for t in targets if "kernelfleet" in t], targets
    _assert_same_grads(ref, model, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------------------------------------------
def test_grad_argument_is_checked_and_a_new_mode_reinjects():
    model = _Family("llama").model()
    with pytest.raises(ValueError, match=r"grad='raise' is not supported; allowed: 'fallback', 'error'"):
        inject(model, grad="raise")
    with pytest.raises(ValueError, match="allowed: 'fallback', 'error'"):
        inject(model, grad=None)
    assert GRAD_MODES == ("fallback", "error")
    assert inject(model).grad == "fallback"
    assert inject(model).already_injected
    rep = inject(model, grad="error")
    assert not rep.already_injected and rep.grad == "error" and "grad=error" in rep.summary()
    assert inject(model, grad="error").already_injected
    restore(model)


@pytest.mark.parametrize(
    "family, kernels, where",
    [
        ("llama", "all", r"^model\.layers\.0\.input_layernorm \(LlamaRMSNorm\): kernelfleet's rmsnorm "),
        (
            "llama",
            ["rope_rotate_half"],
            r"^model\.layers\.0\.self_attn \(LlamaAttention\): kernelfleet's rope_rotate_half ",
        ),
        ("ltx", "all", r"^transformer_blocks\.0\.norm1 \(RMSNorm\): kernelfleet's adaln "),
        ("flux", "all", r"^transformer_blocks\.0\.norm1\.norm \(LayerNorm\): kernelfleet's adaln_layer_norm "),
        ("sd3", ["rmsnorm"], r"^transformer_blocks\.0\.attn\.norm_q \(RMSNorm\): kernelfleet's rmsnorm "),
    ],
)
def test_error_mode_raises_at_the_first_call_naming_the_module(family, kernels, where):
    fam = _Family(family)
    model = fam.model()
    live = kgrad._live_errors
    inject(model, kernels=kernels, grad="error")
    kw = fam.inputs()
    with pytest.raises(GradNotSupported, match=where) as err:
        fam.loss(model, kw)
    msg = str(err.value)
    assert "\n" not in msg and "grad='error'" in msg and "grad='fallback'" in msg
    with torch.no_grad(), KernelCalls() as kc:
        fam.loss(model, kw)
    assert sum(kc.calls.values()) > 0
    restore(model)
    assert kgrad._live_errors == live
    fam.loss(model, kw).backward()  # the stock model again


def test_a_fallback_model_beside_an_error_model():
    """Each injection keeps its own mode."""
    fam = _Family("llama")
    erring, falling = fam.model(), fam.model()
    inject(erring, grad="error")
    inject(falling)
    try:
        fam.loss(falling, fam.inputs()).backward()
        with pytest.raises(GradNotSupported):
            fam.loss(erring, fam.inputs())
    finally:
        restore(erring)
        restore(falling)


# ----------------------------------------------------------------------------------------------------------------
class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x))


def test_cuda_graphs_call_plainly_when_autograd_wants_a_gradient(device):
    """A graphed module called with autograd recording and a parameter or input requiring grad runs its plain
    forward (gradients flow); with nothing requiring grad, or under no_grad, the call is the graph's to take."""
    net = _Net().to(device)
    graphed = cuda_graphs(net)
    try:
        x = torch.randn(3, 8).to(device)
        net(x).sum().backward()
        assert graphed.plain_for_grad == 1 and net.lin.weight.grad is not None
        with torch.no_grad():
            net(x)
        net.requires_grad_(False)
        net(x)
        assert graphed.plain_for_grad == 1
        net(x.requires_grad_())
        assert graphed.plain_for_grad == 2
    finally:
        remove_cuda_graphs(net)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_graphs_capture_only_calls_without_gradients():
    torch.manual_seed(0)
    net = _Net().cuda()
    graphed = cuda_graphs(net)
    try:
        x = torch.randn(4, 8, device="cuda")
        out = net(x)
        out.sum().backward()
        assert graphed.captures == 0 and graphed.replays == 0 and net.lin.weight.grad is not None
        with torch.no_grad():
            torch.testing.assert_close(net(x).clone(), out.detach())
        assert graphed.captures == 1 and graphed.replays == 1
    finally:
        remove_cuda_graphs(net)
