"""The engine's placement answers (TasState.place): kept while the nodes do not change, asked
again once an admission or an eviction moves them, never kept while a preemption search has
pods taken off the nodes; and the words of a refusal that `simulate` recognises as "held by
topology". Every answer is compared with a fresh search (`_place`) on the same nodes."""

from __future__ import annotations

import random

from compiler.evaluator.models import ClusterState, ResourceFlavor
from compiler.evaluator.tas import PlacementFailure, TasState
from compiler.evaluator.topology import Node, TopologyRequest
from compiler.evaluator.topology.refusals import names_placement_refusal

BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


def _state(racks: int = 3, hosts: int = 2) -> TasState:
    nodes = [Node(f"r{r}-h{h}", {BLOCK: "b0", RACK: f"r{r}", HOST: f"r{r}-h{h}"}, {GPU: 8, "pods": 110})
             for r in range(racks) for h in range(hosts)]
    state = ClusterState(flavors={"gpu": ResourceFlavor("gpu", topology_name="racks")},
                         topologies={"racks": (BLOCK, RACK, HOST)}, nodes=nodes)
    return TasState(state)


def _request(count: int, gpus: int, required: str | None = RACK) -> list[tuple[str, str, TopologyRequest]]:
    return [("main", "gpu", TopologyRequest(count, {GPU: gpus}, required=required))]


def _same(one, other) -> bool:
    if isinstance(one, PlacementFailure) or isinstance(other, PlacementFailure):
        return (isinstance(one, PlacementFailure) and isinstance(other, PlacementFailure)
                and (one.pod_set, one.flavor, one.reason) == (other.pod_set, other.flavor, other.reason))
    return {name: [(d.values, d.count) for d in p.assignment.domains] for name, p in one.items()} == \
        {name: [(d.values, d.count) for d in p.assignment.domains] for name, p in other.items()}


def _counting(tas: TasState) -> list[int]:
    """Count the searches `place` runs (a list, so the caller sees it grow)."""
    searches = [0]
    search = tas._place

    def counted(requests, simulate_empty):
        searches[0] += 1
        return search(requests, simulate_empty)
    tas._place = counted
    return searches


def test_an_answer_is_kept_until_an_admission_moves_the_nodes() -> None:
    tas = _state()
    searches = _counting(tas)
    first = tas.place(_request(2, 8))
    again = tas.place(_request(2, 8))
    assert searches[0] == 1 and _same(first, again)
    tas.add(first)                       # admitted: its pods fill rack r0
    after = tas.place(_request(2, 8))
    assert searches[0] == 2
    assert [d.values for d in after["main"].assignment.domains] != [d.values for d in first["main"].assignment.domains]
    tas.add(first, -1)                   # evicted: r0 is free again
    assert _same(tas.place(_request(2, 8)), first) and searches[0] == 3


def test_nothing_is_kept_while_a_preemption_search_has_pods_off_the_nodes() -> None:
    tas = _state(racks=1)
    placed = tas.place(_request(2, 8))
    tas.add(placed)                      # the only rack is full
    assert isinstance(tas.place(_request(2, 8)), PlacementFailure)
    tas.shift(placed, -1)                # a search takes the victim's pods off
    assert not isinstance(tas.place(_request(2, 8)), PlacementFailure)
    tas.shift(placed, 1)
    assert isinstance(tas.place(_request(2, 8)), PlacementFailure)
    assert not isinstance(tas.place_without(_request(2, 8), [placed]), PlacementFailure)
    assert isinstance(tas.place(_request(2, 8)), PlacementFailure)


def test_kept_answers_equal_fresh_searches_through_random_admissions_and_evictions() -> None:
    rng = random.Random(26)
    tas = _state(racks=4, hosts=3)
    searches = _counting(tas)
    admitted: list[dict] = []
    asked = 0
    for _ in range(400):
        requests = _request(rng.choice([1, 2, 3, 4]), rng.choice([2, 4, 8]), rng.choice([RACK, BLOCK, None]))
        simulate_empty = rng.random() < 0.2
        for _ in range(2):               # (the second ask is answered from what was kept)
            answer = tas.place(requests, simulate_empty)
            asked += 1
            assert _same(answer, TasState._place(tas, requests, simulate_empty))
        move = rng.random()
        if move < 0.3 and not isinstance(answer, PlacementFailure) and not simulate_empty:
            tas.add(answer)
            admitted.append(answer)
        elif move < 0.5 and admitted:
            tas.add(admitted.pop(rng.randrange(len(admitted))), -1)
        elif move < 0.6 and admitted:
            victim = rng.choice(admitted)
            tas.shift(victim, -1)
            assert _same(tas.place(requests), TasState._place(tas, requests, False))
            tas.shift(victim, 1)
    assert searches[0] <= asked // 2 + 200   # most asks were answered from what was kept


def test_simulate_recognises_both_kinds_of_refusal() -> None:
    tas = _state(racks=2, hosts=2)
    some = tas.place(_request(3, 8))     # a rack holds 2 of the 3 pods
    none = tas.place(_request(1, 16))    # no host has 16 GPUs
    assert isinstance(some, PlacementFailure) and isinstance(none, PlacementFailure)
    assert "allows to fit only" in some.reason and "doesn't allow to fit any" in none.reason
    for refusal in (some, none):
        assert names_placement_refusal(f"couldn't assign flavors to pod set main: {refusal.reason}", "racks")
        assert not names_placement_refusal(refusal.reason, "other")
    assert not names_placement_refusal("insufficient unused quota for nvidia.com/gpu in flavor gpu", "racks")
