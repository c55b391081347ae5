"""The CLI's words: the CPU refusal's suggested commands keep the user's grid, a bare sweep=NAME gets the '+' hint."""

from __future__ import annotations

import pytest

from orchestrator.config import compose as config
from orchestrator.run.sweep import _kept_overrides


def test_suggested_commands_keep_the_users_grid_overrides_quoted_for_the_shell():
    kept = _kept_overrides(
        ["+sweep=rmsnorm", "sweep.dtypes=[bf16]", "sweep.impls=[triton,eager]", "allow_cpu=false", "target=any"]
    )
    assert kept == " 'sweep.dtypes=[bf16]' 'sweep.impls=[triton,eager]'"
    assert _kept_overrides(["+sweep=rmsnorm"]) == ""


def test_sweep_without_plus_says_to_write_it_with_plus():
    with pytest.raises(config.ConfigError, match=r"^sweep=rmsnorm: write \+sweep=rmsnorm"):
        config.compose(["sweep=rmsnorm"])
