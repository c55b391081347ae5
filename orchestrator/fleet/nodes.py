"""The fleet: what a GPU node needs to join the Ray cluster, the labels it gets, and the exact `ray start` it runs.

Nothing here prints; :mod:`orchestrator.cli.fleet` turns the results into text.  The pieces:

* :func:`detect_node` — this machine's GPUs through :mod:`workers.device.detect` (or, with ``--from-fixtures DIR``, a
  recorded node: ``DIR/node.json`` naming torch properties and recorded rocminfo / amd-smi / nvidia-smi outputs).
* :func:`probe_head` — the head's Ray and Python versions and whether it uses token authentication, read from
  the head's GCS by a short-lived child process (Ray caches its auth mode per process, so each mode is probed in
  its own process).
* :func:`join_checks` — every check a working node needs, each ``ok``, ``fail`` (with the fix) or ``skip``.
* :func:`ray_start_command` — the exact command and its environment (token auth set up, the token never shown).
* :func:`list_nodes` / :func:`drain_node` — ``node list`` and ``node leave`` against a connected driver.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from orchestrator.fleet.labels import LABEL_NS, NODE_RESOURCE
from workers.device import rehearsal
from workers.spec import DeviceInfo

DEFAULT_PORT = 6379
DEFAULT_TOKEN_PATH = Path.home() / ".ray" / "auth_token"
PROBE_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 3.0
HOST_LABEL = f"{LABEL_NS}/host"
# Ray's AMD accelerator manager reads GPUs through this package (ray/_private/thirdparty/pyamdsmi wraps it).
AMDSMI_FIX = (
    "install the amdsmi Python package that ships with ROCm, into this Python: "
    "`python -m pip install /opt/rocm/share/amd_smi` (without it Ray sees no AMD GPU type and falls back "
    "to CUDA_VISIBLE_DEVICES)"
)
TOKEN_FIX = (
    "on the head run `ray get-auth-token` (with the head's RAY_AUTH_TOKEN_PATH if it has one), save the "
    "output on this node in a file readable only by the node's user (chmod 600), then pass "
    "`--token-file FILE` or set RAY_AUTH_TOKEN_PATH=FILE"
)


class FleetError(RuntimeError):
    """A fleet command that cannot go on; str() is the message for the user."""


# ------------------------------------------------------------------------------------------------ the node's facts


@dataclass
class NodeFacts:
    """What `node join` knows about the node it runs on (or the recorded node it simulates)."""

    devices: list[DeviceInfo]
    env: Mapping[str, str]
    amdsmi_importable: bool | None  # None: not known (a recorded node that does not say)
    source: str  # "this machine" or "fixtures DIR"
    hostname: str = field(default_factory=socket.gethostname)

    @property
    def gpus(self) -> list[DeviceInfo]:
        return [d for d in self.devices if d.vendor != "cpu"]

    @property
    def vendor(self) -> str:
        return self.gpus[0].vendor if self.gpus else "cpu"


def _amdsmi_importable() -> bool:
    try:
        return importlib.util.find_spec("amdsmi") is not None
    except (ImportError, ValueError):
        return False


def detect_node(from_fixtures: str | Path | None = None) -> NodeFacts:
    """This machine's devices (workers.device.detect), or the recorded node described by ``from_fixtures/node.json``."""
    if from_fixtures is not None:
        return load_fixture_node(from_fixtures)
    from workers.device import detect as device

    return NodeFacts(
        devices=device.detect_all(), env=dict(os.environ), amdsmi_importable=_amdsmi_importable(), source="this machine"
    )


