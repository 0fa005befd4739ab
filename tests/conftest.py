"""Shared test fixtures.

Cross-checks against ../shared/ (Kueue's CRDs, reference data) skip, with that reason, only when
the folder is absent, so a clone elsewhere still passes `make test`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("KUEUE_POLICY_SHARED", REPO_ROOT.parent / "shared"))


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


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real console script as a subprocess, the way users and CI run it."""
    exe = shutil.which("kueue-policy", path=str(Path(sys.executable).parent)) or "kueue-policy"
    return subprocess.run([exe, *args], cwd=cwd, input=input, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)
