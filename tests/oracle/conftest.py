"""The oracle tests run the Makefile-built kueue-oracle; without Go they skip, saying so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kp_testing import REPO_ROOT

ORACLE = REPO_ROOT / "oracle" / "bin" / "kueue-oracle"


@pytest.fixture(scope="session")
def oracle_bin() -> Path:
    if shutil.which("go") is None:
        pytest.skip("go not on PATH")
    if not ORACLE.is_file():
        # `make test` builds it first; a bare `pytest` run builds it here, the same way.
        built = subprocess.run(["make", "--no-print-directory", "oracle"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=False)
        assert built.returncode == 0, built.stdout + built.stderr
    return ORACLE