def load_fixture_node(path: str | Path) -> NodeFacts:
    """A recorded node.  ``node.json``: ``torch_props`` (a list, one per GPU, as workers.device.detect.torch_props
    returns), ``tools`` (workers.device.detect tool keys -> files of recorded output, relative to the directory), and
    optionally
    ``amdsmi_importable`` and ``env`` (the node's environment as far as the checks read it)."""
    from workers.device import detect as device

    d = Path(path)
    spec_file = d / "node.json" if d.is_dir() else d
    try:
        spec = json.loads(spec_file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise FleetError(f"--from-fixtures {path}: cannot read {spec_file}: {exc}") from None
    base = spec_file.parent
    tools: dict[str, str] = {}
    for key, rel in (spec.get("tools") or {}).items():
        try:
            tools[key] = (base / rel).read_text(errors="replace")
        except OSError as exc:
            raise FleetError(f"--from-fixtures {path}: tool output {key!r}: {exc}") from None
    props_list = spec.get("torch_props")
    if not isinstance(props_list, list) or not props_list:
        raise FleetError(f"--from-fixtures {path}: node.json needs a non-empty list `torch_props`")
    env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
    devices = [device.detect_from(p, tools, env) for p in props_list]
    amdsmi = spec.get("amdsmi_importable")
    return NodeFacts(
        devices=devices, env=env, amdsmi_importable=None if amdsmi is None else bool(amdsmi), source=f"fixtures {d}"
    )


def derive_labels(facts: NodeFacts) -> dict[str, str]:
    """The node's Ray labels: the first GPU's labels (workers.device.detect.labels) plus the host name."""
    from workers.device import detect as device

    if not facts.gpus:
        return {}
    out = dict(device.labels(facts.gpus[0]))
    host = device.label_value(facts.hostname.split(".")[0])
    if host:
        out[HOST_LABEL] = host
    return out


def override_labels(labels: Mapping[str, str], overrides: list[str]) -> dict[str, str]:
    """``labels`` with ``--label KEY=VALUE`` overrides applied (each may hold several, comma-separated; a key without
    the ``kernelfleet.io/`` prefix gets it).  Overriding the GPU type makes the node a rehearsal: it also gets
    ``kernelfleet.io/rehearsal-of=<the detected type>``, which every listing, page and stored result shows."""
    out = dict(labels)
    detected = labels.get(rehearsal.GPU_LABEL)
    for item in overrides:
        for part in filter(None, (p.strip() for p in item.split(","))):
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep or not key or not value.strip():
                raise FleetError(f"--label {part!r}: expected KEY=VALUE, e.g. --label {rehearsal.GPU_LABEL}=rehearsal")
            if "/" not in key:
                key = f"{LABEL_NS}/{key}"
            if not key.startswith(LABEL_NS + "/"):
                raise FleetError(f"--label {part!r}: only labels in the {LABEL_NS}/ namespace can be set")
            if key == rehearsal.REHEARSAL_LABEL:
                raise FleetError(f"--label {part!r}: {key} is set by node join itself when the GPU type is overridden")
            out[key] = value.strip()
    tag = out.get(rehearsal.GPU_LABEL)
    if tag and tag != detected:
        if not detected:
            raise FleetError(f"--label {rehearsal.GPU_LABEL}={tag}: this machine has no GPU to rehearse with")
        out[rehearsal.REHEARSAL_LABEL] = detected
    return out


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _raylets_here() -> int:
    """How many raylet processes run on this machine (any user we can see): another Ray node is already here."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else []):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        if argv0.endswith(b"/raylet"):
            count += 1
    return count


def same_host_args(extra: list[str], temp_root: str | None = None) -> tuple[list[str], str]:
    """More `ray start` arguments for a node that joins on a machine where another Ray node (the head, or a node of
    a rehearsal) already runs, and why; none for the first node.  Such a node needs a dashboard-agent port, a
    metrics port and a temp dir of its own, and worker ports the OS picks (Ray's default range would hand the same
    ports to both nodes' workers).  Options the user passed (``--ray-start-arg``) are kept."""
    if not _raylets_here():
        return [], ""
    given = {a.split("=", 1)[0] for a in extra}
    add: list[str] = []
    if "--dashboard-agent-listen-port" not in given:
        add.append(f"--dashboard-agent-listen-port={_free_port()}")
    if "--metrics-export-port" not in given:
        add.append(f"--metrics-export-port={_free_port()}")
    if not given & {"--min-worker-port", "--max-worker-port", "--worker-port-list"}:
        add += ["--min-worker-port=0", "--max-worker-port=0"]
    if "--temp-dir" not in given:
        import tempfile

        root = Path(temp_root or tempfile.gettempdir())
        add.append(f"--temp-dir={root / f'ray-kf-{os.getpid()}'}")
    return add, "another Ray node runs on this machine: this node gets ports and a temp dir of its own"


def gpu_summary(devices: list[DeviceInfo]) -> str:
    counts: dict[str, int] = {}
    for d in devices:
        counts[f"{d.gpu_type} ({d.name}, {d.arch})"] = counts.get(f"{d.gpu_type} ({d.name}, {d.arch})", 0) + 1
    return ", ".join(f"{n} x {t}" for t, n in counts.items()) or "none"


# ------------------------------------------------------------------------------------------------ the token


@dataclass
class Token:
    """Where this node's Ray auth token comes from.  The token itself is never printed."""

    origin: str  # "--token-file", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_TOKEN", "~/.ray/auth_token"
    path: Path | None  # None when it comes from RAY_AUTH_TOKEN

    def env(self) -> dict[str, str]:
        """The environment that makes Ray use this token (RAY_AUTH_MODE=token plus where the token is)."""
        if self.path is not None:
            return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.path)}
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.environ.get("RAY_AUTH_TOKEN", "")}

    def describe(self) -> str:
        return f"{self.origin} ({self.path})" if self.path else self.origin


