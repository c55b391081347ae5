"""Who holds a run: one sweep process at a time runs a plan.

A sweep run records its owner (``owner_host``, ``owner_pid``, ``owner_since``: when that process took the run)
and a heartbeat (``heartbeat_at``) that the driver refreshes every :data:`HEARTBEAT_S` seconds while the sweep
runs.  A run that is still marked ``running`` may be taken over (resumed) only when its owner is gone: no
heartbeat for :data:`STALE_AFTER_S` seconds, or, on the owner's own host, its process no longer exists.  While
its owner lives, a second sweep of the same plan is refused with :class:`RunHeld`, which says which process
holds the run.  Runs written before owners were recorded have no heartbeat and count as gone.

The checks and the claim happen in one transaction under the plan's lock (orchestrator.store.locks), so two
sweeps starting at once cannot both take the same plan.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from orchestrator.store.errors import StoreError
from orchestrator.store.models import Run, utcnow

HEARTBEAT_S = 10.0
STALE_AFTER_S = 60.0


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int

    @classmethod
    def me(cls) -> "Owner":
        return cls(socket.gethostname(), os.getpid())

    def holds(self, run: Run) -> bool:
        return run.owner_host == self.host and run.owner_pid == self.pid


class RunHeld(StoreError):
    """A live process runs this plan already."""

    def __init__(self, run: Run, url: str | None = None, now: dt.datetime | None = None):
        now = now or utcnow()
        since = f"since {run.owner_since:%Y-%m-%d %H:%M:%S} UTC, " if run.owner_since else ""
        beat = f"last heartbeat {(now - run.heartbeat_at).total_seconds():.0f} s ago" if run.heartbeat_at else ""
        super().__init__(
            f"run {run.id} of this plan is being run by pid {run.owner_pid} on {run.owner_host} "
            f"({since}{beat}); wait for it to finish, or add wait_for_run=true to wait for it",
            url,
        )
        self.run_id = run.id
        self.owner_host = run.owner_host
        self.owner_pid = run.owner_pid


class RunTakenOver(StoreError):
    """This process held a sweep run, looked gone (no heartbeat, e.g. stopped with SIGSTOP) and another sweep took
    the run over (or finished it): this process must stop scheduling and never write the run again."""

    def __init__(self, run: Run, url: str | None = None):
        holder = f"pid {run.owner_pid} on {run.owner_host}" if run.owner_pid is not None else "another process"
        super().__init__(
            f"run {run.id} was taken over by {holder} (status {run.status}) while this sweep looked gone (no "
            f"heartbeat for over {STALE_AFTER_S:.0f} s); this sweep stopped and left the run to it",
            url,
        )
        self.run_id = run.id


def check_held(run: Run, url: str | None = None) -> None:
    """RunTakenOver unless this process still holds the sweep run ``run`` (status running, owner this process);
    runs of an import are written in one transaction and not checked."""
    if run.source == "sweep" and not (run.status == "running" and Owner.me().holds(run)):
        raise RunTakenOver(run, url)


def _process_start(pid: int) -> dt.datetime | None:
    """When process ``pid`` started (Linux /proc); None where that cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
        boot = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
        return dt.datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), dt.timezone.utc)
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def pid_alive(pid: int, since: dt.datetime | None = None) -> bool:
    """Whether process ``pid`` of this host exists and, when ``since`` is given, is the process that was running
    then (not a later process that reuses the number)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    started = _process_start(pid) if since is not None else None
    return started is None or started <= since + dt.timedelta(seconds=2)


def owner_gone(run: Run, now: dt.datetime, stale_after_s: float = STALE_AFTER_S) -> bool:
    """Whether the process that holds ``run`` is gone (see the module doc)."""
    if run.owner_pid is None or run.heartbeat_at is None:
        return True
    if (now - run.heartbeat_at).total_seconds() > stale_after_s:
        return True
    if run.owner_host == socket.gethostname():
        return not pid_alive(run.owner_pid, run.owner_since)
    return False


def held_by_other(run: Run, now: dt.datetime, stale_after_s: float = STALE_AFTER_S) -> bool:
    """A ``running`` run whose owner is another process that is still alive."""
    return run.status == "running" and not Owner.me().holds(run) and not owner_gone(run, now, stale_after_s)


def take(run: Run, now: dt.datetime) -> None:
    """Make this process the run's owner (status running)."""
    me = Owner.me()
    run.status = "running"
    run.finished_at = None
    run.owner_host, run.owner_pid, run.owner_since, run.heartbeat_at = me.host, me.pid, now, now


class Heartbeat:
    """A daemon thread that calls ``beat()`` every ``interval_s`` until stopped or ``beat()`` returns False (the
    run was taken over or finished).  A failing beat (a locked or briefly unreachable store) is retried at the
    next tick: missing a few beats is what the staleness margin is for."""

    def __init__(self, beat, interval_s: float | None = None):
        self._beat = beat
        self._interval = HEARTBEAT_S if interval_s is None else interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kernelfleet-heartbeat", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                if not self._beat():
                    return
            except Exception:  # noqa: BLE001 - the next tick tries again; the staleness margin covers a few misses
                continue

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
