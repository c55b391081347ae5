"""Plain eager calls launch the kernel directly (no op dispatch cost); anything that traces sees the torch op.

Every kernel's op under tracing, and on a GPU its fast launch against Triton's own, are checked from its registry
entry in tests/kernels/test_contract.py.
"""

from __future__ import annotations

import pytest
import torch

from kernels import registry
from kernels.arch import interpreting
from kernels.launch import eager_direct
from tests.support import contract


def test_eager_calls_go_direct():
    x = torch.randn(4, 64)
    assert eager_direct(x, None)


def test_tensors_that_need_grad_go_through_the_op():
    x = torch.randn(4, 64, requires_grad=True)
    assert not eager_direct(x)
    with torch.no_grad():
        assert eager_direct(x)


def test_module_weights_go_direct_under_no_grad():
    """A module's weight is an nn.Parameter: with grad off it takes the direct launch like a plain tensor."""
    x, norm = torch.randn(2, 8, 64), torch.nn.RMSNorm(64)
    with torch.no_grad():
        assert eager_direct(x, norm.weight)
    assert not eager_direct(x, norm.weight)  # grad on and the weight requires grad: the op records it


def test_other_tensor_subclasses_go_through_the_op():
    class Sub(torch.Tensor):
        pass

    with torch.no_grad():
        assert not eager_direct(torch.randn(4).as_subclass(Sub))


def test_fast_launch_key_follows_tritons_specialisation():
    from kernels.fast_launch import _specialise

    def _arg_key(a):
        return _specialise((a,))[0][0]

    base = torch.empty(64)
    assert _arg_key(base) == (torch.float32, True)
    assert _arg_key(base[1:]) == (torch.float32, False)  # 4-byte offset: not 16-byte aligned, another binary
    # an int's key: bit 0 = is 1, bit 1 = divisible by 16, bit 2 = past int32 (Triton passes it as int64)
    assert (_arg_key(1), _arg_key(32), _arg_key(33), _arg_key(-48)) == (1, 2, 0, 2)
    assert _arg_key(1 << 40) == 6 and _arg_key(-(1 << 31)) == 2 and _arg_key((1 << 31) + 1) == 4
    assert _arg_key(1e-6) is float and _arg_key(True) is True and _arg_key(None) is None
    with pytest.raises(TypeError, match="unsupported argument type str"):
        _arg_key("x")


def test_fast_launch_passes_tensors_as_addresses():
    from kernels.fast_launch import _specialise

    t = torch.empty(8, dtype=torch.bfloat16)
    key, values = _specialise((t, 3, 1e-6, None, torch.nn.Parameter(t)))
    assert values == [t.data_ptr(), 3, 1e-6, None, t.data_ptr()]
    assert key == ((torch.bfloat16, True), 0, float, None, (torch.bfloat16, True))


@pytest.mark.skipif(not interpreting(), reason="needs Triton's interpreter (TRITON_INTERPRET=1), as on a CPU host")
def test_direct_launch_under_the_interpreter_takes_tritons_path():
    from kernels import fast_launch

    with torch.no_grad():
        for entry in registry.builtin().values():
            entry.impls["triton"].make()(**contract.inputs_of(entry))
    assert not any(launcher.cache for launcher in fast_launch.direct_launchers())
