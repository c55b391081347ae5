"""`python -m orchestrator node join|list|leave` and `python -m orchestrator cluster up` (see docs/fleet.md).

Exit codes: 0 done; 1 Ray itself failed (its own message is shown); 2 refused before anything started (a failed
check, a bad argument, no connection), with what to do about it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli.subcommand import Subcommand
from orchestrator.fleet import nodes as fleet
from orchestrator.fleet.labels import LABEL_NS, NODE_RESOURCE
from workers.device import rehearsal

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_RAY_FAILED, EXIT_REFUSED = 0, 1, 2
NODES_SCHEMA, NODES_SCHEMA_VERSION = "kernelfleet.nodes", 1  # `node list --json` (docs/json.md)
ADDRESS_ENV = ("KERNELFLEET_HEAD", "RAY_ADDRESS")

STATE_API = "the state API"
NO_STATE_API = "GPUs in use (no dashboard on the head for the state API)"


def add_node_arguments(node: argparse.ArgumentParser) -> None:
    nsub = node.add_subparsers(dest="node_cmd", required=True)

    join = nsub.add_parser("join", help="detect this node's GPUs, check it can work, and start Ray on it")
    join.set_defaults(action=node_join)
    join.add_argument("--address", help="the head, HOST:PORT (default: $KERNELFLEET_HEAD, else $RAY_ADDRESS)")
    join.add_argument(
        "--dry-run",
        action="store_true",
        help="run the checks, print the labels and the exact `ray start` command; start nothing",
    )
    join.add_argument(
        "--block", action="store_true", help="keep Ray in the foreground (`ray start --block`), for a systemd unit"
    )
    join.add_argument(
        "--token-file",
        help="the head's auth token (from `ray get-auth-token` on the head); "
        "default: $RAY_AUTH_TOKEN_PATH, $RAY_AUTH_TOKEN, ~/.ray/auth_token",
    )
    join.add_argument("--num-gpus", type=int, help="GPUs to give the fleet (default: all detected)")
    join.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set or override a kernelfleet.io/ label (repeatable). Overriding the GPU type (--label gpu=rehearsal) "
        "makes a rehearsal node: it is tagged rehearsal-of=<its real GPU type> in node list, the store and the "
        "dashboard, so its results never pass for that hardware",
    )
    join.add_argument(
        "--insecure",
        action="store_true",
        help="join a head that does not use token authentication (refused without this)",
    )
    join.add_argument(
        "--ray-start-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for `ray start` (repeatable), e.g. --ray-start-arg=--temp-dir=/data/ray",
    )
    join.add_argument(
        "--from-fixtures",
        metavar="DIR",
        help="rehearse a node without its GPU: take the node's devices from a recording (DIR/node.json and the "
        "tool outputs it names; tests/fixtures/nodes/ has an H200, an MI300X, an MI355X and an RX 7900 XTX) "
        "instead of detecting this machine's",
    )

    ls = nsub.add_parser("list", help="every node of the fleet: labels, GPUs, state, jobs running")
    ls.set_defaults(action=node_list)
    ls.add_argument("--address", help="the head, HOST:PORT (default: $KERNELFLEET_HEAD, else $RAY_ADDRESS)")
    ls.add_argument("--token-file", help="the head's auth token file, if it uses token authentication")
    ls.add_argument(
        "--json", action="store_true", help="print JSON (schema kernelfleet.nodes, docs/json.md) instead of a table"
    )

    leave = nsub.add_parser("leave", help="drain a node: its running jobs finish, it takes no new ones, it goes")
    leave.set_defaults(action=node_leave)
    leave.add_argument("--address", help="the head, HOST:PORT (default: $KERNELFLEET_HEAD, else $RAY_ADDRESS)")
    leave.add_argument("--token-file", help="the head's auth token file, if it uses token authentication")
    leave.add_argument("--node-id", help="the node to drain (a unique prefix of its id; default: this machine's)")
    leave.add_argument(
        "--wait", type=float, default=600.0, help="seconds to wait for the node's running jobs to finish (default 600)"
    )
    leave.add_argument(
        "--stop", action="store_true", help="then run `ray stop` here to end this machine's remaining Ray processes"
    )


def add_cluster_arguments(cluster: argparse.ArgumentParser) -> None:
    csub = cluster.add_subparsers(dest="cluster_cmd", required=True)
    up = csub.add_parser("up", help="start a Ray head with token authentication and print the join command")
    up.set_defaults(action=cluster_up)
    up.add_argument("--port", type=int, default=fleet.DEFAULT_PORT, help="the GCS port (default 6379)")
    up.add_argument("--block", action="store_true", help="keep the head in the foreground (for a systemd unit)")
    up.add_argument(
        "--token-file",
        help="the cluster's token file (default: $RAY_AUTH_TOKEN_PATH, else "
        "~/.ray/auth_token); a new random token is written there if missing",
    )
    up.add_argument("--dry-run", action="store_true", help="print the command; start nothing, write no token")
    up.add_argument(
        "--with-gpus",
        action="store_true",
        help="the head machine also benchmarks: detect its GPUs and label it like `node join`",
    )
    up.add_argument(
        "--dashboard-host",
        default="127.0.0.1",
        help="where the dashboard listens (default 127.0.0.1: reach it through an SSH tunnel)",
    )
    up.add_argument(
        "--ray-start-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for `ray start` (repeatable)",
    )
    up.add_argument(
        "--from-fixtures",
        metavar="DIR",
        help="rehearse a head without its GPU: its devices from a recording (DIR/node.json; tests/fixtures/nodes/)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """The action of ``node join|list|leave`` or ``cluster up`` the parser chose; a refusal (FleetError) is shown
    as such, exit 2."""
    try:
        return args.action(args, console)
    except fleet.FleetError as exc:
        console.print(f"[red]refused:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_REFUSED


# ------------------------------------------------------------------------------------------------ helpers


def escape(text: str) -> str:
    """``text`` shown as it is in a rich console (its square brackets are not markup)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _address(args, required: bool = True) -> str | None:
    address = args.address or next((os.environ[e] for e in ADDRESS_ENV if os.environ.get(e)), None)
    if address and address.startswith("ray://"):
        raise fleet.FleetError("--address: give the head's GCS address HOST:PORT, not a ray:// client address")
    if not address and required:
        raise fleet.FleetError(
            "no head address: pass --address HOST:PORT (printed by `python -m orchestrator "
            "cluster up` on the head) or set KERNELFLEET_HEAD"
        )
    return address


