"""The GitHub workflows and the pre-commit hook parse, trigger as promised, and call real commands
with real options (each `kueue-policy ...` line is parsed by the CLI's own click commands)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
import yaml

from compiler.cli import main

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"
HOOKS = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"


def _load(name: str) -> dict:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as true; GitHub reads it as "on".
    if True in document:
        document["on"] = document.pop(True)
    return document


def _kueue_policy_invocations(script: str) -> list[list[str]]:
    script = script.replace("\\\n", " ")
    script = re.sub(r"\$\{\{[^}]*\}\}", "1", script)                 # GitHub expressions
    script = re.sub(r"\$\{\w+:\+([^}]*)\}", r"\1", script)          # ${VAR:+words}
    script = re.sub(r'"?\$\w*NUMBER"?', "1", script)                 # $PR_NUMBER: a number
    script = re.sub(r'"?\$\w+"?', "x", script)                        # $VAR
    invocations = []
    for line in script.splitlines():
        if "kueue-policy " not in line:
            continue
        words = shlex.split(line)
        words = words[words.index("kueue-policy") + 1:]
        for stop in (">", ">>", "|", "&&", "||"):
            if stop in words:
                words = words[: words.index(stop)]
        invocations.append(words)
    return invocations


def _all_runs(workflow: dict) -> list[str]:
    return [step["run"] for job in workflow["jobs"].values() for step in job.get("steps", []) if "run" in step]


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_every_kueue_policy_call_parses_with_the_real_cli(name: str) -> None:
    for script in _all_runs(_load(name)):
        for words in _kueue_policy_invocations(script):
            command = main.get_command(click.Context(main), words[0])
            assert command is not None, f"{name}: no command `kueue-policy {words[0]}`"
            try:
                command.make_context(f"kueue-policy {words[0]}", words[1:])
            except click.UsageError as error:
                pytest.fail(f"{name}: `kueue-policy {' '.join(words)}`: {error}")


def test_reusable_workflow_is_callable_and_runs_pr_and_check() -> None:
    workflow = _load("kueue-policy.yml")
    call = workflow["on"]["workflow_call"]
    assert set(call["inputs"]) >= {"policies", "out", "cluster", "kueue-policy-repository", "kueue-policy-ref"}
    runs = "\n".join(_all_runs(workflow))
    commands = {words[0] for script in _all_runs(workflow) for words in _kueue_policy_invocations(script)}
    # Commands run through the composite action (action.yml) are its `command` input.
    commands |= {step["with"]["command"] for job in workflow["jobs"].values() for step in job["steps"]
                 if step.get("uses", "").startswith("./") and "command" in step.get("with", {})}
    assert commands == {"check", "diff", "pr"}
    assert "--comment-on" in runs
    jobs = workflow["jobs"]
    assert jobs["pull-request"]["permissions"] == {"contents": "write", "pull-requests": "write"}
    assert "default_branch" in jobs["pull-request"]["if"]
    assert jobs["check"]["if"] == "github.event_name == 'pull_request'"
    for job in jobs.values():
        checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
        assert checkout["with"]["fetch-depth"] == 0     # diff needs the base revision


def test_push_workflow_runs_on_policy_changes_of_the_default_branch() -> None:
    workflow = _load("policy-pr.yml")
    assert workflow["on"]["push"]["paths"] == ["policies/**"]
    job = workflow["jobs"]["kueue-policy"]
    assert job["uses"] == "./.github/workflows/kueue-policy.yml"
    assert job["if"] == "github.ref_name == github.event.repository.default_branch"


def test_pull_request_workflow_runs_on_policy_changes() -> None:
    workflow = _load("policy-check.yml")
    assert workflow["on"]["pull_request"]["paths"] == ["policies/**"]
    assert workflow["jobs"]["kueue-policy"]["permissions"]["pull-requests"] == "write"
    assert workflow["jobs"]["kueue-policy"]["uses"] == "./.github/workflows/kueue-policy.yml"


def test_pre_commit_hook_exposes_validate() -> None:
    hooks = yaml.safe_load(HOOKS.read_text())
    hook = next(h for h in hooks if h["id"] == "kueue-policy-validate")
    assert hook["language"] == "python"
    words = shlex.split(hook["entry"]) + hook.get("args", [])
    assert words[0] == "kueue-policy" and words[1] == "validate"
    main.get_command(click.Context(main), "validate").make_context("kueue-policy validate", words[2:])
    assert re.search(hook["files"], "policies/teams/alpha.yaml")
    assert not re.search(hook["files"], "out/gpu-east/kustomization.yaml")
