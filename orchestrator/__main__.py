"""python -m orchestrator: run a sweep (+sweep=NAME [overrides]) or manage the store and the fleet.

python -m orchestrator +sweep=rmsnorm [key=value ...]   run a sweep (Hydra overrides; --cfg job prints the config)
python -m orchestrator db upgrade [--url URL]           create or upgrade the store's schema
python -m orchestrator import RESULTS.jsonl [...] [--url URL]  store results of `python -m workers run`
python -m orchestrator export --format csv|parquet|jsonl [--run R] [--since DATE] [--out F]  measurements, long format
python -m orchestrator runs [--limit N]                 list the runs: id, sweep, date, device, status, counts
python -m orchestrator report [RUN] [--markdown F]      show a run again (newest by default), or as Markdown
python -m orchestrator regressions [RUN..] [--baseline B..] changes beyond the between-run spread (exit 1: confirmed)
python -m orchestrator node join|list|leave ...         the fleet (see docs/fleet.md)
python -m orchestrator cluster up ...                   start a Ray head for a lab
"""

from __future__ import annotations

import sys

from rich.console import Console

from workers.errors import exit_on_user_error

SUBCOMMANDS = ("db", "import", "export", "report", "regressions", "runs", "node", "cluster")


def _sweep_main(argv: list[str], console: Console) -> int:
    from omegaconf import OmegaConf

    from orchestrator import config
    from orchestrator.sweep import EXIT_CONFIG, run_sweep

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
        if print_cfg:
            print(OmegaConf.to_yaml(cfg), end="")
            return 0
        return exit_on_user_error(lambda: run_sweep(config.to_plain(cfg), console, argv))
    except config.ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    console = Console(soft_wrap=True)
    if not console.is_terminal:
        console.width = 200  # logs and CI: don't squeeze the summary table into 80 columns
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        from kernels import registry
        from orchestrator.config import group_options

        print("sweeps:", ", ".join(group_options("sweep")))
        print("targets:", ", ".join(group_options("target")))
        print("kernels:", ", ".join(sorted(registry.builtin())))
        return 0
    if argv[0] in SUBCOMMANDS:
        from orchestrator import cli

        return cli.main(argv, console)
    return _sweep_main(argv, console)


if __name__ == "__main__":
    sys.exit(main())