def find_token(token_file: str | None, env: Mapping[str, str] | None = None) -> Token | None:
    """The token in Ray's order of precedence, with ``--token-file`` first.  A named file that cannot be read is an
    error (Ray treats an unreadable RAY_AUTH_TOKEN_PATH as fatal too)."""
    env = os.environ if env is None else env
    if token_file:
        p = Path(token_file).expanduser().resolve()
        _check_token_file(p, "--token-file")
        return Token("--token-file", p)
    if env.get("RAY_AUTH_TOKEN"):
        return Token("RAY_AUTH_TOKEN", None)
    if env.get("RAY_AUTH_TOKEN_PATH"):
        p = Path(env["RAY_AUTH_TOKEN_PATH"]).expanduser().resolve()
        _check_token_file(p, "RAY_AUTH_TOKEN_PATH")
        return Token("RAY_AUTH_TOKEN_PATH", p)
    home = Path(env.get("HOME") or Path.home())
    default = home / ".ray" / "auth_token"
    if default.is_file():
        return Token("~/.ray/auth_token", default)
    return None


def _check_token_file(p: Path, origin: str) -> None:
    try:
        text = p.read_text().strip()
    except OSError as exc:
        raise FleetError(f"{origin} {p}: cannot read the token: {exc.strerror or exc}; {TOKEN_FIX}") from None
    if not text:
        raise FleetError(f"{origin} {p}: the file is empty; {TOKEN_FIX}")


# ------------------------------------------------------------------------------------------------ probing the head


@dataclass
class HeadProbe:
    address: str
    reachable: bool
    auth: str | None = None  # "token" | "disabled" | None (unknown)
    token_accepted: bool | None = None  # with auth == "token": whether our token got in (None: we had none)
    ray_version: str | None = None
    python_version: str | None = None
    error: str | None = None


_PROBE_CODE = r"""
import json, sys
try:
    import ray
    from ray._common.usage import usage_lib
    gcs = ray._raylet.GcsClient(address=sys.argv[1])
    meta = usage_lib.get_cluster_metadata(gcs)
    print(json.dumps({"ok": True, "metadata": meta}))
except Exception as exc:  # the parent classifies the failure
    print(json.dumps({"ok": False, "type": type(exc).__name__, "error": str(exc)}))
"""


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise FleetError(
            f"--address {address!r}: expected HOST:PORT (the head's GCS address, port {DEFAULT_PORT} by default)"
        )
    return host.strip("[]"), int(port)


def _run_probe(address: str, env: dict[str, str], timeout: float) -> dict:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE_CODE, address], env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "type": "Timeout", "error": f"no answer from the GCS within {timeout:g} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"ok": False, "type": "ProbeFailed", "error": " | ".join(tail) or f"exit code {proc.returncode}"}
    return json.loads(lines[-1])


def _is_auth_failure(res: dict) -> bool:
    text = f"{res.get('type', '')} {res.get('error', '')}"
    return "Authentication" in text or "InvalidAuthToken" in text or "Unauthenticated" in text


