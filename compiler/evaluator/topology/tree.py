"""The domain tree of one TAS flavor: Kueue's topologyTree (pkg/cache/scheduler
tas_topology_tree.go) built from the nodes its nodes cache keeps, with the free capacity of
every leaf that its TASFlavorSnapshot tracks (allocatable minus the usage of placed pods)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from compiler.evaluator.topology.records import (
    HOSTNAME_LABEL,
    PODS_RESOURCE,
    Node,
    TopologyAssignment,
    TopologyFlavor,
)


class Domain:
    """A topology domain; `pod_count`, `slice_count` and the leader fields are the per-request
    state Kueue keeps in its snapshot's domainState, reset by every placement: with a leader
    (a pod-set group) `leader_count` says whether the domain can hold the leader's pod and the
    `*_with_leader` counts how many workers still fit beside it (without one they equal the
    plain counts)."""

    __slots__ = ("id", "level_values", "parent", "children", "node", "free", "pod_count", "slice_count",
                 "pod_count_with_leader", "slice_count_with_leader", "leader_count")

    def __init__(self, domain_id: str, level_values: tuple[str, ...]) -> None:
        self.id = domain_id
        self.level_values = level_values
        self.parent: Domain | None = None
        self.children: list[Domain] = []
        self.node: Node | None = None  # a leaf of a hostname-lowest topology: its one node
        self.free: dict[str, int] = {}  # a leaf: allocatable minus usage
        self.pod_count = 0
        self.slice_count = 0
        self.pod_count_with_leader = 0
        self.slice_count_with_leader = 0
        self.leader_count = 0


class DomainTree:
    __slots__ = ("flavor", "levels", "hostname_lowest", "leaves", "domains_per_level", "roots", "excluded",
                 "tainted")

    def __init__(self, flavor: TopologyFlavor) -> None:
        self.flavor = flavor
        self.levels = flavor.levels
        self.hostname_lowest = bool(self.levels) and self.levels[-1] == HOSTNAME_LABEL
        self.leaves: dict[str, Domain] = {}
        self.domains_per_level: list[dict[str, Domain]] = [{} for _ in self.levels]
        self.roots: dict[str, Domain] = {}
        # Nodes the nodes cache or the flavor leave out, name -> why (for refusals).
        self.excluded: dict[str, str] = {}
        # Whether a leaf's node has a taint (only then can a pod set without a node selector
        # or affinity find a node it may not use).
        self.tainted = False

    def leaf_of(self, values: tuple[str, ...]) -> Domain | None:
        """The leaf an assignment's domain names (only the hostname when that is the lowest level)."""
        return self.leaves.get(values[-1] if self.hostname_lowest else domain_id(values))

    def add_usage(self, assignment: TopologyAssignment, per_pod: Mapping[str, int], sign: int = 1) -> None:
        """Pods already placed take their requests (and one `pods` each) from their leaves,
        as the TAS cache adds an admitted Workload's usage (TASFlavorCache.addUsage);
        `sign=-1` gives them back (a placement undone)."""
        for placed in assignment.domains:
            leaf = self.leaf_of(placed.values)
            if leaf is None:
                continue  # a node the flavor does not select: Kueue's snapshot skips it too
            taken = sign * placed.count
            for resource, amount in per_pod.items():
                leaf.free[resource] = leaf.free.get(resource, 0) - amount * taken
            leaf.free[PODS_RESOURCE] = leaf.free.get(PODS_RESOURCE, 0) - taken


def domain_id(values: Iterable[str]) -> str:
    """utiltas.DomainID: the level values joined."""
    return ",".join(values)


def node_exclusion(node: Node, flavor: TopologyFlavor) -> str | None:
    """Why Kueue's nodes cache or the flavor's node matching leaves a node out, or None.

    nodesCache.sync drops a node that is unschedulable or not Ready (SchedulerLibraryIntegration
    off, v0.19.2's default); utiltas.NodeMatchesFlavor wants the flavor's node labels and a
    label for every level."""
    if node.unschedulable:
        return "unschedulable"
    if not node.ready:
        return "not Ready"
    for key, value in flavor.node_labels.items():
        if node.labels.get(key) != value:
            return f"lacks the flavor's label {key}={value}"
    for level in flavor.levels:
        if level not in node.labels:
            return f"has no {level} label"
    return None


def build_domain_tree(flavor: TopologyFlavor, nodes: Iterable[Node],
                      node_usage: Mapping[str, Mapping[str, int]] | None = None) -> DomainTree:
    """newTopologyTree + initialize: one leaf per node (hostname lowest) or per lowest-level
    domain, parents created on the way up; leaf capacity is the sum of its nodes' allocatable,
    less what the pods TAS does not place take on them (`node_usage`, by node name: the
    snapshot's addNonTASUsage)."""
    tree = DomainTree(flavor)
    leaf_of_node: dict[str, Domain] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        why = node_exclusion(node, flavor)
        if why is not None:
            tree.excluded[node.name] = why
            continue
        values = tuple(node.labels[level] for level in flavor.levels)
        leaf_key = node.labels[HOSTNAME_LABEL] if tree.hostname_lowest else domain_id(values)
        leaf = tree.leaves.get(leaf_key)
        if leaf is None:
            leaf = Domain(leaf_key, values)
            tree.leaves[leaf_key] = leaf
            if tree.hostname_lowest:
                leaf.node = node
                tree.tainted = tree.tainted or bool(node.taints)
        for resource, amount in node.allocatable.items():
            leaf.free[resource] = leaf.free.get(resource, 0) + amount
        leaf_of_node[node.name] = leaf
    for name, usage in (node_usage or {}).items():
        leaf = leaf_of_node.get(name)
        if leaf is not None:
            for resource, amount in usage.items():
                leaf.free[resource] = leaf.free.get(resource, 0) - amount
    for leaf in tree.leaves.values():
        tree.domains_per_level[len(leaf.level_values) - 1][leaf.id] = leaf
        _link_to_parent(tree, leaf)
    return tree


def _link_to_parent(tree: DomainTree, domain: Domain) -> None:
    """initializeHelper: create the parent on first sight, then connect."""
    if len(domain.level_values) == 1:
        tree.roots[domain.id] = domain
        return
    parent_values = domain.level_values[:-1]
    parent_key = domain_id(parent_values)
    level = tree.domains_per_level[len(parent_values) - 1]
    parent = level.get(parent_key)
    if parent is None:
        parent = Domain(parent_key, parent_values)
        level[parent_key] = parent
        _link_to_parent(tree, parent)
    domain.parent = parent
    parent.children.append(domain)
