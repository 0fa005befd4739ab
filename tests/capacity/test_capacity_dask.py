"""The same search on a Dask cluster the test starts on 127.0.0.1 and stops: the same answer as
the local run, and no process left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import lab_trace
from kp_testing import run_cli

distributed = pytest.importorskip("distributed", reason="the `distributed` extra is not installed")
psutil = pytest.importorskip("psutil")

DASK = str(Path(sys.executable).with_name("dask"))


def _start(arguments: list[str], folder: Path, name: str) -> subprocess.Popen:
    log = open(folder / f"{name}.log", "w")
    return subprocess.Popen([DASK, *arguments], stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                            start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process's own session (the worker's nanny has children), wait for every
    member to go, then SIGKILL whatever is left of it."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 30
    while _session_members(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _session_members(process.pid):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait(timeout=30)


def _session_members(session: int) -> list[int]:
    """The live processes of a session (zombies already reaped by nobody but gone are not counted)."""
    members = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getsid(process.info["pid"]) == session and process.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(process.info["pid"])
        except (ProcessLookupError, PermissionError):
            continue
    return members


def test_dask_cluster_gives_the_local_answer(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv", seed=5)
    arguments = [str(lab), "--trace", str(trace), "--target", "p95-wait<=45m", "--format", "json"]
    local = run_cli("capacity", *arguments, "--workers", "2")
    assert local.returncode == 0, local.stderr

    scheduler_file = tmp_path / "scheduler.json"
    scheduler = _start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                        "--scheduler-file", str(scheduler_file)], tmp_path, "scheduler")
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert scheduler.poll() is None, (tmp_path / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        worker = _start(["worker", address, "--nworkers", "2", "--nthreads", "1", "--host", "127.0.0.1",
                         "--no-dashboard", "--local-directory", str(tmp_path / "dask-worker")], tmp_path, "worker")
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        remote = run_cli("capacity", *arguments, "--address", address)
        assert remote.returncode == 0, remote.stderr
    finally:
        for process in (worker, scheduler):
            if process is not None:
                _stop(process)
    local_data, remote_data = json.loads(local.stdout), json.loads(remote.stdout)
    assert remote_data["workers"] == 2
    local_data.pop("workers"), remote_data.pop("workers")
    assert remote_data == local_data
    for process in (worker, scheduler):
        assert process.returncode is not None
        assert _session_members(process.pid) == []


def test_no_scheduler_at_the_address_is_an_environment_failure(lab: Path, tmp_path: Path) -> None:
    done = run_cli("capacity", str(lab), "--trace", str(lab_trace(tmp_path / "t.csv")), "--target", "p95-wait<=1h",
                   "--address", "tcp://127.0.0.1:1")
    assert done.returncode == 3
    assert "cannot join the Dask scheduler at tcp://127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr
