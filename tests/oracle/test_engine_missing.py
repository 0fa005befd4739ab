"""`evaluate --engine kueue` without the binary: a clear environment error (exit 3) that names
the build command. Needs no Go."""

from __future__ import annotations

from kp_testing import run_cli


def test_missing_oracle_is_an_environment_error_naming_make_oracle(tmp_path):
    world = tmp_path / "w.yaml"
    world.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    done = run_cli("evaluate", "--engine", "kueue", str(world),
                   env={"KUEUE_ORACLE": str(tmp_path / "no-such-kueue-oracle")})
    assert done.returncode == 3
    assert "make oracle" in done.stderr
    assert "no-such-kueue-oracle" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
