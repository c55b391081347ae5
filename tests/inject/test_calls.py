"""kernels.inject.calls: plain submodules are computed without nn.Module.__call__, bit for bit as the module
computes them; hooked, subclassed, instance-patched or training-mode dropout modules are called as modules."""

import torch
import torch.nn as nn
from diffusers.models.activations import GELU
from diffusers.models.attention import FeedForward

from kernels.inject.calls import call, plain
from tests.support.devices import TEST_DEVICE


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16).to(TEST_DEVICE)


def test_plain_modules_match_their_forward_bit_for_bit(device):
    torch.manual_seed(0)
    x = _x(2, 5, 32)
    ff = FeedForward(32, activation_fn="gelu-approximate").to(device, torch.bfloat16).eval()
    for m in (
        nn.Linear(32, 16).to(device, torch.bfloat16),
        nn.Linear(32, 16, bias=False).to(device, torch.bfloat16),
        GELU(32, 64, approximate="tanh").to(device, torch.bfloat16),
        ff,
        nn.Dropout(0.0),
        nn.Dropout(0.3).eval(),
    ):
        assert plain(m, type(m))
        with torch.no_grad():
            assert torch.equal(call(m, x), m(x)), type(m).__name__
    assert call(nn.Dropout(0.3).eval(), x) is x


def test_anything_else_goes_through_the_module(device):
    x = _x(3, 8)
    lin = nn.Linear(8, 8).to(device)
    seen = []
    handle = lin.register_forward_hook(lambda mod, args, out: seen.append(mod))
    assert not plain(lin, nn.Linear)
    call(lin, x.float())
    assert seen == [lin]  # the hook ran
    handle.remove()

    lin.forward = lambda t: t * 0  # set on the instance: its forward, not nn.Linear's
    assert not plain(lin, nn.Linear)
    assert torch.equal(call(lin, x.float()), torch.zeros(3, 8, device=device))

    class MyLinear(nn.Linear):
        def forward(self, t):
            return super().forward(t) + 1

    sub = MyLinear(8, 8).to(device)
    assert not plain(sub, nn.Linear)
    assert torch.equal(call(sub, x.float()), sub(x.float()))

    drop = nn.Dropout(0.5).train()  # training with p > 0: the module's random mask, not the identity
    torch.manual_seed(1)
    out = call(drop, torch.ones(1000, device=device))
    assert (out == 0).any() and (out == 2).any()


def test_global_hooks_turn_the_shortcut_off(device):
    lin = nn.Linear(4, 4).to(device)
    seen = []
    handle = nn.modules.module.register_module_forward_hook(lambda mod, args, out: seen.append(mod))
    try:
        assert not plain(lin, nn.Linear)
        call(lin, torch.ones(1, 4, device=device))
    finally:
        handle.remove()
    assert seen == [lin]
