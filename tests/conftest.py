"""Shared test fixtures.

Cross-checks against ../shared/ (Kueue's CRDs, reference data) skip, with that reason, only when
the folder is absent, so a clone elsewhere still passes `make test`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kp_testing import REPO_ROOT, SHARED_DIR

# SIGTERM tears the fixtures down as Ctrl-C does (the servers they started are stopped).
pytest_plugins = ["kp_testing.interrupts"]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED_DIR.is_dir():
        pytest.skip(f"cross-check needs {SHARED_DIR} (the shared reference folder), which is absent")
    return SHARED_DIR


@pytest.fixture(scope="session")
def kueue_crd_dir() -> Path:
    """Kueue's CRDs from the Kueue Go module kueue-oracle builds against (kp_testing/kueue_module.py)."""
    from kp_testing.kueue_module import kueue_crd_dir as module_crd_dir

    crds, reason = module_crd_dir()
    if crds is None:
        pytest.skip(reason)
    return crds
