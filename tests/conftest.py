"""Shared test fixtures.

Cross-checks against ../shared/ (Kueue's CRDs, reference data) skip, with that reason, only when
the folder is absent, so a clone elsewhere still passes `make test`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kp_testing import REPO_ROOT, SHARED_DIR


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED_DIR.is_dir():
        pytest.skip(f"cross-check needs {SHARED_DIR} (the shared reference folder), which is absent")
    return SHARED_DIR


@pytest.fixture(scope="session")
def kueue_crd_dir(shared_dir: Path) -> Path:
    return shared_dir / "schemas" / "kueue-v0.19.2"
