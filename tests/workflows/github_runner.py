"""Just enough of a GitHub runner to run a composite action's `run:` steps on this machine.

Each `run:` step of action.yml runs as the runner runs it (`bash --noprofile --norc -eo pipefail`,
its `env:` with `${{ inputs.* }}` and `${{ github.action_path }}` resolved, its
`working-directory`, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files); `uses:` steps are the
runner's business (setup-python: the caller puts a Python first on PATH; cache: nothing to do).
Only the expression forms action.yml uses are understood; anything else fails the test, so the
simulation cannot silently drift from the file.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
COMPARISON = re.compile(r"^inputs\.([\w-]+)\s*(==|!=)\s*'([^']*)'$")


@dataclass
class StepResult:
    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str] = field(default_factory=dict)


def load_action(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def action_inputs(action: dict, given: dict[str, str]) -> dict[str, str]:
    unknown = set(given) - set(action["inputs"])
    assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
    return {name: str(given.get(name, spec.get("default", ""))) for name, spec in action["inputs"].items()}


def _value(expression: str, inputs: dict[str, str], context: dict[str, str]) -> str:
    if expression.startswith("inputs."):
        return inputs[expression[len("inputs."):]]
    if expression in context:
        return context[expression]
    raise AssertionError(f"expression the simulated runner does not know: {expression}")


def substitute(text: str, inputs: dict[str, str], context: dict[str, str]) -> str:
    return EXPRESSION.sub(lambda m: _value(m.group(1), inputs, context), str(text))


def condition_holds(condition: str | None, inputs: dict[str, str]) -> bool:
    if condition is None:
        return True
    result = True
    for clause in condition.split("&&"):
        match = COMPARISON.match(clause.strip())
        assert match, f"`if:` form the simulated runner does not know: {clause.strip()}"
        name, operator, literal = match.groups()
        result = result and ((inputs[name] == literal) == (operator == "=="))
    return result


def run_composite(action_path: Path, given: dict[str, str], cwd: Path, path_prefix: list[Path],
                  extra_env: dict[str, str] | None = None, timeout: int = 600) -> list[StepResult]:
    """Run the `run:` steps of `action_path`/action.yml with these inputs, in `cwd` (the workspace)."""
    action = load_action(action_path / "action.yml")
    assert action["runs"]["using"] == "composite"
    inputs = action_inputs(action, given)
    runner_dir = cwd.parent / f".runner-{cwd.name}"
    runner_dir.mkdir(exist_ok=True)
    summary = runner_dir / "step-summary.md"
    summary.touch()
    context = {"github.action_path": str(action_path), "runner.os": "Linux"}
    results: list[StepResult] = []
    for index, step in enumerate(action["runs"]["steps"]):
        if not condition_holds(step.get("if"), inputs) or "run" not in step:
            continue
        assert step.get("shell") == "bash", "every run: step of a composite action must name its shell"
        assert "${{" not in step["run"], "no expression may be spliced into a run: script"
        output_file = runner_dir / f"output-{index}"
        output_file.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "KP_", "VIRTUAL_ENV"))}
        env.update(extra_env or {})
        env.update({"PATH": os.pathsep.join([*map(str, path_prefix), env.get("PATH", "")]),
                    "GITHUB_OUTPUT": str(output_file), "GITHUB_STEP_SUMMARY": str(summary),
                    "GITHUB_WORKSPACE": str(cwd), "RUNNER_OS": "Linux", "CI": "true"})
        env.update({k: substitute(v, inputs, context) for k, v in (step.get("env") or {}).items()})
        workdir = cwd / substitute(step.get("working-directory", "."), inputs, context)
        script = runner_dir / f"step-{index}.sh"
        script.write_text(step["run"])
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workdir,
                              env=env, capture_output=True, text=True, timeout=timeout)
        outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
        results.append(StepResult(step.get("name", f"step {index}"), done.returncode, done.stdout, done.stderr,
                                  outputs))
        if done.returncode != 0:
            break
    return results