def _print_checks(console: Console, checks: list[fleet.Check]) -> None:
    marks = {"ok": "[green]ok  [/]", "fail": "[red]FAIL[/]", "skip": "[yellow]skip[/]"}
    for c in checks:
        console.print(f"  {marks[c.status]} {escape(c.name)}: {escape(c.detail)}", highlight=False, soft_wrap=True)
        if c.status == "fail" and c.fix:
            console.print(f"       fix: {escape(c.fix)}", highlight=False, soft_wrap=True)


def _print_labels(console: Console, labels: dict[str, str]) -> None:
    for k, v in labels.items():
        console.print(f"  {k}={v}", highlight=False, soft_wrap=True)


def _exec_or_run(cmd: fleet.StartCommand, block: bool) -> int:
    env = {**os.environ, **cmd.env}
    if cmd.env.get("RAY_AUTH_MODE") != "token":
        env.pop("RAY_AUTH_TOKEN", None)
        env.pop("RAY_AUTH_TOKEN_PATH", None)
    sys.stdout.flush()
    sys.stderr.flush()
    if block:  # become `ray start --block`: systemd's SIGTERM reaches Ray, which drains the node and exits
        os.execvpe(cmd.argv[0], cmd.argv, env)
    return subprocess.run(cmd.argv, env=env).returncode


# ------------------------------------------------------------------------------------------------ node join


# What `node leave` says of the `ray start` process it leaves behind on this machine
LEFT_RAY_START = (
    "the `ray start` process on this machine may still be running: stop it with "
    "`sudo systemctl stop kernelfleet-node` (systemd), or end that process by its id; not with a plain "
    "`ray stop`, which ends every Ray process of this user here (a head, other nodes, other drivers) — "
    "`node leave --stop` runs it when that is what you want"
)


