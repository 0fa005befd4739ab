"""An environment failure carries its diagnostic code as a field; the CLI formats it the way it
formats every diagnostic (`error[KPnnn]: message`), once."""

from __future__ import annotations

from compiler.core import codes
from compiler.core.errors import EnvironmentFailure
from kp_testing import run_cli


def test_code_is_a_field_and_rendered_once():
    failure = EnvironmentFailure("git could not push: rejected", code=codes.GIT_FAILED)
    assert (failure.code, failure.message) == ("KP809", "git could not push: rejected")
    assert str(failure) == failure.render() == "error[KP809]: git could not push: rejected"
    failure.add_context("origin/kueue-policy/all was deleted again")
    assert failure.message.endswith("\norigin/kueue-policy/all was deleted again")
    assert str(failure).count("error[KP809]") == 1
    assert EnvironmentFailure("cannot write out/").render() == "cannot write out/"


def test_cli_prints_the_code_of_an_environment_failure(tmp_path):
    done = run_cli("diff", cwd=tmp_path)   # not a git repository
    assert done.returncode == 3
    assert done.stderr.startswith(f"kueue-policy: error[{codes.NOT_A_GIT_REPO}]: ")
    assert done.stderr.count("error[") == 1 and "Traceback" not in done.stderr
