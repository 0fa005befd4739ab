"""Helpers every test area shares: the one way tests import helpers (`from kp_testing import run_cli`,
`from kp_testing.policies import team`): tests/ is on pytest's pythonpath (pyproject.toml).

Modules: policies (small policies written to real files), git_repos (real git repositories and the
CLI run in one), forge_server (a stand-in GitHub/GitLab API), verify_crd_oracle and
verify_strategies (Kueue's CRDs as an oracle, hypothesis strategies), mig_oracle (brute force)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DIR = Path(os.environ.get("KUEUE_POLICY_SHARED", REPO_ROOT.parent / "shared"))


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real console script as a subprocess, the way users and CI run it."""
    exe = shutil.which("kueue-policy", path=str(Path(sys.executable).parent)) or "kueue-policy"
    return subprocess.run([exe, *args], cwd=cwd, input=input, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def node_paths(node, prefix=()):
    """Every path (keys and indexes) into plain YAML data, the root's `()` first."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from node_paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from node_paths(value, prefix + (index,))


def toy_package(tmp_path: Path, py: str, pxd: str) -> Path:
    """A package `toypkg` under `tmp_path` with one module `hot` and its Cython declarations."""
    package = tmp_path / "toypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "hot.py").write_text(py)
    (package / "hot.pxd").write_text(pxd)
    return package
