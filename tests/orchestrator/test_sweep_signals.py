"""A sweep through a real local Ray: SIGTERM ends it like Ctrl-C, its Ray listens on the loopback interface only,
uses no token (no warning, no token file), shows an ETA, and a rerun completes the run without duplicates."""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.support.devices import ON_GPU

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOOPBACK = ("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")


def _tree(root: int) -> set[int]:
    """``root`` and every process under it, from /proc."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError, IndexError):
            continue
    pids, grew = {root}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in pids} - pids
        pids |= more
        grew = bool(more)
    return pids


def _address(hexaddr: str) -> str:
    """A /proc/net/tcp{,6} local address (little-endian words) as ss prints it: ``127.0.0.1:8265``, ``[::1]:8265``."""
    host, port = hexaddr.split(":")
    raw = b"".join(bytes.fromhex(host[i : i + 8])[::-1] for i in range(0, len(host), 8))
    ip = ipaddress.ip_address(raw)
    if len(raw) == 4:
        return f"{ip}:{int(port, 16)}"
    mapped = ip.ipv4_mapped  # ss writes an IPv4-mapped address as [::ffff:127.0.0.1]
    return f"[{f'::ffff:{mapped}' if mapped else ip.compressed}]:{int(port, 16)}"


def _listening(root: int) -> list[str]:
    """`ss -ltnp`-like lines (state, queues, local address, peer, process) of the TCP sockets the processes under
    ``root`` listen on, read from /proc (no iproute2 needed)."""
    listen = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A":  # LISTEN
                listen[f"socket:[{cols[9]}]"] = _address(cols[1])
    found = []
    for pid in sorted(_tree(root)):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        links = []
        for fd in fds:
            try:
                links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:  # closed meanwhile (the listing's own descriptor, for one)
                continue
        found += [f'LISTEN 0 0 {listen[ln]} *:* users:(("{comm}",pid={pid}))' for ln in links if ln in listen]
    return found


def _ok_jobs(db) -> int:
    try:
        return sqlite3.connect(db).execute("select count(*) from jobs where status='ok'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigterm_mid_sweep_marks_the_run_interrupted_and_a_rerun_completes_it(tmp_path):
    db, home = tmp_path / "kf.db", tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    env["HOME"] = str(home)
    args = [
        sys.executable,
        "-m",
        "orchestrator",
        "+sweep=smoke",
        f"store.url={db}",
        "sweep.batch_size=1",
        "sweep.kernels=[rmsnorm]",
        "sweep.rep_ms=5",
    ]  # 8 jobs, one Ray task each, a short timing budget
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline, sockets = time.monotonic() + 240, []
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(1.0)
        sockets = _listening(proc.pid) or sockets
        if _ok_jobs(db) >= 2:
            break
    assert _ok_jobs(db) >= 2, "the sweep never got going"
    assert any("gcs_server" in ln for ln in sockets) and any("raylet" in ln for ln in sockets), sockets
    local = [ln.split()[3] for ln in sockets]
    assert all(addr.startswith(LOOPBACK) for addr in local), sockets
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)  # a second signal while it shuts down still lets it mark the run
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 143, out
    assert "Traceback" not in out and "SIGTERM received" not in out and "*** " not in out, out
    assert "Token authentication is" not in out
    assert not (home / ".ray" / "auth_token").exists()
    assert re.search(r"eta \d+:\d\d:\d\d", out), out  # shown once a job has completed
    con = sqlite3.connect(db)
    assert con.execute("select status from runs").fetchall() == [("interrupted",)], out
    finished = _ok_jobs(db)
    assert 2 <= finished < 8, out

    again = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out2 = again.stdout + again.stderr
    assert again.returncode == 0, out2
    assert "resuming interrupted run 1" in out2 and f"8 jobs, {finished} done earlier" in out2
    assert "Token authentication is" not in out2
    assert con.execute("select id, status from runs").fetchall() == [(1, "complete")]
    assert con.execute("select count(*) from jobs").fetchone()[0] == 8
    assert con.execute("select count(*) from job_attempts").fetchone()[0] == 8
    dup = con.execute(
        "select count(*) from (select job_id, attempt, impl, metric, count(*) c from measurements "
        "group by 1,2,3,4 having c > 1)"
    ).fetchone()[0]
    assert dup == 0
    # the summary fits 120 columns; on the CPU it says what an interpreted Triton time is and the sweep was priced
    # first (small enough to run), on a GPU neither (compiled Triton, no CPU price)
    table = out2[out2.index("run 1 · smoke") : out2.index("run 1: complete")]
    assert max(len(ln.rstrip()) for ln in table.splitlines()) <= 120, table
    on_cpu = not ON_GPU
    assert ("Triton's interpreter" in table) is on_cpu, table
    assert ("estimated" in out2 and "on this CPU" in out2) is on_cpu, out2
