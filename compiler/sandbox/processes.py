"""Starting a server so that it outlives `up`, and stopping it for sure.

Each server runs in a session (and process group) of its own: a Ctrl-C in the terminal that ran
`up` does not reach it, and stopping the group also stops anything it started (the manager runs
under `unshare` and `sh`). A server is known by its pid and its start time in /proc: `down` in a
later process never signals a pid that has since been reused by something else.

Stopping sends SIGTERM, waits (kube-apiserver's graceful shutdown takes seconds), then SIGKILL,
and waits again: a caller removes the data folder only once the process is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TERM_GRACE_SECONDS = 20.0
KILL_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class Started:
    """A server `up` started, with its Popen while `up` is still the parent."""

    name: str
    pid: int
    start_time: int
    popen: subprocess.Popen | None = None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    return text[text.rindex(")") + 2:].split()


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def is_running(pid: int, started_at: int) -> bool:
    """True while the process that had this pid and start time is alive (a zombie is not)."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == started_at


def start(name: str, argv: list[str], log: Path, *, env: dict[str, str] | None = None) -> Started:
    with open(log, "ab") as out:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True, env=env, close_fds=True)
    started_at = start_time(popen.pid)
    if started_at is None:   # it died before /proc could be read
        popen.wait()
        started_at = -1
    return Started(name=name, pid=popen.pid, start_time=started_at, popen=popen)


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass
    except PermissionError:   # not a group leader we own any more; signal the process alone
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _wait_gone(server: Started, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.popen is not None:
            if server.popen.poll() is not None:
                return True
        elif not is_running(server.pid, server.start_time):
            return True
        time.sleep(0.05)
    return False


def stop(server: Started, *, grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM the server's process group, wait up to `grace` seconds, then SIGKILL it."""
    if server.start_time < 0:
        return
    if server.popen is None and not is_running(server.pid, server.start_time):
        return
    _signal_group(server.pid, signal.SIGTERM)
    if _wait_gone(server, grace):
        _signal_group(server.pid, signal.SIGKILL)   # whatever the group leader left behind
        return
    _signal_group(server.pid, signal.SIGKILL)
    _wait_gone(server, KILL_GRACE_SECONDS)


def exited(server: Started) -> int | None:
    """The exit code of a server `up` started, or None while it runs."""
    if server.popen is not None:
        return server.popen.poll()
    return None if is_running(server.pid, server.start_time) else -1
