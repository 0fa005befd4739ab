"""compiler.evaluator.topology on hand-built topologies: each expectation is what Kueue
v0.19.2's TAS assigns (the same worlds agree with kueue-oracle in tests/differential)."""

from __future__ import annotations

from compiler.evaluator.topology import (
    Node,
    NodeSelectorRequirement,
    PlacementRefusal,
    SliceLayer,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyFlavor,
    TopologyRequest,
    build_domain_tree,
    find_topology_assignment,
    find_topology_assignments,
)

BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
FLAVOR = TopologyFlavor("racks", (BLOCK, RACK, HOST), {"pool": "gpu"})


def node(name: str, block: str, rack: str, gpus: int = 8, **state) -> Node:
    labels = {BLOCK: block, RACK: rack, HOST: name, "pool": "gpu"}
    return Node(name, labels, {GPU: gpus, "pods": 110}, **state)


def cluster(**overrides: dict) -> list[Node]:
    """Block b1: rack r1 with 2 hosts, r2 with 3; block b2: r3 with 4 hosts; 8 GPUs each."""
    shape = (("b1", "r1", 2), ("b1", "r2", 3), ("b2", "r3", 4))
    return [node(f"{r}-h{i}", b, r, **overrides.get(f"{r}-h{i}", {})) for b, r, n in shape for i in range(n)]


def hosts(result: TopologyAssignment | PlacementRefusal) -> dict[str, int]:
    assert isinstance(result, TopologyAssignment), result
    assert result.levels == (HOST,)
    return {d.values[0]: d.count for d in result.domains}


def place(request: TopologyRequest, nodes: list[Node] | None = None, flavor: TopologyFlavor = FLAVOR):
    return find_topology_assignment(build_domain_tree(flavor, cluster() if nodes is None else nodes), request)


def test_required_rack_takes_the_tightest_rack_that_fits() -> None:
    # r2 (3 hosts) holds 3 pods exactly; r3 (4) would too, best fit prefers the smaller.
    assert hosts(place(TopologyRequest(3, {GPU: 8}, required=RACK))) == {"r2-h0": 1, "r2-h1": 1, "r2-h2": 1}


def test_required_rack_refusal_says_what_is_needed_and_what_the_largest_rack_has() -> None:
    result = place(TopologyRequest(5, {GPU: 8}, required=RACK))
    assert isinstance(result, PlacementRefusal)
    assert result.reason == "needs 5 pods x 8 nvidia.com/gpu in one rack; the roomiest rack has room for 4"


def test_not_ready_unschedulable_and_tainted_nodes_are_left_out_and_named() -> None:
    nodes = cluster(**{"r3-h0": {"ready": False}, "r3-h1": {"unschedulable": True},
                       "r3-h2": {"taints": (Taint("gpu", "broken"),)}})
    result = place(TopologyRequest(3, {GPU: 8}, required=RACK), nodes)
    assert hosts(result) == {"r2-h0": 1, "r2-h1": 1, "r2-h2": 1}
    refused = place(TopologyRequest(4, {GPU: 8}, required=RACK), nodes)
    assert isinstance(refused, PlacementRefusal)
    assert refused.reason.endswith('(nodes left out: 1 not Ready, 1 taint "gpu=broken:NoSchedule", 1 unschedulable)')


def test_a_toleration_lets_the_pod_set_use_a_tainted_node() -> None:
    nodes = cluster(**{"r3-h2": {"taints": (Taint("gpu", "broken"),)}})
    request = TopologyRequest(4, {GPU: 8}, required=RACK, tolerations=(Toleration("gpu", "Exists"),))
    assert hosts(place(request, nodes)) == {f"r3-h{i}": 1 for i in range(4)}


def test_preferred_rack_goes_up_to_the_block_when_no_rack_holds_it() -> None:
    # 5 pods: no rack has 5 hosts, block b1 (r1 + r2) has exactly 5.
    assert hosts(place(TopologyRequest(5, {GPU: 8}, preferred=RACK))) == {
        "r1-h0": 1, "r1-h1": 1, "r2-h0": 1, "r2-h1": 1, "r2-h2": 1}