def node_join(args, console: Console) -> int:
    address = _address(args)
    facts = fleet.detect_node(args.from_fixtures)
    labels = fleet.override_labels(fleet.derive_labels(facts), args.label)
    token = fleet.find_token(args.token_file)
    console.print(f"node join: {facts.hostname} -> head {address}", highlight=False)
    real = rehearsal.rehearsal_of(labels)
    if real:
        console.print(
            f"[yellow]rehearsal:[/] this node is tagged gpu={escape(labels[rehearsal.GPU_LABEL])} but is really "
            f"{escape(real)}; its results are stored under that tag, marked as a rehearsal of {escape(real)}",
            highlight=False,
        )
    probe = fleet.probe_head(address, token)
    if not probe.reachable and not args.dry_run:
        raise fleet.FleetError(
            f"cannot reach the head at {address}: {probe.error}; is `python -m orchestrator "
            f"cluster up` running there, and can this machine reach that port?"
        )
    checks = fleet.join_checks(facts, probe, token, args.num_gpus, labels, insecure=args.insecure)
    console.print("checks:")
    _print_checks(console, checks)
    num_gpus = args.num_gpus or len(facts.gpus)
    own, why = fleet.same_host_args(args.ray_start_arg)
    if why:
        console.print(f"{why}: {' '.join(own)}", highlight=False, soft_wrap=True, markup=False)
    cmd = fleet.ray_start_command(
        address, labels, num_gpus, block=args.block, probe_auth=probe.auth, token=token, extra=args.ray_start_arg + own
    )
    if labels:
        console.print("labels:")
        _print_labels(console, labels)
    console.print(f"resources: GPU={num_gpus}, {NODE_RESOURCE}=1 (whole-node jobs take all of it)")
    bad = fleet.failed(checks)
    if args.dry_run:
        console.print("command (dry run, nothing started):")
        console.print(cmd.render(), highlight=False, soft_wrap=True, markup=False)
        if bad:
            console.print(f"[red]a real join would be refused:[/] fix {', '.join(c.name for c in bad)} first")
            return EXIT_REFUSED
        if not probe.reachable:  # the head's checks were skipped: a real join would be refused
            console.print(
                f"[red]a real join would be refused:[/] cannot reach the head at {escape(address)}: "
                f"{escape(str(probe.error))}",
                highlight=False,
            )
            return EXIT_REFUSED
        return EXIT_OK
    if bad:
        console.print(
            f"[red]refused:[/] {len(bad)} check(s) failed ({', '.join(c.name for c in bad)}); nothing was started",
            highlight=False,
        )
        return EXIT_REFUSED
    console.print("running:")
    console.print(cmd.render(), highlight=False, soft_wrap=True, markup=False)
    rc = _exec_or_run(cmd, args.block)
    if rc != 0:
        console.print(f"[red]ray start failed[/] (exit code {rc}); its messages are above")
        return EXIT_RAY_FAILED
    auth = f" --token-file {token.path}" if token is not None and token.origin == "--token-file" else ""
    console.print(
        f"joined. See the fleet with `python -m orchestrator node list --address {address}{auth}`; leave with "
        f"`python -m orchestrator node leave --address {address}{auth}`",
        highlight=False,
    )
    return EXIT_OK


# ------------------------------------------------------------------------------------------------ node list


def nodes_document(address: str, rows: list[fleet.NodeRow]) -> dict:
    """The `node list --json` document: the head's address and one object per node, in the versioned envelope
    every --json output has (docs/json.md)."""
    return {
        "schema": NODES_SCHEMA,
        "schema_version": NODES_SCHEMA_VERSION,
        "address": address,
        "nodes": [r.to_dict() for r in rows],
    }