def _answered(address: str, res: dict, **auth) -> HeadProbe:
    """The probe of a head that answered (``res``: the probe's result, with the head's versions), with ``auth``:
    how it let this process in."""
    meta = res["metadata"] or {}
    return HeadProbe(
        address, True, ray_version=meta.get("ray_version"), python_version=meta.get("python_version"), **auth
    )


# HTTP/2's client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS) answers with a SETTINGS frame of
# its own (type 0x4, the fourth byte of its first frame) at once; another kind of server does not
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def speaks_grpc(host: str, port: int, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """None when the server at ``host:port`` answers as a gRPC server does (Ray's GCS is one), else what it did
    instead, in words: a server of another kind there (a web server, a database) would leave Ray's client retrying
    for most of a minute."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(_H2_PREFACE)
            first = b""
            while len(first) < 9:
                chunk = conn.recv(9 - len(first))
                if not chunk:
                    break
                first += chunk
    except TimeoutError:
        return f"no HTTP/2 answer within {timeout:g} s"
    except OSError as exc:
        return f"{exc.strerror or exc}"
    if len(first) >= 4 and first[3] == 0x04:
        return None
    shown = first.decode("latin-1", "replace").splitlines()[0][:40] if first else "it closed the connection"
    return f"it answered {shown!r}, not as a gRPC server"


def probe_head(address: str, token: Token | None, timeout: float = PROBE_TIMEOUT_S) -> HeadProbe:
    """Ask the head's GCS for its versions: first without a token (does the head use token auth at all?), then, if
    it does and we have a token, with it (is ours the right one?).  A server that is not a gRPC one is told apart
    first, in seconds (:func:`speaks_grpc`)."""
    host, port = _split_address(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        return HeadProbe(address, reachable=False, error=f"cannot connect to {host}:{port}: {exc.strerror or exc}")
    other = speaks_grpc(host, port)
    if other is not None:
        return HeadProbe(
            address,
            reachable=False,
            error=f"{host}:{port} is not a Ray head ({other}); check the port (6379 by default)",
        )
    base = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    res = _run_probe(address, {**base, "RAY_AUTH_MODE": "disabled"}, timeout)
    if res.get("ok"):
        return _answered(address, res, auth="disabled")
    if not _is_auth_failure(res):
        return HeadProbe(address, reachable=True, error=f"{res.get('type')}: {res.get('error')}")
    if token is None:
        return HeadProbe(address, True, auth="token", token_accepted=None)
    res = _run_probe(address, {**base, **token.env()}, timeout)
    if res.get("ok"):
        return _answered(address, res, auth="token", token_accepted=True)
    if _is_auth_failure(res):
        return HeadProbe(address, True, auth="token", token_accepted=False, error=str(res.get("error", ""))[:300])
    return HeadProbe(address, True, auth="token", error=f"{res.get('type')}: {res.get('error')}")


# ------------------------------------------------------------------------------------------------ checks


@dataclass
class Check:
    name: str
    status: str  # ok | fail | skip
    detail: str
    fix: str = ""


def local_versions() -> tuple[str, str]:
    import ray

    return ray.__version__, ".".join(map(str, sys.version_info[:3]))


def _python_matches(head: str, mine: str) -> bool:
    level = os.environ.get("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL", "patch")
    parts = 2 if level == "minor" else 3
    return head.split(".")[:parts] == mine.split(".")[:parts]


def _gpu_checks(facts: NodeFacts, num_gpus: int | None) -> list[Check]:
    """GPUs detected, one GPU type per node, and a --num-gpus the node has."""
    gpus = facts.gpus
    if not gpus:
        return [
            Check(
                "GPUs",
                "fail",
                f"no GPU detected ({facts.source})",
                "a fleet node needs a GPU that torch sees (torch.cuda.is_available()); check the driver "
                "and that this Python's torch is a CUDA or ROCm build",
            )
        ]
    checks = [Check("GPUs", "ok", f"{len(gpus)} detected: {gpu_summary(gpus)} ({facts.source})")]
    types = sorted({d.gpu_type for d in gpus})
    if len(types) > 1:
        checks.append(
            Check(
                "one GPU type",
                "fail",
                f"this node mixes {', '.join(types)}",
                "a node carries one GPU type; restrict it with HIP_VISIBLE_DEVICES (ROCm) or "
                "CUDA_VISIBLE_DEVICES (CUDA) to one type",
            )
        )
    if num_gpus is not None and not 1 <= num_gpus <= len(gpus):
        checks.append(
            Check(
                "--num-gpus",
                "fail",
                f"--num-gpus {num_gpus} but {len(gpus)} GPU(s) detected",
                f"give a number from 1 to {len(gpus)}",
            )
        )
    return checks


def _amd_checks(facts: NodeFacts) -> list[Check]:
    """On AMD: Ray's GPU manager (amdsmi) importable, and a device mask Ray accepts."""
    if facts.vendor != "amd":
        return []
    if facts.amdsmi_importable is None:
        checks = [Check("amdsmi", "skip", "not known for this recorded node")]
    elif facts.amdsmi_importable:
        checks = [Check("amdsmi", "ok", "the amdsmi Python package is importable (Ray's AMD GPU manager)")]
    else:
        checks = [Check("amdsmi", "fail", "the amdsmi Python package is not importable", AMDSMI_FIX)]
    rocr, hip = facts.env.get("ROCR_VISIBLE_DEVICES"), facts.env.get("HIP_VISIBLE_DEVICES")
    if rocr is not None and hip is None:
        checks.append(
            Check(
                "visible devices",
                "fail",
                f"ROCR_VISIBLE_DEVICES={rocr} is set without "
                "HIP_VISIBLE_DEVICES: Ray raises 'Please use HIP_VISIBLE_DEVICES instead of "
                "ROCR_VISIBLE_DEVICES' when it assigns a GPU",
                f"unset ROCR_VISIBLE_DEVICES and set HIP_VISIBLE_DEVICES={rocr} instead",
            )
        )
    else:
        checks.append(
            Check(
                "visible devices",
                "ok",
                f"HIP_VISIBLE_DEVICES={hip}" if hip is not None else "no device mask (all GPUs)",
            )
        )
    return checks


def _label_checks(labels: Mapping[str, str]) -> list[Check]:
    """The node's labels pass Ray's own syntax check."""
    if not labels:
        return []
    try:
        from ray._private.label_utils import validate_node_label_syntax

        validate_node_label_syntax(dict(labels))
        return [Check("labels", "ok", f"{len(labels)} labels in the {LABEL_NS}/ namespace")]
    except ValueError as exc:
        return [Check("labels", "fail", str(exc), "report this: label values are derived from detection")]


def _head_reach_check(probe: HeadProbe | None, mine_ray: str, mine_py: str) -> Check | None:
    """Why the head cannot be checked (not reachable, or it did not answer); None when it answered."""
    if probe is None or not probe.reachable:
        why = probe.error if probe else "no head address"
        return Check(
            "head",
            "skip",
            f"head not reachable ({why}): Ray/Python versions and token not "
            f"checked; this node runs Ray {mine_ray}, Python {mine_py}",
        )
    if probe.error and probe.auth is None:
        return Check(
            "head",
            "fail",
            f"the head at {probe.address} did not answer: {probe.error}",
            "check the address (HOST:PORT of `cluster up`) and that the head is running",
        )
    return None


def _token_check(probe: HeadProbe, token: Token | None, insecure: bool) -> Check:
    """The head uses token authentication (or --insecure accepts that it does not) and takes this node's token."""
    if probe.auth == "disabled" and insecure:
        return Check(
            "token auth",
            "ok",
            "the head does not use token authentication; joining anyway "
            "(--insecure): anyone who reaches it can join and run code, so keep "
            "it on a private network",
        )
    if probe.auth == "disabled":
        return Check(
            "token auth",
            "fail",
            "the head does not use token authentication: anyone who reaches it can join and run code on every node",
            "restart the head with `python -m orchestrator cluster up` (token authentication), or "
            "join anyway with --insecure on a network only trusted machines reach",
        )
    if probe.token_accepted is None:
        return Check("token auth", "fail", "the head uses token authentication and this node has no token", TOKEN_FIX)
    if probe.token_accepted is False:
        return Check(
            "token auth",
            "fail",
            f"the head rejected the token from {token.describe()}",
            "the token differs from the head's; " + TOKEN_FIX,
        )
    return Check("token auth", "ok", f"the head accepted the token from {token.describe()}")


def _version_checks(probe: HeadProbe, mine_ray: str, mine_py: str) -> list[Check]:
    """This node runs the head's Ray and a Python Ray accepts beside the head's."""
    if probe.ray_version is None:
        if probe.auth == "token" and not probe.token_accepted:
            return [Check("versions", "skip", "the head's versions cannot be read without its token")]
        return []
    if probe.ray_version == mine_ray:
        checks = [Check("Ray version", "ok", f"{mine_ray}, as on the head")]
    else:
        checks = [
            Check(
                "Ray version",
                "fail",
                f"head runs Ray {probe.ray_version}, this node {mine_ray}",
                f"install the head's version: `python -m pip install 'ray[default]=={probe.ray_version}'`",
            )
        ]
    if probe.python_version is None or _python_matches(probe.python_version, mine_py):
        checks.append(Check("Python version", "ok", f"{mine_py}, as on the head"))
    else:
        checks.append(
            Check(
                "Python version",
                "fail",
                f"head runs Python {probe.python_version}, this node {mine_py}; Ray refuses a different Python",
                f"use Python {probe.python_version} on this node (a venv or conda env), or set "
                f"RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor on every node if only the patch "
                f"level differs",
            )
        )
    return checks


def join_checks(
    facts: NodeFacts,
    probe: HeadProbe | None,
    token: Token | None,
    num_gpus: int | None,
    labels: Mapping[str, str],
    insecure: bool = False,
) -> list[Check]:
    """Everything a node needs to work in the fleet, in the order a user would fix it.  A head without token
    authentication fails the check unless ``insecure`` (``node join --insecure``)."""
    checks = _gpu_checks(facts, num_gpus) + _amd_checks(facts) + _label_checks(labels)
    mine_ray, mine_py = local_versions()
    unreachable = _head_reach_check(probe, mine_ray, mine_py)
    if unreachable is not None:
        return checks + [unreachable]
    return checks + [_token_check(probe, token, insecure)] + _version_checks(probe, mine_ray, mine_py)


def failed(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == "fail"]


# ------------------------------------------------------------------------------------------------ the command


def ray_executable() -> str:
    """The `ray` next to this Python (so the node runs the same Ray as these checks), else the one on PATH."""
    here = Path(sys.executable).parent / "ray"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    import shutil

    return shutil.which("ray") or "ray"


@dataclass
class StartCommand:
    argv: list[str]
    env: dict[str, str]  # set on top of the current environment
    shown_env: dict[str, str]  # what is printed (RAY_AUTH_TOKEN hidden)

    def render(self) -> str:
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.shown_env.items())
        return (prefix + " " if prefix else "") + shlex.join(self.argv)


