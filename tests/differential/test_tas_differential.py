"""Topology placement agreement: compiler.evaluator.topology against Kueue's own TAS (the
oracle) on random TAS worlds, and the generator those worlds come from."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from kp_testing import REPO_ROOT

from .engines import OracleEngine
from .tas_harness import differences, oracle_placements, python_placements, run
from .tas_worlds import dump_tas_world, tas_world

ORACLE = Path(os.environ.get("KUEUE_ORACLE", REPO_ROOT / "oracle" / "bin" / "kueue-oracle"))
CI_SEED, CI_WORLDS = 26, 300


def _form(request) -> str:
    for name in ("required", "preferred", "unconstrained", "implied"):
        if getattr(request, name):
            return name + (f"+{len(request.slices)} slice layer(s)" if request.slices else "")
    return f"slices only+{len(request.slices)} slice layer(s)"


def test_generator_covers_every_request_form_and_node_state() -> None:
    forms, states, shapes = Counter(), Counter(), Counter()
    for index in range(CI_WORLDS):
        world = tas_world(CI_SEED, index)
        forms.update(_form(w.request) for w in world.workloads)
        forms.update("node selector" for w in world.workloads if w.request.node_selector)
        forms.update("tolerations" for w in world.workloads if w.request.tolerations)
        forms.update("running before" for _ in world.held)
        forms.update("node affinity" for w in world.workloads if w.request.affinity)
        forms.update("two pod sets" for w in world.workloads if w.aux)
        states.update("not ready" if not n.ready else "unschedulable" if n.unschedulable
                      else "tainted" if n.taints else "pool cpu" if n.labels["pool"] != "gpu" else "usable"
                      for n in world.nodes)
        shapes["hostname lowest" if world.flavor.levels[-1] == "kubernetes.io/hostname" else "rack lowest"] += 1
    assert {"required", "preferred", "unconstrained", "implied", "required+1 slice layer(s)",
            "preferred+1 slice layer(s)", "required+2 slice layer(s)", "preferred+2 slice layer(s)",
            "slices only+1 slice layer(s)", "slices only+2 slice layer(s)", "node selector",
            "tolerations", "running before", "node affinity", "two pod sets"} <= set(forms), forms
    assert min(states[s] for s in ("not ready", "unschedulable", "tainted", "pool cpu")) > 10, states
    assert min(shapes.values()) > 20, shapes


def test_same_seed_same_world_bytes() -> None:
    assert dump_tas_world(tas_world(CI_SEED, 7)) == dump_tas_world(tas_world(CI_SEED, 7))


def test_comparison_finds_a_planted_difference() -> None:
    world = tas_world(CI_SEED, 0)
    placed = python_placements(world)
    name = world.workloads[0].name
    other = dict(placed, **{name: None if placed[name] else {"main": {"levels": [], "domains": []}}})
    assert differences(placed, other) and not differences(placed, dict(placed))


def test_oracle_output_is_read_per_workload() -> None:
    result = {"workloads": [
        {"name": "default/a", "status": "admitted", "topologyAssignment": {"main": {"levels": ["h"], "domains": []}}},
        {"name": "default/b", "status": "pending"}]}
    assert oracle_placements(result) == {"a": {"main": {"levels": ["h"], "domains": []}}, "b": None}


@pytest.mark.skipif(not ORACLE.is_file(), reason="kueue-oracle not built (go not on PATH)")
def test_placement_agrees_with_kueue_on_random_tas_worlds() -> None:
    failing = run(CI_SEED, CI_WORLDS, OracleEngine(ORACLE))
    assert not failing, failing[:3]
