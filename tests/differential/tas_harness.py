"""Placement agreement: each TAS world through kueue-oracle (Kueue's own TAS admitting the
Workloads in creation order) and through compiler.evaluator.topology (the same Workloads placed
in the same order, each placement's usage taken from the tree before the next). They agree when
every Workload gets the same topologyAssignment from both, or is refused by both."""

from __future__ import annotations

import json
from collections.abc import Callable

from compiler.evaluator.topology import PlacementRefusal, build_domain_tree, find_topology_assignments

from .tas_worlds import TasWorld, dump_tas_world, tas_world

# workload -> {pod set: {"levels", "domains"}}, or None (not placed)
Placements = dict[str, dict[str, dict] | None]


def python_placements(world: TasWorld) -> Placements:
    tree = build_domain_tree(world.flavor, world.nodes)
    for held in world.held:
        tree.add_usage(held.assignment, held.per_pod)
    placed: Placements = {}
    for workload in world.workloads:
        result = find_topology_assignments(tree, workload.pod_sets)
        if isinstance(result, PlacementRefusal):
            placed[workload.name] = None
            continue
        for name, assignment in result.items():
            tree.add_usage(assignment, workload.pod_sets[name].per_pod)
        placed[workload.name] = {name: assignment.as_json() for name, assignment in result.items()}
    return placed


def oracle_placements(result: dict) -> Placements:
    """What Kueue placed in this evaluation (running Workloads held their place before it)."""
    placed: Placements = {}
    for workload in result["workloads"]:
        name = workload["name"].removeprefix("default/")
        if workload["status"] == "running":
            continue
        admitted = workload["status"] == "admitted"
        placed[name] = workload.get("topologyAssignment") if admitted else None
    return placed


def differences(python: Placements, kueue: Placements) -> list[str]:
    found = []
    for name in sorted(set(python) | set(kueue)):
        if python.get(name) != kueue.get(name):
            found.append(f"{name}: python {json.dumps(python.get(name))} kueue {json.dumps(kueue.get(name))}")
    return found


def compare_world(seed: int, index: int, oracle: Callable[[str], dict]) -> list[str]:
    world = tas_world(seed, index)
    return differences(python_placements(world), oracle_placements(oracle(dump_tas_world(world))))


def run(seed: int, worlds: int, oracle: Callable[[str], dict], start: int = 0) -> list[tuple[int, list[str]]]:
    """Every disagreeing world of seed's [start, start + worlds), with its differences."""
    failing = []
    for index in range(start, start + worlds):
        found = compare_world(seed, index, oracle)
        if found:
            failing.append((index, found))
    return failing


def tas_main(seed: int, start: int, worlds: int, oracle: Callable[[str], dict]) -> int:
    """`python -m differential --tas`: each disagreeing world with its differences, then
    `differential: K/N TAS worlds agree`; exit 0 only when all agree."""
    failing = run(seed, worlds, oracle, start)
    for index, found in failing:
        print(f"TAS world {seed}/{index}: {len(found)} difference(s), first: {found[0]}", flush=True)
    print(f"differential: {worlds - len(failing)}/{worlds} TAS worlds agree")
    return 0 if not failing else 1
