"""The documentation inside the repository: complete for the policy language, links that resolve,
facts that match what the compiler emits, no reference to files a clone does not have."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from compiler.dra import classes as dra
from compiler.mig import mig_manager
from compiler.language.cli import kind_schema
from kp_testing import REPO_ROOT

DOCS = REPO_ROOT / "docs"
REFERENCE = DOCS / "policy-reference.md"
MARKDOWN = sorted([REPO_ROOT / "README.md", REPO_ROOT / "CHANGELOG.md", *DOCS.rglob("*.md")])
# Objects whose every field gets its own row (| `field` | type | default | ...) in the reference.
TABLED = ("ClusterSpec", "TeamSpec", "Pool", "CohortSpec", "PrioritySpec", "Preemption", "FairSharing",
          "Repository", "GpuBudget", "DeclaredWorkload", "ResourcesPerGpu", "BorrowWithinCohort",
          "PoolTopology", "TopologyLevel", "WorkloadTopology", "TopologySlice")


def _definitions() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for kind in ("cluster", "team"):
        found.update(kind_schema(kind)["$defs"])
    return found


@pytest.mark.parametrize("model", TABLED)
def test_reference_has_a_row_for_every_field(model: str) -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    missing = []
    for field in _definitions()[model]["properties"]:
        row = re.compile(rf"^\| `([\w.]+\.)?{re.escape(field)}` \|", re.MULTILINE)
        if not row.search(text):
            missing.append(field)
    assert missing == [], f"{model}: fields without a row in docs/policy-reference.md"


def test_reference_mentions_the_remaining_fields() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    definitions = _definitions()
    for model in set(definitions) - set(TABLED):
        for field in definitions[model].get("properties", {}):
            assert f"`{field}`" in text or f"{field}:" in text, f"{model}.{field} is not documented"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.MULTILINE)}


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(target)
    assert broken == []


def test_readme_links_the_docs() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for page in ("docs/README.md", "docs/policy-reference.md", "docs/concepts.md", "docs/how-to/github.md"):
        assert f"]({page}" in readme


SHIPPED = [REPO_ROOT / "README.md", REPO_ROOT / "action.yml", REPO_ROOT / ".pre-commit-hooks.yaml",
           *DOCS.rglob("*.md"), *(REPO_ROOT / "compiler").rglob("*.py"), *(REPO_ROOT / "templates").rglob("*.j2"),
           *(REPO_ROOT / ".github").rglob("*.yml"), *(REPO_ROOT / "schemas").glob("*.json")]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_nothing_shipped_points_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for outside in ("../shared", "/work/shared", "POLICY.md", "DESIGN.md", "reference/kueue-", "reference/dra-",
                    "reference/mig-", "reference/ecosystem"):
        assert outside not in text, f"{path.relative_to(REPO_ROOT)} refers to {outside}, which a clone does not have"


def test_mig_how_to_names_what_the_compiler_emits() -> None:
    text = (DOCS / "how-to" / "gpu-operator-mig.md").read_text(encoding="utf-8")
    configmap = mig_manager.mig_manager_configmap({"version": "v1", "mig-configs": {}})
    assert f"`{configmap['metadata']['name']}`" in text and f"`{configmap['metadata']['namespace']}`" in text
    assert f"`{next(iter(configmap['data']))}`" in text
    for label in (mig_manager.MIG_CONFIG_LABEL, mig_manager.MIG_CONFIG_STATE_LABEL, mig_manager.DISABLED_CONFIG):
        assert f"`{label}`" in text
    # The jq snippet reads fields the report really has.
    report = json.loads((REPO_ROOT / "out" / "gpu-east" / "report.json").read_text())
    group = report["migPlan"][0]["nodeGroups"][0]
    assert {"config", "nodes"} <= set(group) and ".migPlan[]" in text and ".nodeGroups[]" in text
    assert f"{report['migPlan'][0]['pool']}\t{group['config']}\t{group['nodes']} node(s)" in text


def test_kueue_install_how_to_names_the_objects_it_patches() -> None:
    text = (DOCS / "how-to" / "kueue-install.md").read_text(encoding="utf-8")
    for name in (dra.KUEUE_CONFIGMAP, dra.KUEUE_DEPLOYMENT, dra.KUEUE_NAMESPACE, dra.KUEUE_CONFIG_KEY,
                 dra.CHECKSUM_ANNOTATION, "managerConfig.controllerManagerConfigYaml"):
        assert name in text, name
    emitted = sorted(p.name for p in (REPO_ROOT / "out" / "gpu-east" / "kueue-config").iterdir())
    for name in emitted:
        assert name in text, name


def test_github_how_to_lists_every_action_and_workflow_input() -> None:
    text = (DOCS / "how-to" / "github.md").read_text(encoding="utf-8")
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    for name in action["inputs"]:
        assert f"| `{name}` |" in text, name
    workflow = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "kueue-policy.yml").read_text())
    call = workflow[True]["workflow_call"]
    for name in [*call["inputs"], *call["secrets"]]:
        assert f"`{name}`" in text, name
    assert "Allow GitHub Actions to create and approve pull requests" in text
    assert "actions/create-github-app-token" in text


def test_license_matches_pyproject() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = project["license"]["text"] if isinstance(project["license"], dict) else project["license"]
    assert declared == "Apache-2.0"
    text = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text.splitlines()) > 150


def test_changelog_follows_keep_a_changelog() -> None:
    text = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert text.startswith("# Changelog\n") and "Keep a Changelog" in text
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.MULTILINE)
    assert releases[0] == ("Unreleased", "") and (version, releases[1][1]) == releases[1] and releases[1][1]
    sections = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