def auth_env(probe_auth: str | None, token: Token | None) -> tuple[dict[str, str], dict[str, str]]:
    """(env, shown env) for Ray processes: token mode with the token, or auth explicitly disabled."""
    if probe_auth == "disabled" or (probe_auth is None and token is None):
        return {"RAY_AUTH_MODE": "disabled"}, {"RAY_AUTH_MODE": "disabled"}
    if token is None:
        return {"RAY_AUTH_MODE": "token"}, {"RAY_AUTH_MODE": "token"}
    env = token.env()
    shown = dict(env)
    if "RAY_AUTH_TOKEN" in shown:
        shown["RAY_AUTH_TOKEN"] = "<hidden>"
    return env, shown


def ray_start_command(
    address: str,
    labels: Mapping[str, str],
    num_gpus: int,
    *,
    block: bool,
    probe_auth: str | None,
    token: Token | None,
    extra: list[str] | None = None,
) -> StartCommand:
    """`ray start` for a GPU node: its labels, its GPU count and one unit of the whole-node resource."""
    argv = [ray_executable(), "start", f"--address={address}"]
    if labels:  # none on a machine without a GPU: no empty --labels=
        argv.append("--labels=" + ",".join(f"{k}={v}" for k, v in labels.items()))
    argv += [f"--num-gpus={num_gpus}", "--resources=" + json.dumps({NODE_RESOURCE: 1})]
    if block:
        argv.append("--block")
    argv += extra or []
    env, shown = auth_env(probe_auth, token)
    return StartCommand(argv, env, shown)


