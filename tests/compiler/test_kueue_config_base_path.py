"""`spec.kueueConfig.base` names any file of the repository the policy lives in (where a Kueue
installation's Configuration usually sits, beside the policy folder), read from the disk or
from the revision being compiled; paths that leave the repository, or the policy folder outside
any repository, are refused at the field with where the file is and why."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from kp_testing import run_cli
from kp_testing.git_repos import git
from kp_testing.policies import write_policy
from test_kueue_config import BASE, DRA_CLUSTER, TEAM, emitted, line_of

OUTSIDE = "../kueue/controller_manager_config.yaml"


def _policy(root: Path, base: str) -> Path:
    cluster = DRA_CLUSTER + f"  kueueConfig: {{base: {base}}}\n"
    return write_policy(root, {"cluster.yaml": cluster, "teams/a.yaml": TEAM})


def _repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    return root


def _configuration_file(root: Path) -> None:
    (root / "kueue").mkdir(parents=True, exist_ok=True)
    (root / "kueue" / "controller_manager_config.yaml").write_text(BASE)


def test_a_configuration_one_folder_up_in_the_repository_is_the_base(tmp_path):
    _repo(tmp_path)
    _configuration_file(tmp_path)
    policies = _policy(tmp_path, OUTSIDE)
    done = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    configuration, _helm = emitted(tmp_path)
    assert configuration["clientConnection"] == {"qps": 123, "burst": 456}      # the base's own values
    assert configuration["waitForPodsReady"]["timeout"] == "7m"


def test_the_base_is_read_from_the_revision_diff_compiles(tmp_path):
    """`diff` compiles the policy at git revisions: the base comes from each revision, not the
    disk (here removed from the working tree after both commits)."""
    _repo(tmp_path)
    _configuration_file(tmp_path)
    _policy(tmp_path, OUTSIDE)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "policy and Kueue settings")
    (tmp_path / "policies" / "teams" / "a.yaml").write_text(TEAM.replace("guaranteed: 8", "guaranteed: 16"))
    git(tmp_path, "commit", "-qam", "more for team a")
    os.remove(tmp_path / "kueue" / "controller_manager_config.yaml")
    done = run_cli("diff", "HEAD~1", "HEAD", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"guaranteed"' in done.stdout


def test_a_path_that_leaves_the_repository_is_refused_where_it_is_written(tmp_path):
    repository = _repo(tmp_path / "repo")
    _configuration_file(tmp_path)                                  # exists, but outside the repository
    policies = _policy(repository, "../../kueue/controller_manager_config.yaml")
    done = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    text = (policies / "cluster.yaml").read_text()
    assert f"policies/cluster.yaml:{line_of(text, 'kueueConfig')}:" in done.stderr
    assert f"is outside the repository {repository.resolve()}" in done.stderr
    assert str((tmp_path / "kueue" / "controller_manager_config.yaml").resolve()) in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def test_a_symbolic_link_out_of_the_repository_is_refused(tmp_path):
    repository = _repo(tmp_path / "repo")
    _configuration_file(tmp_path)
    (repository / "kueue").mkdir()
    (repository / "kueue" / "controller_manager_config.yaml").symlink_to(
        tmp_path / "kueue" / "controller_manager_config.yaml")
    policies = _policy(repository, OUTSIDE)
    done = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert done.returncode == 1 and "is outside the repository" in done.stderr, done.stderr


def test_outside_a_repository_the_policy_folder_is_the_boundary(tmp_path):
    _configuration_file(tmp_path)
    policies = _policy(tmp_path, OUTSIDE)
    done = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "which is not in a git repository" in done.stderr and "KP520" in done.stderr


def test_a_missing_or_wrong_file_says_which(tmp_path):
    _repo(tmp_path)
    policies = _policy(tmp_path, OUTSIDE)
    done = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert done.returncode == 1 and "kueue/controller_manager_config.yaml" in done.stderr
    assert "does not exist" in done.stderr
    (tmp_path / "kueue").mkdir()
    (tmp_path / "kueue" / "controller_manager_config.yaml").write_text(yaml.safe_dump({"kind": "Deployment"}))
    done = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert done.returncode == 1 and "is not a Kueue Configuration" in done.stderr, done.stderr
