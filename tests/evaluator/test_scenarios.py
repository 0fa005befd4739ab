"""Scenario tests: each YAML file under scenarios/ is a small cluster with the decision Kueue
would take. The runner loads the manifests through the public API, evaluates, and compares
the fields the scenario names (status, clusterQueue, assignment, count, borrowing, reason,
reasonCode, preemptedBy) and, if given, ClusterQueue usage."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from compiler.evaluator import evaluate, load_manifests

FIXTURES = Path(__file__).parent / "fixtures"
SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.yaml"))
FIELDS = {"status": "status", "clusterQueue": "cluster_queue", "assignment": "assignment",
          "count": "count", "borrowing": "borrowing", "reason": "reason", "reasonCode": "reason_code",
          "preemptedBy": "preempted_by", "topologyAssignment": "topology_assignment"}


def load_scenario(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    scenario = load_scenario(path)
    objects = []
    for fixture in scenario.get("include", []):
        objects.extend(YAML(typ="safe").load((FIXTURES / fixture).read_text()))
    objects.extend(scenario["objects"])
    state = load_manifests(objects, [f"{path.name}:{i}" for i in range(len(objects))])
    result = evaluate(state, scenario.get("cycles"))
    failures = []
    for name, expected in scenario.get("expect", {}).items():
        outcome = result.workload(name)
        for field, wanted in expected.items():
            got = getattr(outcome, FIELDS[field])
            if got != wanted:
                failures.append(f"{name}.{field}: expected {wanted!r}, got {got!r}")
    cq_usage = {cq["name"]: cq["usage"] for cq in result.to_json()["clusterQueues"]}
    for cq, wanted in (scenario.get("usage") or {}).items():
        if cq_usage.get(cq) != wanted:
            failures.append(f"usage of {cq}: expected {wanted!r}, got {cq_usage.get(cq)!r}")
    assert not failures, scenario.get("description", "") + "\n" + "\n".join(failures)


def test_every_scenario_has_expectations() -> None:
    assert len(SCENARIOS) >= 20
    for path in SCENARIOS:
        scenario = load_scenario(path)
        assert scenario.get("description") and scenario.get("expect"), path.name
        # Another answer Kueue may give is accepted only with the reason Kueue varies there.
        assert bool(scenario.get("kueue_also")) == bool(scenario.get("kueue_also_why")), path.name
