"""`kueue-policy schema`: the committed schemas/ are what the models generate, every field is
described, and every example policy file validates against the schema its modeline names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from kp_testing import REPO_ROOT, run_cli

SCHEMAS = REPO_ROOT / "schemas"
POLICY_FILES = sorted(p for p in (REPO_ROOT / "policies").rglob("*.y*ml"))
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


def _committed(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def test_committed_schemas_are_what_the_models_generate(tmp_path: Path) -> None:
    result = run_cli("schema", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    generated = sorted(p.name for p in tmp_path.iterdir())
    assert generated == sorted(p.name for p in SCHEMAS.glob("*.json"))
    for name in generated:
        fresh = (tmp_path / name).read_bytes()
        assert fresh == (SCHEMAS / name).read_bytes(), (
            f"schemas/{name} is stale: run `kueue-policy schema --out schemas` and commit the result")


def test_stdout_matches_the_files_and_kind_selects_one(tmp_path: Path) -> None:
    both = run_cli("schema")
    assert both.returncode == 0 and both.stdout == (SCHEMAS / "policy.schema.json").read_text()
    team = run_cli("schema", "--kind", "team")
    assert team.stdout == (SCHEMAS / "team.schema.json").read_text()
    written = run_cli("schema", "--kind", "cluster", "--out", str(tmp_path / "one"))
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["cluster.schema.json"], written.stderr
    bad = run_cli("schema", "--kind", "pool")
    assert bad.returncode == 2 and "pool" in bad.stderr


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
    mistakes = {
        "unknown field": lambda d: d["spec"].update(gpu=4),
        "count as a string": lambda d: d["spec"]["gpus"].update(guaranteed="16"),
        "bad enum": lambda d: d["spec"].update(capacity="spot-please"),
        "bad name": lambda d: d["metadata"].update(name="Beta_Team"),
        "bad quantity": lambda d: d["spec"]["workloads"][1].update(cpu="eight"),
    }
    for what, mutate in mistakes.items():
        document = json.loads(json.dumps(team))
        mutate(document)
        assert not validator.is_valid(document), what
        (tmp_path / "policies").mkdir(exist_ok=True)
        cluster = (REPO_ROOT / "policies" / "cluster.yaml").read_text()
        (tmp_path / "policies" / "cluster.yaml").write_text(cluster)
        (tmp_path / "policies" / "beta.yaml").write_text(yaml.safe_dump(document))
        result = run_cli("validate", str(tmp_path / "policies"))
        assert result.returncode == 1, (what, result.stderr)
    assert validator.is_valid(team)


def test_the_modeline_changes_nothing_in_the_output(tmp_path: Path) -> None:
    """Comments are not policy: the same policy without its modelines compiles to the same bytes."""
    plain = tmp_path / "plain" / "policies"
    for path in POLICY_FILES:
        target = plain / path.relative_to(REPO_ROOT / "policies")
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        assert MODELINE.match(lines[0].rstrip("\n"))
        target.write_text("".join(lines[1:]), encoding="utf-8")
    with_modeline = run_cli("compile", "policies", "--out", str(tmp_path / "a"), cwd=REPO_ROOT)
    without = run_cli("compile", "policies", "--out", str(tmp_path / "b"), cwd=tmp_path / "plain")
    assert with_modeline.returncode == without.returncode == 0, with_modeline.stderr + without.stderr
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b and files_a
    differing = [str(rel) for rel in files_a
                 if (tmp_path / "a" / rel).read_bytes() != (tmp_path / "b" / rel).read_bytes()]
    assert differing == []
