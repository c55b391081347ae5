"""python -m orchestrator: run a sweep (+sweep=NAME [overrides]), or a subcommand that manages the store and the fleet.

python -m orchestrator +sweep=rmsnorm [key=value ...]   run a sweep (Hydra overrides; --cfg job prints the config)
python -m orchestrator COMMAND --help                   a subcommand's arguments
python -m orchestrator --version                        torch, Triton (and its distribution), launch path, device
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from workers.errors import EXIT_USER_ERROR

REPO = Path(__file__).resolve().parents[1]
EXIT_CONFIG = EXIT_USER_ERROR  # a configuration that cannot run (orchestrator.run.sweep.EXIT_CONFIG)


def _sweep_main(argv: list[str], console) -> int:
    from omegaconf import OmegaConf

    from orchestrator.cli.errors import exit_on_user_error
    from orchestrator.config import compose as config

    print_cfg = False
    if "--cfg" in argv:
        i = argv.index("--cfg")
        what = argv[i + 1] if i + 1 < len(argv) else ""
        if what != "job":
            print("config error: --cfg takes `job` (print the composed configuration)", file=sys.stderr)
            return EXIT_CONFIG
        print_cfg = True
        argv = argv[:i] + argv[i + 2 :]
    bad = [a for a in argv if a.startswith("-")]
    if bad:
        print(f"config error: unknown option {bad[0]}; see python -m orchestrator --help", file=sys.stderr)
        return EXIT_CONFIG
    try:
        cfg = config.compose(argv)
        if print_cfg:  # as a stored config shows it: store.url without its password
            from orchestrator.store.session import public_config

            print(OmegaConf.to_yaml(public_config(config.to_plain(cfg))), end="")
            return 0
        from orchestrator.run.sweep import run_sweep  # torch, Ray and the store: past the configuration's checks

        return exit_on_user_error(lambda: run_sweep(config.to_plain(cfg), console, argv))
    except config.ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG


EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """The command's exit code; Ctrl-C outside a running sweep (which marks its run itself) is one line, exit 130:
    an import or a store change in flight is rolled back, nothing half-written is kept.  A reader that stops
    reading (``--help | head``) ends the output quietly, as it ends ``export``'s."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C): stopped; nothing half-written was kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        # the subcommands' declarations: neither rich, the store nor Ray is imported
        from orchestrator.cli import commands as cli

        print(__doc__)
        print("commands:")
        print("\n".join(cli.help_lines()))
        print()
        # listed without importing Hydra (orchestrator.config.compose.conf_dir: the same folder)
        conf = Path(os.environ.get("KERNELFLEET_CONF") or REPO / "conf").resolve()
        print("sweeps:", ", ".join(sorted(p.stem for p in (conf / "sweep").glob("*.yaml"))))
        print("targets:", ", ".join(sorted(p.stem for p in (conf / "target").glob("*.yaml"))))
        from kernels import metadata  # the kernels' declarations: neither torch nor a kernel module is imported

        print("kernels:", ", ".join(metadata.kernel_names()))
        return 0
    if argv[0] == "--version":
        from workers.device.stack import format_stack, stack

        print(format_stack(stack()))
        return 0
    from rich.console import Console  # imported past --help, which prints plain text

    console = Console(soft_wrap=True)
    if not console.is_terminal:
        console.width = 200  # logs and CI: don't squeeze the summary table into 80 columns
    from orchestrator.cli import commands as cli

    if cli.is_command_word(argv[0]):
        return cli.main(argv, console)
    return _sweep_main(argv, console)


if __name__ == "__main__":
    sys.exit(main())