def test_slices_of_two_per_rack_fill_whole_racks() -> None:
    request = TopologyRequest(4, {GPU: 8}, required=BLOCK, slices=(SliceLayer(RACK, 2),))
    placed = hosts(place(request))
    per_rack: dict[str, int] = {}
    for host, count in placed.items():
        per_rack[host[:2]] = per_rack.get(host[:2], 0) + count
    assert all(count % 2 == 0 for count in per_rack.values()) and sum(per_rack.values()) == 4


def test_unconstrained_starts_from_the_fullest_host() -> None:
    # Least free capacity: the second pod goes to the host the first half-filled, not an empty one.
    nodes = cluster()
    tree = build_domain_tree(FLAVOR, nodes)
    first = find_topology_assignment(tree, TopologyRequest(1, {GPU: 4}, unconstrained=True))
    tree.add_usage(first, {GPU: 4})
    second = find_topology_assignment(tree, TopologyRequest(1, {GPU: 4}, unconstrained=True))
    assert hosts(first) == hosts(second)  # the host with 4 GPUs left is the least free


def test_placed_usage_is_taken_from_the_tree() -> None:
    tree = build_domain_tree(FLAVOR, cluster())
    first = find_topology_assignment(tree, TopologyRequest(4, {GPU: 8}, required=RACK))
    assert hosts(first) == {f"r3-h{i}": 1 for i in range(4)}
    tree.add_usage(first, {GPU: 8})
    again = find_topology_assignment(tree, TopologyRequest(4, {GPU: 8}, required=RACK))
    assert isinstance(again, PlacementRefusal)


def test_without_a_hostname_level_leaves_are_racks_and_nodes_are_not_filtered() -> None:
    flavor = TopologyFlavor("racks", (BLOCK, RACK), {"pool": "gpu"})
    nodes = cluster(**{"r2-h0": {"taints": (Taint("gpu", "broken"),)}})
    result = place(TopologyRequest(3, {GPU: 8}, required=RACK), nodes, flavor)
    assert isinstance(result, TopologyAssignment)
    assert result.levels == (BLOCK, RACK)
    assert [(d.values, d.count) for d in result.domains] == [(("b1", "r2"), 3)]


def test_a_level_the_topology_lacks_is_refused() -> None:
    result = place(TopologyRequest(1, {GPU: 1}, required="example.com/zone"))
    assert isinstance(result, PlacementRefusal)
    assert result.reason == 'topology "racks" has no level example.com/zone'


def test_required_node_affinity_keeps_the_pod_set_on_matching_nodes() -> None:
    nodes = cluster()
    for n in nodes:
        n.labels["example.com/gpu-model"] = "h100" if n.name.startswith("r3") else "a100"
    h100 = (NodeSelectorRequirement("example.com/gpu-model", "In", ("h100",)),)
    request = TopologyRequest(2, {GPU: 8}, required=RACK, affinity=(h100,))
    assert set(hosts(place(request, nodes))) <= {f"r3-h{i}" for i in range(4)}
    refused = place(TopologyRequest(5, {GPU: 8}, preferred=RACK, affinity=(h100,)), nodes)
    assert isinstance(refused, PlacementRefusal)
    assert refused.reason.endswith("(nodes left out: 5 node affinity)")


def test_a_workloads_pod_sets_are_placed_together_or_not_at_all() -> None:
    tree = build_domain_tree(FLAVOR, cluster())
    workers = TopologyRequest(4, {GPU: 8}, required=RACK)
    both = find_topology_assignments(tree, {"workers": workers, "more": TopologyRequest(3, {GPU: 8}, required=RACK)})
    assert isinstance(both, dict)
    assert set(hosts(both["workers"])).isdisjoint(hosts(both["more"]))  # the second saw the first's usage
    refused = find_topology_assignments(tree, {"workers": workers, "big": TopologyRequest(5, {GPU: 8}, required=RACK)})
    assert isinstance(refused, PlacementRefusal)
    assert refused.reason.startswith("pod set big: needs 5 pods")
    # Nothing stayed placed: the rack the refused Workload's workers took is free again.
    assert hosts(find_topology_assignment(tree, workers)) == hosts(both["workers"])