def port_taken(port: int) -> str | None:
    """Why a head cannot listen on ``port`` of this machine (something already listens there), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("", port))
        except OSError as exc:
            return (
                f"port {port} is taken on this machine ({exc.strerror or exc}; `ss -ltnp 'sport = :{port}'` shows by "
                f"what): stop that, or give the head another port with --port"
            )
    return None


def head_command(
    port: int,
    token_path: Path,
    *,
    block: bool,
    labels: Mapping[str, str] | None = None,
    num_gpus: int = 0,
    dashboard_host: str = "127.0.0.1",
    extra: list[str] | None = None,
) -> StartCommand:
    """`ray start --head` with token authentication.  The head runs no benchmarks unless it brings GPUs."""
    argv = [
        ray_executable(),
        "start",
        "--head",
        f"--port={port}",
        f"--num-gpus={num_gpus}",
        f"--dashboard-host={dashboard_host}",
    ]
    if labels:
        argv += [
            "--labels=" + ",".join(f"{k}={v}" for k, v in labels.items()),
            "--resources=" + json.dumps({NODE_RESOURCE: 1}),
        ]
    if block:
        argv.append("--block")
    argv += extra or []
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path)}
    return StartCommand(argv, env, dict(env))


def ensure_token_file(path: Path, create: bool) -> bool:
    """True if ``path`` holds a token; with ``create``, write a new random one (256 bits, mode 0600) if missing."""
    if path.is_file() and path.read_text().strip():
        return True
    if not create:
        return False
    from ray._private.authentication.authentication_token_generator import generate_new_authentication_token

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(generate_new_authentication_token())
    return True


def head_address(port: int) -> str:
    from ray._private.services import get_node_ip_address

    return f"{get_node_ip_address()}:{port}"


# ------------------------------------------------------------------------------------------------ a connected driver


def use_head_auth(probe: HeadProbe, token: Token | None, head: str, fix: str, error: type[Exception]) -> None:
    """Set this process's Ray auth (RAY_AUTH_MODE, the token's variable) the way a reachable head's ``probe`` says
    it wants it; raise ``error`` naming the ``head`` and the ``fix`` when this process has no token it accepts, or
    when the head did not answer the probe."""
    if probe.auth == "token":
        if probe.token_accepted is None:
            raise error(f"{head} uses token authentication and this process has no token; {fix}")
        if probe.token_accepted is False:
            raise error(f"{head} rejected the token from {token.describe()}; {fix}")
        os.environ.update(token.env())
    elif probe.auth == "disabled":
        os.environ["RAY_AUTH_MODE"] = "disabled"
    elif probe.error:
        raise error(f"{head} did not answer: {probe.error}")


def connect(address: str, token: Token | None) -> bool:
    """ray.init(address) for node list/leave, with this process's auth set up the way the head wants it (probed
    first: Ray's own refusal takes ~20 s and names no fix).  False if this process was already connected."""
    import logging

    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            return False
    probe = probe_head(address, token)
    if not probe.reachable:
        raise FleetError(f"cannot reach the head at {address}: {probe.error}")
    use_head_auth(probe, token, f"the head at {address}", TOKEN_FIX, FleetError)
    import ray

    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING, configure_logging=True)
    except Exception as exc:  # noqa: BLE001 - every way of not getting in is reported the same way
        text = f"{type(exc).__name__}: {exc}"
        if "Authentication" in text or "InvalidAuthToken" in text or "Unauthenticated" in text:
            raise FleetError(
                f"the head at {address} uses token authentication and refused this process "
                f"({_first_line(text)}); {TOKEN_FIX}"
            ) from None
        raise FleetError(f"cannot connect to the cluster at {address}: {_first_line(text)}") from None
    return True


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else ""


