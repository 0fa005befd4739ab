"""Pod-set groups (kueue.x-k8s.io/podset-group-name): a leader of one pod placed with its
workers in one search, as Kueue v0.19.2's findTopologyAssignment does with a leader. Each
expectation is Kueue's (the same worlds agree with kueue-oracle; grouped worlds are part of
`make differential-tas`)."""

from __future__ import annotations

from compiler.evaluator.topology import (
    Node,
    PlacementRefusal,
    TopologyAssignment,
    TopologyFlavor,
    TopologyRequest,
    build_domain_tree,
    find_topology_assignments,
)

RACK, HOST, GPU = "example.com/rack", "kubernetes.io/hostname", "nvidia.com/gpu"
FLAVOR = TopologyFlavor("racks", (RACK, HOST), {"pool": "gpu"})


def nodes(*shape: tuple[str, str, int]) -> list[Node]:
    return [Node(name, {RACK: rack, HOST: name, "pool": "gpu"}, {GPU: gpus, "pods": 110})
            for name, rack, gpus in shape]


def hosts(result: TopologyAssignment) -> dict[str, int]:
    return {d.values[0]: d.count for d in result.domains}


def lws(workers: int, worker_gpus: int, leader_gpus: int, group: str | None = "llm",
        leader_first: bool = True) -> dict[str, TopologyRequest]:
    leader = TopologyRequest(1, {GPU: leader_gpus}, required=RACK, group=group)
    worker = TopologyRequest(workers, {GPU: worker_gpus}, required=RACK, group=group)
    return {"leader": leader, "worker": worker} if leader_first else {"worker": worker, "leader": leader}


# r1: one 16-GPU host; r2: two 8-GPU hosts and a 4-GPU one.
SPLIT = nodes(("r1-h1", "r1", 16), ("r2-h1", "r2", 8), ("r2-h2", "r2", 8), ("r2-h3", "r2", 4))


def test_a_group_finds_the_rack_that_holds_leader_and_workers_together() -> None:
    result = find_topology_assignments(build_domain_tree(FLAVOR, SPLIT), lws(2, 8, 4))
    assert hosts(result["worker"]) == {"r2-h1": 1, "r2-h2": 1}
    assert hosts(result["leader"]) == {"r2-h3": 1}


def test_without_the_group_each_pod_set_is_placed_alone_and_they_land_apart() -> None:
    # (the positive control of the test above: the same pod sets, no podset-group-name)
    result = find_topology_assignments(build_domain_tree(FLAVOR, SPLIT), lws(2, 8, 4, group=None,
                                                                            leader_first=False))
    assert hosts(result["worker"]) == {"r1-h1": 2}
    assert hosts(result["leader"]) == {"r2-h3": 1}


def test_apart_each_fits_together_they_do_not() -> None:
    # r1: two 8-GPU hosts (the workers' rack alone); r2: an 8-GPU host and a 2-GPU one: the
    # leader (4 GPUs) takes half a host, so no rack holds it beside two 8-GPU workers.
    world = nodes(("r1-h1", "r1", 8), ("r1-h2", "r1", 8), ("r2-h1", "r2", 8), ("r2-h2", "r2", 2))
    alone = find_topology_assignments(build_domain_tree(FLAVOR, world), lws(2, 8, 4, group=None,
                                                                           leader_first=False))
    assert hosts(alone["worker"]) == {"r1-h1": 1, "r1-h2": 1} and hosts(alone["leader"]) == {"r2-h1": 1}
    together = find_topology_assignments(build_domain_tree(FLAVOR, world), lws(2, 8, 4))
    assert isinstance(together, PlacementRefusal)
    # (Kueue counts the fullest rack's pods without the leader in its message: 2 of 2)
    assert together.kueue_reason == ('topology "racks" allows to fit only 2 out of 2 pod(s). Total nodes: 4; '
                                     'excluded: resource "nvidia.com/gpu": 1')


def test_the_pod_set_with_fewer_pods_leads_whatever_the_order() -> None:
    # (findLeaderAndWorkers: the second pod set leads unless it has more pods than the first)
    for leader_first in (True, False):
        result = find_topology_assignments(build_domain_tree(FLAVOR, SPLIT), lws(2, 8, 4, leader_first=leader_first))
        assert list(result) == (["leader", "worker"] if leader_first else ["worker", "leader"])
        assert hosts(result["leader"]) == {"r2-h3": 1}


def test_a_preferred_group_shares_a_host_when_the_leader_fits_beside_a_worker() -> None:
    world = nodes(("r1-h1", "r1", 12), ("r2-h1", "r2", 8))
    requests = {"leader": TopologyRequest(1, {GPU: 4}, preferred=RACK, group="g"),
                "worker": TopologyRequest(2, {GPU: 8}, preferred=RACK, group="g")}
    result = find_topology_assignments(build_domain_tree(FLAVOR, world), requests)
    assert hosts(result["leader"]) == {"r1-h1": 1}
    assert hosts(result["worker"]) == {"r1-h1": 1, "r2-h1": 1}
