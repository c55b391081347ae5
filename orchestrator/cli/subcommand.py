"""What a subcommand of ``python -m orchestrator`` is: one declaration its module makes, ``COMMAND = Subcommand(...)``
(a module with several, such as fleet_cli's ``node`` and ``cluster``, declares ``COMMANDS``).

The declaration is all the CLI knows of a subcommand: its name and one-line help (what ``--help`` lists), how it
adds its arguments to its own parser, and how it runs (``run(args, console) -> exit code``).
orchestrator/cli/commands.py lists the modules that declare one and builds the parser from them.  A subcommand module
imports at its top only what declaring itself needs (no rich, SQLAlchemy, Hydra, Ray or torch): ``--help`` imports every
one of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: ``python -m orchestrator <name> ...``."""

    name: str
    help: str  # one line: what `python -m orchestrator --help` says of it and its parser's description
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Console], int]

    def add_to(self, sub: Any) -> argparse.ArgumentParser:
        """Its parser, added to the ``add_subparsers()`` action ``sub``."""
        p = sub.add_parser(self.name, help=self.help, description=self.help)
        self.add_arguments(p)
        p.set_defaults(subcommand=self)
        return p
