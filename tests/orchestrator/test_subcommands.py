"""The developer guide's recipe for a subcommand, checked for every subcommand there is: the parser of
orchestrator/cli.py knows it, orchestrator/__main__.py routes it (SUBCOMMANDS) and `python -m orchestrator --help`
names it, and it answers its own `--help`."""

from __future__ import annotations

import argparse

import pytest
from rich.console import Console

from orchestrator import __main__ as entry
from orchestrator import cli


def _parser_commands() -> list[str]:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_the_parser_and_the_entry_point_know_the_same_subcommands():
    assert _parser_commands() == sorted(entry.SUBCOMMANDS)


@pytest.mark.parametrize("command", sorted(entry.SUBCOMMANDS))
def test_each_subcommand_is_in_help_and_answers_its_own(command, capsys):
    assert entry.main(["--help"]) == 0
    assert f"python -m orchestrator {command}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"], Console())
    assert done.value.code == 0
    assert "usage:" in capsys.readouterr().out
