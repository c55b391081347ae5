"""kernels.inject.compile_options: the options torch.compile gets for an injected model, and the process-wide switch
it sets (CPU; the GPU tests in test_compile_gpu.py compile with static launches)."""

import os

import pytest
import torch
import torch._inductor.config as inductor_config

from kernels.inject import compile_options
from kernels.inject.compile_options import STATIC_LAUNCH, STATIC_LAUNCH_ENV


@pytest.fixture(autouse=True)
def _switch_off(monkeypatch):
    """Each test starts with the switch off and leaves the process as it found it.

    The option is switched through Inductor's own ``config.patch``, which restores its value on exit.  Not with
    ``monkeypatch.setattr``: the config module serves its options from ``__getattr__``, not from the module's
    ``__dict__``, so pytest (9.x) records "no previous value" and undoes the patch with ``delattr`` -- which the config
    module takes as hiding the option: it then raises AttributeError (``hasattr`` is false) until it is set again."""
    monkeypatch.setenv(STATIC_LAUNCH_ENV, "set below")  # records the variable's state before the test
    monkeypatch.delenv(STATIC_LAUNCH_ENV)
    with inductor_config.patch({STATIC_LAUNCH: False}):
        yield


def test_static_launch_of_user_kernels_is_asked_for():
    assert compile_options() == {STATIC_LAUNCH: True}
    assert compile_options("default") == {STATIC_LAUNCH: True}
    assert os.environ[STATIC_LAUNCH_ENV] == "1"  # for Inductor's compile workers, which read only the environment
    assert getattr(inductor_config, STATIC_LAUNCH) is True  # for kernels compiled in this process


def test_a_set_environment_variable_is_left_alone(monkeypatch):
    monkeypatch.setenv(STATIC_LAUNCH_ENV, "0")
    assert compile_options() == {STATIC_LAUNCH: True}
    assert os.environ[STATIC_LAUNCH_ENV] == "0"


def test_a_mode_brings_its_own_options():
    opts = compile_options("max-autotune-no-cudagraphs")
    assert opts == {**torch._inductor.list_mode_options("max-autotune-no-cudagraphs"), STATIC_LAUNCH: True}
    assert opts["max_autotune"] is True


def test_unknown_mode_is_refused():
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        compile_options("fastest")


@pytest.mark.parametrize("mode", [None, "max-autotune-no-cudagraphs"])
def test_torch_compile_accepts_them(mode):
    # torch.compile checks every option name against Inductor's config when it is called
    compiled = torch.compile(lambda x: x + 1, options=compile_options(mode))
    assert callable(compiled)
    with pytest.raises(RuntimeError):
        torch.compile(lambda x: x + 1, options={"no_such_inductor_option": True})
