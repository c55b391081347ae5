"""The subcommands of ``python -m orchestrator`` (every command but a sweep): the one list of the modules that
declare them, the parser and the ``--help`` listing built from their declarations (orchestrator/cli/subcommand.py), and
the one error policy they all run under.

A module of :data:`MODULES` that cannot be imported, or declares no subcommand, fails every command with an error
that names it: a subcommand never silently disappears.  A user error (:class:`workers.errors.UserError` and its
subclasses, and the file and store errors orchestrator/cli/errors.py names) is one line on stderr and exit code 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import textwrap
from typing import TYPE_CHECKING

from orchestrator.cli.errors import exit_on_user_error
from orchestrator.cli.subcommand import Subcommand

if TYPE_CHECKING:
    from rich.console import Console

PROG = "python -m orchestrator"

# The modules that declare subcommands, in the order `--help` lists them.
MODULES = (
    "orchestrator.cli.db",
    "orchestrator.cli.import_results",
    "orchestrator.cli.export",
    "orchestrator.cli.runs",
    "orchestrator.cli.report",
    "orchestrator.cli.regressions",
    "orchestrator.cli.compare",
    "orchestrator.cli.bisect",
    "orchestrator.cli.explain",
    "orchestrator.cli.tune",
    "orchestrator.cli.fleet",
)


class BrokenSubcommand(ImportError):
    """A module of :data:`MODULES` that cannot be imported or declares no subcommand: a bug, never a user error."""


def _declared(modname: str) -> tuple[Subcommand, ...]:
    try:
        module = importlib.import_module(modname)
    except Exception as exc:
        raise BrokenSubcommand(f"the subcommand module {modname} cannot be imported: {exc!r}") from exc
    found = getattr(module, "COMMANDS", None) or ((module.COMMAND,) if hasattr(module, "COMMAND") else ())
    if not found or not all(isinstance(c, Subcommand) for c in found):
        raise BrokenSubcommand(
            f"the subcommand module {modname} declares no COMMAND (an orchestrator.cli.subcommand.Subcommand)"
        )
    return tuple(found)


def commands() -> list[Subcommand]:
    """Every subcommand, in :data:`MODULES`' order."""
    found = [c for modname in MODULES for c in _declared(modname)]
    names = [c.name for c in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BrokenSubcommand(f"subcommand(s) declared twice: {', '.join(twice)}")
    return found


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for c in commands():
        c.add_to(sub)
    return ap


def help_lines(width: int = 120) -> list[str]:
    """What `python -m orchestrator --help` says of the subcommands: each one's name and help, wrapped."""
    cmds = commands()
    first = max(len(f"{PROG} {c.name}  ") for c in cmds)
    lines = []
    for c in cmds:
        head = f"{PROG} {c.name}".ljust(first)
        lines += textwrap.wrap(c.help, width, initial_indent=head, subsequent_indent=" " * first)
    return lines


def is_command_word(word: str) -> bool:
    """Whether the first word of a command line names a subcommand (or a mistyped one), rather than starting a
    sweep's Hydra overrides (``+sweep=NAME``, ``key=value``, ``~key``) or its options (``--cfg job``)."""
    return word[:1].isalpha() and "=" not in word


def main(argv: list[str], console: Console) -> int:
    """Parse ``argv`` (its first word a subcommand) and run it: its exit code, or 2 on a user error."""
    args = parser().parse_args(argv)
    return exit_on_user_error(lambda: args.subcommand.run(args, console))