@dataclass
class NodeRow:
    node_id: str
    alive: bool
    head: bool
    address: str
    labels: dict[str, str]
    gpus: int
    gpus_in_use: int | None
    jobs_running: int | None
    jobs_source: str  # "state API" | "resources" | ""
    whole_node_free: bool | None
    death_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _running_batches_by_node(address: str | None) -> dict[str, int] | None:
    """Running kernelfleet batches per node from Ray's state API (needs the head's dashboard), else None.  One batch
    runs one job at a time, so this is the number of jobs running."""
    try:
        from ray.util.state import list_tasks

        tasks = list_tasks(
            filters=[("state", "=", "RUNNING"), ("name", "=", "kernelfleet-batch")],
            limit=10000,
            timeout=5,
            raise_on_missing_output=False,
        )
    except Exception:  # noqa: BLE001 - no dashboard (include_dashboard=false) or an older Ray: fall back
        return None
    out: dict[str, int] = {}
    for t in tasks:
        node = getattr(t, "node_id", None)
        if node:
            out[node] = out.get(node, 0) + 1
    return out


def list_nodes(use_state_api: bool = True) -> list[NodeRow]:
    """Every node the GCS knows (alive or dead) with its labels, GPUs and the jobs running on it."""
    import ray
    from ray._private import state as ray_state

    available = ray_state.available_resources_per_node()
    by_state = _running_batches_by_node(None) if use_state_api else None
    rows = []
    for n in ray.nodes():
        res = dict(n.get("Resources") or {})
        gpus = int(res.get("GPU", 0))
        alive = bool(n.get("Alive"))
        free = available.get(n["NodeID"]) if alive else None
        in_use = None if free is None else max(0, round(gpus - float(free.get("GPU", 0))))
        whole_free = None
        if alive and NODE_RESOURCE in res and free is not None:
            whole_free = float(free.get(NODE_RESOURCE, 0)) >= float(res[NODE_RESOURCE]) - 1e-9
        if not alive:
            jobs, source = 0, ""
        elif by_state is not None:
            jobs, source = by_state.get(n["NodeID"], 0), "state API"
        else:
            jobs, source = in_use, "resources"
        rows.append(
            NodeRow(
                node_id=n["NodeID"],
                alive=alive,
                head="node:__internal_head__" in res,
                address=str(n.get("NodeManagerAddress", "")),
                labels=dict(n.get("Labels") or {}),
                gpus=gpus,
                gpus_in_use=in_use,
                jobs_running=jobs,
                jobs_source=source,
                whole_node_free=whole_free,
                death_reason=str(n.get("DeathReasonMessage") or ""),
            )
        )
    rows.sort(key=lambda r: (not r.alive, not r.head, r.labels.get(f"{LABEL_NS}/gpu", ""), r.node_id))
    return rows


