"""Real git repositories for the delivery tests: a bare `origin` and a working clone whose
policies/ is the project's example policy, and the CLI run inside one. Nothing is mocked; the
forge is the stand-in server (kp_testing.forge_server)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from compiler.cli import main
from kp_testing import REPO_ROOT, run_cli

EXAMPLE_POLICY = REPO_ROOT / "policies"
PERSON = ["-c", "user.name=Dana Developer", "-c", "user.email=dana@example.com"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *PERSON, *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@dataclass
class PolicyRepo:
    work: Path          # the user's (or CI's) clone, on main
    remote: Path        # the bare origin

    def commit_all(self, message: str) -> str:
        git(self.work, "add", "-A")
        git(self.work, "commit", "-qm", message)
        return git(self.work, "rev-parse", "HEAD")

    def push_main(self) -> None:
        git(self.work, "push", "-q", "origin", "main")

    def remote_tip(self, branch: str) -> str | None:
        out = subprocess.run(["git", "rev-parse", "--verify", "-q", f"refs/heads/{branch}"], cwd=self.remote,
                             capture_output=True, text=True)
        return out.stdout.strip() or None

    def remote_show(self, revision: str, path: str) -> str:
        return git(self.remote, "show", f"{revision}:{path}")

    def edit_team(self, team: str, old: str, new: str) -> None:
        path = self.work / "policies" / "teams" / f"{team}.yaml"
        text = path.read_text()
        assert old in text, f"{old!r} not in {path}"
        path.write_text(text.replace(old, new, 1))

    def local_state(self) -> tuple[str, str, str, str]:
        """Branch, HEAD, porcelain status, and the list of local branches: must not change."""
        return (git(self.work, "rev-parse", "--abbrev-ref", "HEAD"), git(self.work, "rev-parse", "HEAD"),
                git(self.work, "status", "--porcelain"), git(self.work, "branch", "--list"))


def invoke(cwd: Path, *args: str, env: dict[str, str] | None = None, subprocess_run: bool = False):
    """Run the CLI in `cwd`: in-process through click's runner (fast) or as the real console
    script in a subprocess. Returns (exit code, stdout, stderr)."""
    if subprocess_run:
        done = run_cli(*args, cwd=cwd, env=env)
        return done.returncode, done.stdout, done.stderr
    previous = Path.cwd()
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.chdir(cwd)
    os.environ.update(env or {})
    try:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(previous)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return result.exit_code, result.stdout, result.stderr
