"""The progress bar: on a terminal's stderr it shows candidates done, the best so far and the time
left; `--quiet` (or a stderr that is not a terminal) shows nothing."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import lab_trace


def _run_on_terminal(*arguments: str) -> tuple[int, str]:
    """The CLI with stderr on a pseudo-terminal (stdout a pipe); what the terminal received."""
    exe = shutil.which("kueue-policy", path=str(Path(sys.executable).parent))
    leader, follower = pty.openpty()
    process = subprocess.Popen([exe, *arguments], stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL,
                               env={**os.environ, "COLUMNS": "200", "TERM": "xterm"})
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:   # the terminal closed: the process ended
            break
        if not chunk:
            break
        received += chunk
    process.stdout.read()
    process.wait(timeout=300)
    os.close(leader)
    return process.returncode, received.decode("utf-8", "replace")


def test_progress_on_a_terminal_and_not_with_quiet(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv")
    arguments = ["capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m", "--workers", "1",
                 "--format", "json"]
    code, shown = _run_on_terminal(*arguments)
    assert code == 0
    assert "capacity" in shown and "best " in shown and "/h" in shown
    code, shown = _run_on_terminal(*arguments, "--quiet")
    assert code == 0
    assert "best " not in shown
