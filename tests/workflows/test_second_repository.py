"""A second repository (its own folder, its own git history, a copy of policies/) uses this one by
path: the pre-commit hook through `pre-commit try-repo`, and the composite action's steps run as
the runner would run them. Both give the same results as running kueue-policy here."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler import __version__
from kp_testing import REPO_ROOT, run_cli
from workflows.github_runner import run_composite

GIT = ["git", "-c", "user.name=Consumer", "-c", "user.email=consumer@example.invalid", "-c", "init.defaultBranch=main"]
BROKEN_FIELD = ("  capacity: spot-first", "  capasity: spot-first")   # in teams/beta.yaml


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture
def consumer(tmp_path: Path) -> Path:
    repo = tmp_path / "platform-policies"
    repo.mkdir()
    shutil.copytree(REPO_ROOT / "policies", repo / "policies")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Our GPU policy")
    return repo


def _break(repo: Path) -> None:
    team = repo / "policies" / "teams" / "beta.yaml"
    team.write_text(team.read_text().replace(*BROKEN_FIELD))


def _diagnostics(text: str) -> list[str]:
    return [line for line in text.splitlines() if "error[" in line]


def test_pre_commit_hook_by_path(consumer: Path, tmp_path: Path) -> None:
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    if pre_commit is None:
        pytest.skip("pre-commit is not installed (it is in the test extras: pip install -e '.[test]')")
    # The hook's environment is built by pre-commit with pip; the test environment's packages are
    # put on PYTHONPATH so pip finds the dependencies already there instead of downloading them.
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))}
    env.pop("VIRTUAL_ENV", None)

    def try_repo() -> subprocess.CompletedProcess:
        return subprocess.run([pre_commit, "try-repo", str(REPO_ROOT), "kueue-policy-validate", "--all-files"],
                              cwd=consumer, env=env, capture_output=True, text=True, timeout=900)

    passed = try_repo()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "kueue-policy validate" in passed.stdout and "Passed" in passed.stdout

    _break(consumer)
    failed = try_repo()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    here = run_cli("validate", "policies", cwd=consumer)   # the same files, checked by this repository's CLI
    assert here.returncode == 1
    assert _diagnostics(here.stderr) and set(_diagnostics(here.stderr)) <= set(_diagnostics(failed.stdout))
    assert "did you mean 'capacity'?" in failed.stdout


@pytest.fixture(scope="module")
def action_python(runner_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The action's install steps, run once (in a scratch workspace) into the runner's Python."""
    workspace = tmp_path_factory.mktemp("workspace") / "repo"
    workspace.mkdir()
    steps = run_composite(REPO_ROOT, {}, workspace, [runner_python])
    assert [s.returncode for s in steps] == [0] * len(steps), steps[-1].stderr
    install = next(s for s in steps if "version" in s.outputs)
    assert install.outputs["version"] == __version__
    assert (runner_python / "kueue-policy").is_file()   # installed into the set-up Python, from the action's folder
    return runner_python


@pytest.fixture
def installed(consumer: Path, action_python: Path) -> Path:
    return consumer


def _action(repo: Path, runner_python: Path, command: str, args: str = "", **inputs: str):
    steps = run_composite(REPO_ROOT, {"command": command, "args": args, "install": "false", **inputs},
                          repo, [runner_python])
    return steps[-1]


def test_action_compiles_the_same_out_and_verdicts(installed: Path, runner_python: Path) -> None:
    repo = installed
    compiled = _action(repo, runner_python, "compile", "policies --out out")
    assert compiled.returncode == 0, compiled.stderr
    comparison = filecmp.dircmp(repo / "out", REPO_ROOT / "out")
    differing = _differences(comparison)
    assert differing == [], f"the second repository's out/ differs from this one's: {differing}"

    checked = _action(repo, runner_python, "check", "policies --format json", **{"step-summary": "true"})
    here = run_cli("check", "policies", "--format", "json", cwd=REPO_ROOT)
    assert checked.returncode == here.returncode == 0, checked.stderr
    assert checked.stdout == here.stdout
    summary = (repo.parent / f".runner-{repo.name}" / "step-summary.md").read_text()
    assert summary == here.stdout


def test_action_reports_a_bad_policy_like_this_repository(installed: Path, runner_python: Path) -> None:
    repo = installed
    _break(repo)
    failed = _action(repo, runner_python, "validate", "policies", **{"working-directory": "."})
    here = run_cli("validate", "policies", cwd=repo)
    assert failed.returncode == here.returncode == 1
    assert _diagnostics(failed.stderr) == _diagnostics(here.stderr) != []


def test_action_arguments_are_words_not_shell(installed: Path, runner_python: Path) -> None:
    """An argument with shell syntax in it reaches kueue-policy as one word and runs nothing."""
    repo = installed
    marker = repo / "pwned"
    result = _action(repo, runner_python, "validate", f"'policies; touch {marker}' $(touch {marker})")
    assert result.returncode == 2, result.stderr          # click: no such folder / too many arguments
    assert not marker.exists()


def _differences(comparison: filecmp.dircmp, prefix: str = "") -> list[str]:
    found = [prefix + name for name in comparison.left_only + comparison.right_only + comparison.diff_files]
    found += [prefix + name for name in comparison.funny_files]
    for name, sub in sorted(comparison.subdirs.items()):
        found += _differences(sub, f"{prefix}{name}/")
    return found
