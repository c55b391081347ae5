"""The subcommands of `python -m orchestrator` are the declarations of the modules orchestrator/cli/commands.py lists
(orchestrator/cli/subcommand.py): the parser and `--help` are built from them, each answers its own `--help`, and a
module that cannot be imported fails the command loudly, naming it."""

from __future__ import annotations

import argparse
import sys

import pytest
from rich.console import Console

from orchestrator import __main__ as entry
from orchestrator.cli import commands as cli


def _parser_commands() -> list[str]:
    parser = cli.parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_the_parser_knows_every_declared_subcommand_and_nothing_else():
    declared = [c.name for c in cli.commands()]
    assert _parser_commands() == declared
    assert {"db", "import", "export", "runs", "report", "regressions", "compare", "bisect", "explain", "tune"} <= set(
        declared
    )
    assert {"node", "cluster"} <= set(declared)  # fleet_cli declares two


def test_help_lists_every_subcommand_with_its_help(capsys):
    assert entry.main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the help lines are wrapped
    for c in cli.commands():
        assert f"python -m orchestrator {c.name} {' '.join(c.help.split())}" in out


@pytest.mark.parametrize("command", [c.name for c in cli.commands()])
def test_each_subcommand_answers_its_own_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"], Console())
    assert done.value.code == 0
    assert f"usage: python -m orchestrator {command}" in capsys.readouterr().out


@pytest.fixture
def extra_command(tmp_path, monkeypatch):
    """Add the module written by the returned function to the registry, as a module of its own."""

    def add(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(source)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setattr(cli, "MODULES", (*cli.MODULES, name))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return name

    return add


FAILING = """
from orchestrator.cli.errors import UsageError
from orchestrator.cli.subcommand import Subcommand


def run(args, console):
    if args.how == "user":
        raise UsageError("--how user: the user's own mistake")
    if args.how == "missing":
        open("/nonexistent/kf-input.jsonl")
    raise ValueError("a bug deep in the code")


COMMAND = Subcommand(
    name="fail",
    help="fails",
    add_arguments=lambda p: p.add_argument("how", choices=["user", "bug", "missing"]),
    run=run,
)
"""


def test_a_user_error_is_one_line_and_exit_2_a_bug_keeps_its_traceback(extra_command, capsys):
    extra_command("kf_test_failing_cmd", FAILING)
    assert cli.main(["fail", "user"], Console()) == 2
    assert capsys.readouterr().err == "error: --how user: the user's own mistake\n"
    assert cli.main(["fail", "missing"], Console()) == 2  # a missing input file is the user's to fix
    assert capsys.readouterr().err == "error: /nonexistent/kf-input.jsonl: no such file or directory\n"
    with pytest.raises(ValueError, match="a bug deep in the code"):  # not turned into a user error
        cli.main(["fail", "bug"], Console())


def test_through_the_entry_point_a_bug_prints_its_traceback(tmp_path):
    import os
    import subprocess

    (tmp_path / "kf_test_failing_cmd.py").write_text(FAILING)
    code = (
        "from orchestrator import __main__ as entry\nfrom orchestrator.cli import commands as cli\n"
        "cli.MODULES += ('kf_test_failing_cmd',)\n"
        "import sys; sys.exit(entry.main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    bug = subprocess.run([sys.executable, "-c", code, "fail", "bug"], capture_output=True, text=True, env=env)
    assert bug.returncode == 1
    assert "Traceback (most recent call last)" in bug.stderr and "ValueError: a bug deep in the code" in bug.stderr
    user = subprocess.run([sys.executable, "-c", code, "fail", "user"], capture_output=True, text=True, env=env)
    assert (user.returncode, user.stderr) == (2, "error: --how user: the user's own mistake\n")


def test_a_subcommand_module_that_cannot_be_imported_fails_loudly_naming_it(extra_command, capsys):
    extra_command("kf_test_broken_cmd", "import kf_no_such_module_anywhere\n")
    for argv in (["--help"], ["runs", "--help"], ["runs"]):
        with pytest.raises(cli.BrokenSubcommand, match="kf_test_broken_cmd cannot be imported") as err:
            entry.main(argv)
        assert isinstance(err.value.__cause__, ModuleNotFoundError)
        assert "kf_no_such_module_anywhere" in str(err.value)


def test_a_module_that_declares_no_subcommand_fails_loudly_naming_it(extra_command):
    extra_command("kf_test_empty_cmd", "X = 1\n")
    with pytest.raises(cli.BrokenSubcommand, match="kf_test_empty_cmd declares no COMMAND"):
        cli.parser()


def test_a_first_word_that_is_no_override_is_a_subcommand():
    assert cli.is_command_word("runs") and cli.is_command_word("bogus")
    assert not any(map(cli.is_command_word, ["+sweep=smoke", "dry_run=true", "~sweep", "--cfg", "++x=1"]))
