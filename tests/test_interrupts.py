"""A SIGTERM to a test run stops what its fixtures started (kp_testing/interrupts.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# A fixture that starts a server the way the sandbox fixtures do (a session of its own, so a
# group kill does not reach it), records its pid, and stops it at teardown.
INNER = '''
import subprocess, time
from pathlib import Path
import pytest

@pytest.fixture
def server(tmp_path):
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    Path({pidfile!r}).write_text(str(process.pid))
    yield process
    process.terminate()
    process.wait()

def test_holds_a_server(server):
    time.sleep(60)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


@pytest.mark.parametrize("plugin", [True, False], ids=["with-plugin", "control-without"])
def test_sigterm_stops_what_fixtures_started(tmp_path: Path, plugin: bool) -> None:
    pidfile = tmp_path / "server.pid"
    (tmp_path / "test_inner.py").write_text(INNER.format(pidfile=str(pidfile)))
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_inner.py")]
    if plugin:
        args[3:3] = ["-p", "kp_testing.interrupts"]
    run = subprocess.Popen(args, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(TESTS)},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    server = None
    try:
        deadline = time.monotonic() + 60
        while not pidfile.is_file() or not pidfile.read_text():
            assert time.monotonic() < deadline and run.poll() is None, run.stdout.read().decode()
            time.sleep(0.1)
        server = int(pidfile.read_text())
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(timeout=30)
        time.sleep(0.5)
        assert _alive(server) is not plugin
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if server is not None and _alive(server):
            os.kill(server, signal.SIGKILL)
