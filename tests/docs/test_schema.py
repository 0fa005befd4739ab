"""`kueue-policy schema`: the committed schemas/ are what the models generate, every field is
described, and every example policy file validates against the schema its modeline names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from compiler.cli import main

from kp_testing import REPO_ROOT, run_cli

SCHEMAS = REPO_ROOT / "schemas"
POLICY_FILES = sorted(p for p in (REPO_ROOT / "policies").rglob("*.y*ml"))
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


def _committed(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def _schema_cli(*args: str):
    """`kueue-policy schema ...` through click's runner (in-process: the command is pure)."""
    return CliRunner().invoke(main, ["schema", *args], catch_exceptions=False)


def test_committed_schemas_are_what_the_models_generate(tmp_path: Path) -> None:
    result = _schema_cli("--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    generated = sorted(p.name for p in tmp_path.iterdir())
    assert generated == sorted(p.name for p in SCHEMAS.glob("*.json"))
    for name in generated:
        fresh = (tmp_path / name).read_bytes()
        assert fresh == (SCHEMAS / name).read_bytes(), (
            f"schemas/{name} is stale: run `kueue-policy schema --out schemas` and commit the result")


def test_stdout_matches_the_files_and_kind_selects_one(tmp_path: Path) -> None:
    both = _schema_cli()
    assert both.exit_code == 0 and both.output == (SCHEMAS / "policy.schema.json").read_text()
    assert _schema_cli("--kind", "team").output == (SCHEMAS / "team.schema.json").read_text()
    written = _schema_cli("--kind", "cluster", "--out", str(tmp_path / "one"))
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["cluster.schema.json"], written.output
    bad = _schema_cli("--kind", "pool")
    assert bad.exit_code == 2 and "pool" in bad.output


def test_an_unwritable_out_folder_is_an_environment_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_cli("schema", "--out", str(blocker / "schemas"))
    assert result.returncode == 3 and "cannot write the schema" in result.stderr
    assert "Traceback" not in result.stderr


def _properties(schema: dict):
    """(where, name, property schema) for every property of every object in a schema."""
    objects = [("", schema)] + [(name, definition) for name, definition in schema.get("$defs", {}).items()]
    for where, node in objects:
        for name, prop in node.get("properties", {}).items():
            yield where, name, prop


@pytest.mark.parametrize("name", ["cluster.schema.json", "team.schema.json"])
def test_every_field_has_a_description(name: str) -> None:
    undescribed = [f"{where}.{field}" for where, field, prop in _properties(_committed(name))
                   if not prop.get("description", "").strip()]
    assert undescribed == []


def test_a_spec_field_documents_its_default_and_what_it_compiles_to() -> None:
    team = _committed("team.schema.json")["$defs"]["GpuBudget"]["properties"]
    assert "borrowingLimit" in team["burst"]["description"] and team["guaranteed"]["default"] == 0


def _modeline_schema(path: Path) -> Path:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = MODELINE.match(first)
    assert match, f"{path.relative_to(REPO_ROOT)} has no yaml-language-server modeline on its first line"
    return (path.parent / match.group(1)).resolve()


@pytest.mark.parametrize("path", POLICY_FILES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_example_policy_validates_against_the_schema_its_modeline_names(path: Path) -> None:
    schema_path = _modeline_schema(path)
    assert schema_path.parent == SCHEMAS and schema_path.is_file()
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    assert documents
    for document in documents:
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
        assert errors == []


def test_the_schema_refuses_what_validate_refuses(tmp_path: Path) -> None:
    """The editor's verdict and the compiler's agree on typical mistakes."""
    validator = jsonschema.Draft202012Validator(_committed("policy.schema.json"))
    team = yaml.safe_load((REPO_ROOT / "policies" / "teams" / "beta.yaml").read_text())
    assert validator.is_valid(team)
    mistakes = {
        "unknown-field": lambda d: d["spec"].update(gpu=4),
        "count-as-string": lambda d: d["spec"]["gpus"].update(guaranteed="16"),
        "bad-enum": lambda d: d["spec"].update(capacity="spot-please"),
        "bad-name": lambda d: d["metadata"].update(name="Beta_Team"),
        "bad-quantity": lambda d: d["spec"]["workloads"][1].update(cpu="eight"),
    }
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "cluster.yaml").write_text((REPO_ROOT / "policies" / "cluster.yaml").read_text())
    for what, mutate in mistakes.items():
        document = json.loads(json.dumps(team))
        mutate(document)
        assert not validator.is_valid(document), what
        (policies / f"{what}.yaml").write_text(yaml.safe_dump(document))
    # One run: every file's validation errors are reported together.
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    for what in mistakes:
        assert re.search(rf"^\S*{what}\.yaml:\d+:\d+: error\[KP2\d\d\]", result.stderr, re.MULTILINE), (what, result.stderr)


def test_the_modeline_changes_nothing_in_the_output(tmp_path: Path) -> None:
    """Comments are not policy: the example without its modelines compiles to the committed out/
    byte for byte (which the output tests also compare with a compile of the files as they are)."""
    plain = tmp_path / "policies"
    for path in POLICY_FILES:
        target = plain / path.relative_to(REPO_ROOT / "policies")
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        assert MODELINE.match(lines[0].rstrip("\n"))
        target.write_text("".join(lines[1:]), encoding="utf-8")
    result = run_cli("compile", "policies", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    committed = REPO_ROOT / "out"
    ours = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert ours == theirs and ours
    differing = [str(rel) for rel in ours if (committed / rel).read_bytes() != (tmp_path / "out" / rel).read_bytes()]
    assert differing == []