def node_list(args, console: Console) -> int:
    address = _address(args)
    opened = fleet.connect(address, fleet.find_token(args.token_file))
    try:
        rows = fleet.list_nodes()
    finally:
        if opened:
            import ray

            ray.shutdown()
    if args.json:
        print(json.dumps(nodes_document(address, rows), indent=1, sort_keys=True))
        return EXIT_OK
    from rich.table import Table

    table = Table(title=f"fleet at {address}")
    for col in ("node", "state", "address", "gpu", "arch", "GPUs", "in use", "jobs running", "other labels"):
        table.add_column(col, overflow="fold")
    main = {f"{LABEL_NS}/gpu", f"{LABEL_NS}/arch", rehearsal.REHEARSAL_LABEL}
    for r in rows:
        others = ", ".join(
            f"{k.removeprefix(LABEL_NS + '/')}={v}"
            for k, v in sorted(r.labels.items())
            if k not in main and k != "ray.io/node-id"
        )
        state = ("alive" + (" (head)" if r.head else "")) if r.alive else f"dead {r.death_reason}".strip()
        jobs = "-" if r.jobs_running is None else str(r.jobs_running)
        if r.alive and r.jobs_source == "resources":
            jobs += " (GPUs in use)"
        cells = [
            r.node_id[:12],
            state,
            r.address,
            rehearsal.describe(r.labels),
            r.labels.get(f"{LABEL_NS}/arch", "-"),
            str(r.gpus),
            "-" if r.gpus_in_use is None else str(r.gpus_in_use),
            jobs,
            others,
        ]
        table.add_row(*[escape(c) for c in cells])
    console.print(table)
    alive = [r for r in rows if r.alive]
    rehearsals = [r for r in alive if rehearsal.rehearsal_of(r.labels)]
    if rehearsals:
        console.print(
            f"[yellow]{len(rehearsals)} rehearsal node(s):[/] their GPU type is a tag set at `node join --label`, "
            f"not their hardware",
            highlight=False,
        )
    console.print(
        f"{len(alive)} alive, {len(rows) - len(alive)} dead; "
        f"{sum(r.gpus for r in alive)} GPUs; jobs running counted from "
        f"{STATE_API if any(r.jobs_source == 'state API' for r in alive) else NO_STATE_API}",
        highlight=False,
    )
    return EXIT_OK


# ------------------------------------------------------------------------------------------------ node leave


def node_leave(args, console: Console) -> int:
    address = _address(args)
    opened = fleet.connect(address, fleet.find_token(args.token_file))
    try:
        import ray

        rows = fleet.list_nodes()
        node = fleet.resolve_node(rows, args.node_id)
        if not node.alive:
            console.print(f"node {node.node_id[:12]} has already left ({node.death_reason or 'dead'})")
            return EXIT_OK
        if node.head:
            raise fleet.FleetError("that is the head; stop the cluster on the head instead (`ray stop` there)")
        gcs = fleet.gcs_address()
        from ray._private.services import get_node_ip_address

        local = node.address == get_node_ip_address()
        if args.stop and not local:
            raise fleet.FleetError(
                f"--stop: node {node.node_id[:12]} is at {node.address}, not on this machine; "
                f"run `node leave --stop` there, or drain it from here without --stop"
            )
        fleet.drain_node(
            gcs, node.node_id, f"kernelfleet node leave (requested from {socket.gethostname()})", args.wait
        )
        console.print(
            f"draining node {node.node_id[:12]} ({node.labels.get(f'{LABEL_NS}/gpu', '?')} at "
            f"{node.address}): it takes no new jobs; waiting up to {args.wait:g} s for its "
            f"{node.jobs_running if node.jobs_running is not None else '?'} running job(s)",
            highlight=False,
        )
        deadline = time.monotonic() + args.wait
        gone = False
        while time.monotonic() < deadline:
            now = {n["NodeID"]: n for n in ray.nodes()}
            if not now.get(node.node_id, {}).get("Alive", False):
                gone = True
                break
            time.sleep(0.5)
    finally:
        if opened:
            import ray

            ray.shutdown()
    if not gone:
        console.print(
            f"[yellow]node {node.node_id[:12]} still has work after {args.wait:g} s[/]; it stays drained "
            f"(no new jobs). Run `node leave` again to keep waiting, or stop Ray on it now: its running "
            f"batch is then retried on another node of its type"
        )
        return EXIT_RAY_FAILED
    console.print(f"node {node.node_id[:12]} drained and left the cluster (its raylet exited)")
    if args.stop:
        rc = subprocess.run([fleet.ray_executable(), "stop"]).returncode
        console.print(
            "stopped this machine's remaining Ray processes (`ray stop`)"
            if rc == 0
            else f"`ray stop` failed (exit code {rc})"
        )
        return EXIT_OK if rc == 0 else EXIT_RAY_FAILED
    if local:
        console.print(LEFT_RAY_START)
    return EXIT_OK


