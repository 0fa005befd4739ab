"""The delivery tests' fixture: a real git repository (see kp_testing.git_repos)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kp_testing.git_repos import EXAMPLE_POLICY, PolicyRepo, git


@pytest.fixture()
def policy_repo(tmp_path: Path) -> PolicyRepo:
    remote = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True, capture_output=True)
    git(work, "checkout", "-q", "-b", "main")
    shutil.copytree(EXAMPLE_POLICY, work / "policies")
    (work / "README.md").write_text("GPU policy\n")
    repo = PolicyRepo(work, remote)
    repo.commit_all("policy: first version")
    repo.push_main()
    return repo