def resolve_node(rows: list[NodeRow], node_id: str | None) -> NodeRow:
    """The node `node leave` means: --node-id (a unique prefix is enough), else the one live node of this machine."""
    live = [r for r in rows if r.alive]
    if node_id:
        hits = [r for r in rows if r.node_id.startswith(node_id)]
        if len(hits) != 1:
            raise FleetError(
                f"--node-id {node_id}: {'no' if not hits else len(hits)} node(s) match; "
                f"`python -m orchestrator node list` shows the ids"
            )
        return hits[0]
    from ray._private.services import get_node_ip_address

    ip = get_node_ip_address()
    mine = [r for r in live if r.address == ip and not r.head]
    if len(mine) != 1:
        raise FleetError(
            f"{len(mine) or 'no'} live worker node(s) with this machine's address {ip}; "
            f"name the node with --node-id (see `python -m orchestrator node list`)"
        )
    return mine[0]


def drain_node(address: str, node_id: str, reason: str, deadline_s: float | None) -> None:
    """Ask the GCS to drain a node: it takes no new work, its running jobs finish, and its raylet exits once idle.
    (`ray drain-node` does the same; PREEMPTION is the reason the GCS never rejects.)"""
    import ray
    from ray.core.generated import autoscaler_pb2

    gcs = ray._raylet.GcsClient(address=address)
    deadline_ms = 0 if deadline_s is None else int(time.time() * 1000 + deadline_s * 1000)
    accepted, why = gcs.drain_node(
        node_id, autoscaler_pb2.DrainNodeReason.Value("DRAIN_NODE_REASON_PREEMPTION"), reason, deadline_ms
    )
    if not accepted:
        raise FleetError(f"the GCS did not accept draining node {node_id[:12]}: {why}")


def gcs_address() -> str:
    """The GCS address of the connected driver's cluster."""
    import ray

    ctx = ray.get_runtime_context()
    return ctx.gcs_address
