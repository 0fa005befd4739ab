"""The end-to-end tier: real sandboxes (etcd, kube-apiserver, Kueue's manager), one per test.

Each test starts its own sandbox in its own temporary folder and stops it before it ends. The
tier skips, with the reason, only where Go is absent."""

from __future__ import annotations

import pytest

from kp_testing.sandbox import sandbox_build


@pytest.fixture(scope="session")
def sandbox_built() -> None:
    usable, reason = sandbox_build()
    if not usable:
        pytest.skip(reason)