# ------------------------------------------------------------------------------------------------ cluster up


def cluster_up(args, console: Console) -> int:
    taken = fleet.port_taken(args.port)
    if taken:  # a dry run says so too: the real one would fail in ray start, after the token and the checks
        raise fleet.FleetError(taken)
    token_path = Path(args.token_file or os.environ.get("RAY_AUTH_TOKEN_PATH") or fleet.DEFAULT_TOKEN_PATH)
    token_path = token_path.expanduser().resolve()
    labels: dict[str, str] = {}
    num_gpus = 0
    if args.with_gpus:
        facts = fleet.detect_node(args.from_fixtures)
        if not facts.gpus:
            raise fleet.FleetError(f"--with-gpus: no GPU detected ({facts.source})")
        labels = fleet.derive_labels(facts)
        checks = [c for c in fleet.join_checks(facts, None, None, None, labels) if c.name != "head"]
        console.print("checks:")
        _print_checks(console, checks)
        if fleet.failed(checks) and not args.dry_run:
            raise fleet.FleetError(f"--with-gpus: {', '.join(c.name for c in fleet.failed(checks))} failed")
        num_gpus = len(facts.gpus)
    had = fleet.ensure_token_file(token_path, create=False)
    if not had:
        if args.dry_run:
            console.print(f"token: {token_path} is missing; a real run writes a new random one there (mode 600)")
        else:
            fleet.ensure_token_file(token_path, create=True)
            console.print(f"token: wrote a new random token to {token_path} (mode 600)", highlight=False)
    else:
        console.print(f"token: {token_path}", highlight=False)
    cmd = fleet.head_command(
        args.port,
        token_path,
        block=args.block,
        labels=labels,
        num_gpus=num_gpus,
        dashboard_host=args.dashboard_host,
        extra=args.ray_start_arg,
    )
    ip = next((a.split("=", 1)[1] for a in args.ray_start_arg if a.startswith("--node-ip-address=")), None)
    address = f"{ip}:{args.port}" if ip else fleet.head_address(args.port)
    if labels:
        console.print("labels:")
        _print_labels(console, labels)
    console.print("command" + (" (dry run, nothing started):" if args.dry_run else ":"))
    console.print(cmd.render(), highlight=False, soft_wrap=True, markup=False)
    join_help = (
        f"\nto add a GPU node:\n"
        f"  1. on the head:  RAY_AUTH_TOKEN_PATH={token_path} ray get-auth-token > kernelfleet.token\n"
        f"  2. copy kernelfleet.token to the node (e.g. /etc/kernelfleet/ray_token, chmod 600, owned by the node's "
        f"user)\n"
        f"  3. on the node:  python -m orchestrator node join --address {address} "
        f"--token-file /etc/kernelfleet/ray_token\n"
        f"run sweeps on the fleet from any machine with the token:\n"
        f"  RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=<token file> python -m orchestrator +sweep=NAME "
        f"cluster.address={address}\n"
        f"see the fleet:  python -m orchestrator node list --address {address} --token-file <token file>"
    )
    if args.dry_run:
        console.print(join_help, highlight=False, soft_wrap=True, markup=False)
        return EXIT_OK
    if args.block:
        console.print(join_help, highlight=False, soft_wrap=True, markup=False)
        console.print(f"head at {address}; blocking (Ctrl-C or SIGTERM stops it)", highlight=False)
    rc = _exec_or_run(cmd, args.block)
    if rc != 0:
        console.print(f"[red]ray start --head failed[/] (exit code {rc}); its messages are above")
        return EXIT_RAY_FAILED
    console.print(f"head started at {address} with token authentication", highlight=False)
    console.print(join_help, highlight=False, soft_wrap=True, markup=False)
    return EXIT_OK


COMMANDS = (
    Subcommand(
        name="node",
        help="join this GPU machine to the fleet, list the fleet, or leave it (docs/fleet.md)",
        add_arguments=add_node_arguments,
        run=run,
    ),
    Subcommand(name="cluster", help="start a Ray head for a lab", add_arguments=add_cluster_arguments, run=run),
)
