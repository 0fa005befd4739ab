"""Names that YAML would read as something else (`no`, `on`, `null`, `0123`, `1e3`, `0x1f`...)
are valid Kubernetes names. Every template writes them as strings, the compiler reads its own
output back as strings, and the files it writes read back as the same strings in YAML 1.1
(PyYAML, as older tools do), YAML 1.2, and kubectl/Argo CD's reader alike."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml as pyyaml

from compiler.core import yamlio
from compiler.core.templating import TEMPLATES_DIR, render_object, render_text
from kp_testing import REPO_ROOT, run_cli

TRICKY = ["no", "yes", "on", "off", "null", "true", "0123", "1e3", "0x1f", "~", "y", "0o17", "1_000", "2024-01-01"]
YAML_TEMPLATES = sorted(p.relative_to(TEMPLATES_DIR).as_posix() for p in TEMPLATES_DIR.rglob("*.yaml.j2")
                        if not p.name.startswith("_"))


def _context(name: str) -> dict:
    """Every string a template receives is `name`; numbers stay numbers."""
    groups = [{"covered": [name], "flavors": [{"name": name, "resources": [
        {"name": name, "nominal": name, "borrowing_limit": name, "lending_limit": name}]}]}]
    return {"name": name, "namespace": name, "labels": {name: name}, "annotations": {name: name},
            "expression": name, "extended_resource_name": name, "request": name, "class_name": name, "count": 2,
            "api_version": name, "cohort": name, "cohort_field": "cohortName", "namespaces": [name],
            "queueing": name, "fair_weight": name, "resource_groups": groups, "parent": name,
            "preemption": {"withinClusterQueue": name, "reclaimWithinCohort": name,
                           "borrowWithinCohort": {"policy": name, "maxPriorityThreshold": 100}},
            "cluster_queue": name, "node_labels": {name: name}, "taints": [{"key": name, "value": name, "effect": name}],
            "value": 100, "description": name, "checksum_annotation": name, "checksum": name, "key": name,
            "configuration_text": name, "config_text": name,
            # admission/: the team priority policy and its binding
            "resource_rules": [{"apiGroups": [name], "apiVersions": [name], "resources": [name],
                                "operations": [name], "scope": name}],
            "pods": True, "no_label_condition": name, "pod_condition": name, "apply_expression": name,
            "policy_name": name,
            # kueue/: a flavor's Topology and the Topology's levels
            "topology_name": name, "levels": [name, name + "2"]}


def _leaves(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield path + (key,), key
            yield from _leaves(value, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _leaves(value, path + (index,))
    else:
        yield path, data


NUMBERS = {"count", "value", "maxPriorityThreshold"}


@pytest.mark.parametrize("template", YAML_TEMPLATES)
@pytest.mark.parametrize("name", TRICKY)
def test_every_template_writes_every_name_as_that_string(template, name):
    rendered = render_object(template, **_context(name))
    strings = [value for path, value in _leaves(rendered) if not (path and path[-1] in NUMBERS)]
    assert all(isinstance(value, str) for value in strings), (template, rendered)
    assert rendered["metadata"]["name"] == name
    # The text itself means the same to a YAML 1.1 reader: nothing depends on our reader.
    assert pyyaml.safe_load(render_text(template, **_context(name))) == rendered


def test_every_value_in_a_yaml_template_goes_through_the_quoting_filter():
    for template in TEMPLATES_DIR.rglob("*.yaml.j2"):
        for expression in re.findall(r"\{\{(.*?)\}\}", template.read_text()):
            assert re.search(r"\|\s*tojson\s*$", expression), f"{template.name}: {{{{{expression}}}}} is not quoted"


RENAMES = [  # (file, old, new): every kind of name the policy lets a team or a platform engineer choose
    ("teams/beta.yaml", "name: beta", 'name: "no"'),
    ("teams/beta.yaml", "namespaces: [beta]",
     'namespaces: ["on", "off", "0123", "1e3", "0x1f", "null", "true", "y", "yes", "0o17"]'),
    ("teams/beta.yaml", "cohort: vision", 'cohort: "off"'),
    ("cluster.yaml", "{name: vision, parent: research}", '{name: "off", parent: research}'),
    ("cluster.yaml", "- name: h100-spot", '- name: "yes"'),
    ("cluster.yaml", "{name: standard, value: 100, default: true}", '{name: "null", value: 100, default: true}'),
    ("teams/alpha.yaml", "priority: standard", 'priority: "null"'),
    ("teams/gamma.yaml", "name: gamma", 'name: "true"'),
    ("teams/gamma.yaml", "namespaces: [gamma-serving, gamma-batch]", 'namespaces: ["0123-serving", "1e5"]'),
    # Free text with characters YAML cannot carry raw in a quoted scalar (DEL, NEL, line separator).
    ("cluster.yaml", 'description: "Production serving', 'description: "no\\x7f \\x85 \\u2028 Production serving'),
]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tricky")
    shutil.copytree(REPO_ROOT / "policies", root / "policies")
    for file, old, new in RENAMES:
        path = root / "policies" / file
        assert old in path.read_text(), (file, old)
        path.write_text(path.read_text().replace(old, new))
    result = run_cli("compile", str(root / "policies"), "--out", str(root / "out"))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return root / "out"


def _objects(out: Path) -> dict[tuple[str, str, str], dict]:
    found = {}
    for path in sorted(out.rglob("*.yaml")):
        text = path.read_text()
        strict_1_1 = list(pyyaml.safe_load_all(text))
        assert strict_1_1 == yamlio.load_all(text), f"{path}: YAML 1.1 and 1.2 readers disagree"
        for obj in strict_1_1:
            if "kind" not in obj:  # Helm values files: read the same by both readers (above)
                continue
            meta = obj.get("metadata", {})
            found[(obj["kind"], meta.get("namespace", ""), meta.get("name", ""))] = obj
            for key, value in (obj.get("data") or {}).items():  # YAML files inside ConfigMaps too
                if key.endswith(".yaml"):
                    assert pyyaml.safe_load(value) == yamlio.load(value), (path, key)
    return found


def test_a_compile_with_such_names_round_trips_them_exactly(compiled):
    objects = _objects(compiled)
    for namespace in ["on", "off", "0123", "1e3", "0x1f", "null", "true", "y", "yes", "0o17", "0123-serving", "1e5"]:
        local_queues = [o for (kind, ns, _), o in objects.items() if kind == "LocalQueue" and ns == namespace]
        assert local_queues and all(o["metadata"]["namespace"] == namespace for o in local_queues), namespace
    no = objects[("ClusterQueue", "", "no")]
    assert no["spec"]["cohortName"] == "off"
    assert no["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == sorted(
        ["on", "off", "0123", "1e3", "0x1f", "null", "true", "y", "yes", "0o17"])
    assert objects[("ClusterQueue", "", "true")]["metadata"]["name"] == "true"
    assert objects[("Cohort", "", "off")]["spec"]["parentName"] == "research"
    assert ("ResourceFlavor", "", "yes") in objects
    assert objects[("WorkloadPriorityClass", "", "null")]["value"] == 100
    assert objects[("WorkloadPriorityClass", "", "critical")]["description"].startswith("no\x7f \x85 \u2028 Production")
    flavors = {f["name"] for g in no["spec"]["resourceGroups"] for f in g["flavors"]}
    assert "yes" in flavors
