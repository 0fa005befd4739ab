"""A pytest plugin (tests/conftest.py loads it): SIGTERM ends a run as Ctrl-C does.

A cancelled CI job, `timeout` or a group kill sends SIGTERM, which by default kills pytest and
each xdist worker on the spot, with no fixture teardown: the sandboxes and servers the fixtures
started (each in a session of its own, so the group kill does not reach them) would run on.
Raised as KeyboardInterrupt, pytest tears the fixtures down first."""

from __future__ import annotations

import signal
import threading

import pytest


def _interrupted(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupted)
