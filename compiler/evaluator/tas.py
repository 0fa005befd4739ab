"""Topology Aware Scheduling in the admission engine: the node usage Kueue's TAS cache keeps per
TAS flavor, and the placement step of a flavor assignment (Kueue's
flavorassigner.WorkloadsTopologyRequests + ClusterQueueSnapshot.FindTopologyAssignmentsForWorkload).

A ResourceFlavor with spec.topologyName whose Topology is in the input is a TAS flavor: its
domain tree is built from the input's Nodes, and the pods of running Workloads take their place
on it (status.admission topologyAssignment). An admission in the run adds its pods, an eviction
takes them away; `generation` counts those changes, so a cached answer that read the nodes knows
when to ask again. `ClusterState` with `nodes` and `topologies` is all a caller passes."""

from __future__ import annotations

from compiler.evaluator.models import ClusterQueue, ClusterState, PodSet, ResourceFlavor
from compiler.evaluator.topology import (
    NodeSelectorRequirement,
    PlacementRefusal,
    SliceLayer,
    Toleration,
    TopologyAssignment,
    TopologyFlavor,
    TopologyRequest,
    build_domain_tree,
)
from compiler.evaluator.topology.placement import place_group
from compiler.evaluator.topology.tree import DomainTree


class PodSetPlacement:
    """Where one pod set's pods go: the TAS flavor, the domains, and each pod's requests (what
    the TAS cache takes from the leaves)."""

    __slots__ = ("flavor", "assignment", "per_pod")

    def __init__(self, flavor: str, assignment: TopologyAssignment, per_pod: dict[str, int]) -> None:
        self.flavor, self.assignment, self.per_pod = flavor, assignment, per_pod


class PlacementFailure:
    """The first pod set that cannot be placed (TASAssignmentsResult.Failure), with Kueue's reason."""

    __slots__ = ("pod_set", "flavor", "reason")

    def __init__(self, pod_set: str, flavor: str, reason: str) -> None:
        self.pod_set, self.flavor, self.reason = pod_set, flavor, reason


def _toleration(raw: dict) -> Toleration:
    return Toleration(str(raw.get("key", "") or ""), str(raw.get("operator", "Equal") or "Equal"),
                      str(raw.get("value", "") or ""), str(raw.get("effect", "") or ""))


def _affinity(terms: list[list[dict]] | None) -> tuple:
    if not terms:
        return ()
    return tuple(tuple(NodeSelectorRequirement(str(e.get("key")), str(e.get("operator")),
                                               tuple(str(v) for v in e.get("values") or ()))
                       for e in term if isinstance(e, dict)) for term in terms)


def _placement_units(requests: list[tuple[str, str, TopologyRequest]]
                     ) -> list[tuple[str, list[tuple[str, TopologyRequest]]]]:
    """FindTopologyAssignmentsForFlavor's groups: the pod sets of one podset-group-name on one
    flavor together, every other pod set alone, in the order each first appears."""
    units: dict[object, tuple[str, list[tuple[str, TopologyRequest]]]] = {}
    for index, (name, flavor, request) in enumerate(requests):
        key = (flavor, request.group) if request.group is not None else index
        units.setdefault(key, (flavor, []))[1].append((name, request))
    return list(units.values())


class TasState:
    """The TAS flavors' domain trees with the usage of the pods placed on them."""

    def __init__(self, state: ClusterState) -> None:
        self.trees: dict[str, DomainTree] = {}
        self._empty: dict[str, DomainTree] = {}
        self._topology_flavors: dict[str, TopologyFlavor] = {}
        self.generation = 0
        # Answers of `place`, keyed on the requests' signatures: on the nodes as they are (valid
        # while `generation` stays `_answers_generation`) and on empty nodes (valid for good).
        # A workload that cannot be placed is nominated again and again between two admissions
        # (a simulation's busy pool: tens of nominations per job), each time the same search.
        # `_shifted` counts the simulated evictions a preemption search has not undone yet:
        # the trees then differ from their generation and nothing is kept.
        self._answers: dict[tuple, dict[str, PodSetPlacement] | PlacementFailure] = {}
        self._answers_generation = 0
        self._empty_answers: dict[tuple, dict[str, PodSetPlacement] | PlacementFailure] = {}
        self._shifted = 0
        self._nodes = state.nodes
        self._node_usage = state.node_usage
        for name, flavor in sorted(state.flavors.items()):
            levels = state.topologies.get(flavor.topology_name) if flavor.topology_name else None
            if levels is None:
                continue
            topology_flavor = TopologyFlavor(flavor.topology_name, levels, flavor.node_labels,
                                             tuple(_toleration(t) for t in flavor.tolerations))
            self._topology_flavors[name] = topology_flavor
            self.trees[name] = build_domain_tree(topology_flavor, state.nodes, state.node_usage)
        self._tas_only: dict[str, bool] = {}
        # Whether the assigners take the placement step at all: a TAS flavor exists, or a pod
        # set asks for a topology (and is then refused on flavors without one).
        self.wanted = self.active or any(ps.topology is not None for w in state.workloads for ps in w.podsets)

    @property
    def active(self) -> bool:
        return bool(self.trees)

    def is_tas_flavor(self, flavor: str) -> bool:
        return flavor in self.trees

    def tas_only(self, cq: ClusterQueue) -> bool:
        """clusterQueue.isTASOnly: every flavor of every resource group is a TAS flavor."""
        known = self._tas_only.get(cq.name)
        if known is None:
            known = self._tas_only[cq.name] = all(f in self.trees for g in cq.resource_groups for f in g.flavors)
        return known

    def requested(self, podset: PodSet, cq: ClusterQueue) -> bool:
        """isTASRequested: an explicit request, or implied on a TAS-only queue."""
        return podset.topology is not None or (self.active and self.tas_only(cq))

    def flavor_problem(self, cq: ClusterQueue, podset: PodSet, flavor: ResourceFlavor,
                       covered: list[str]) -> str | None:
        """checkPodSetAndFlavorMatchForTAS: why this flavor cannot take the pod set, or None."""
        if self.requested(podset, cq):
            if podset.topology is None:  # implied
                return None
            if flavor.topology_name is None:
                if not any(res in podset.per_pod for res in covered):
                    return None
                return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
            tree = self.trees.get(flavor.name)
            if tree is None:
                return f'Flavor "{flavor.name}" information missing in TAS cache'
            if not self._has_level(tree, podset):
                return f'Flavor "{flavor.name}" does not contain the requested level'
            return None
        if flavor.topology_name is not None:
            return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
        return None

    @staticmethod
    def _has_level(tree: DomainTree, podset: PodSet) -> bool:
        """TASFlavorSnapshot.HasLevel."""
        request = podset.topology
        levels = tree.levels
        if request.required is not None:
            main = request.required
        elif request.preferred is not None:
            main = request.preferred
        elif request.unconstrained:
            main = levels[-1]
        elif request.slices:
            main = levels[0]
        else:
            return False
        slice_key = request.slices[0][0] if request.slices else levels[-1]
        return main in levels and slice_key in levels and all(level in levels for level, _ in request.slices)

    def request(self, podset: PodSet, count: int, cq: ClusterQueue) -> TopologyRequest:
        """The placement package's request for `count` pods of the pod set."""
        topology = podset.topology
        return TopologyRequest(
            count, podset.per_pod,
            required=topology.required if topology else None,
            preferred=topology.preferred if topology else None,
            unconstrained=topology.unconstrained if topology else False,
            slices=tuple(SliceLayer(level, size) for level, size in topology.slices) if topology else (),
            implied=topology is None,
            tolerations=tuple(_toleration(t) for t in podset.tolerations),
            node_selector=podset.node_selector, affinity=_affinity(podset.affinity_terms),
            group=topology.group if topology else None)

    def place(self, requests: list[tuple[str, str, TopologyRequest]], simulate_empty: bool = False
              ) -> dict[str, PodSetPlacement] | PlacementFailure:
        """FindTopologyAssignmentsForWorkload: (pod set, flavor, request) in pod-set order, each
        seeing the pods of those before it, the two pod sets of a podset-group-name on one
        flavor placed together (a leader with its workers); the first refusal refuses them all.
        With `simulate_empty` the nodes are as if every TAS workload were preempted.
        The answer is kept (see `_answers`) and given again while the nodes have not changed."""
        if self._shifted:
            return self._place(requests, simulate_empty)
        if simulate_empty:
            answers = self._empty_answers
        else:
            if self._answers_generation != self.generation:
                self._answers.clear()
                self._answers_generation = self.generation
            answers = self._answers
        key = tuple((name, flavor, request.signature()) for name, flavor, request in requests)
        result = answers.get(key)
        if result is None:
            result = answers[key] = self._place(requests, simulate_empty)
        # (a new dict for each caller: an assignment's placements are its own to keep)
        return result if isinstance(result, PlacementFailure) else dict(result)

    def _place(self, requests: list[tuple[str, str, TopologyRequest]], simulate_empty: bool
               ) -> dict[str, PodSetPlacement] | PlacementFailure:
        placed: dict[str, PodSetPlacement] = {}
        failure: PlacementFailure | None = None
        trees = self._empty_trees() if simulate_empty else self.trees
        for flavor, members in _placement_units(requests):
            result = place_group(trees[flavor], members)
            if isinstance(result, PlacementRefusal):
                failure = PlacementFailure(members[0][0], flavor, result.kueue_reason)
                break
            per_pod = dict(members)
            for name, assignment in result.items():
                trees[flavor].add_usage(assignment, per_pod[name].per_pod)
                placed[name] = PodSetPlacement(flavor, assignment, per_pod[name].per_pod)
        for placement in placed.values():
            trees[placement.flavor].add_usage(placement.assignment, placement.per_pod, sign=-1)
        return failure if failure is not None else placed

    def _empty_trees(self) -> dict[str, DomainTree]:
        if not self._empty:
            self._empty = {name: build_domain_tree(flavor, self._nodes, self._node_usage)
                           for name, flavor in self._topology_flavors.items()}
        return self._empty

    def fits(self, placements: dict[str, PodSetPlacement] | None, without: list[dict] = ()) -> bool:
        """TASFlavorSnapshot.Fits: every domain still has room for its pods (checked by the
        cycle before admitting a nomination made against the cycle's start), with the pods of
        `without` (placements of workloads being preempted) taken off first."""
        if not placements:
            return True
        for removed in without:
            for placement in removed.values():
                self.trees[placement.flavor].add_usage(placement.assignment, placement.per_pod, -1)
        try:
            return self._fits(placements)
        finally:
            for removed in without:
                for placement in removed.values():
                    self.trees[placement.flavor].add_usage(placement.assignment, placement.per_pod)

    def place_without(self, requests: list[tuple[str, str, TopologyRequest]], without: list[dict]
                      ) -> dict[str, PodSetPlacement] | PlacementFailure:
        """`place` with the pods of `without` (preemption targets) taken off the nodes."""
        for removed in without:
            self.shift(removed, -1)
        try:
            return self.place(requests)
        finally:
            for removed in without:
                self.shift(removed, 1)

    def shift(self, placements: dict[str, PodSetPlacement], sign: int) -> None:
        """A simulated eviction (-1) or its undoing (+1) of a workload's pods: the trees change,
        the generation does not (the search undoes every shift before it answers)."""
        for placement in placements.values():
            self.trees[placement.flavor].add_usage(placement.assignment, placement.per_pod, sign)
        self._shifted -= sign

    def placeable(self, requests: list[tuple[str, str, TopologyRequest]]) -> bool:
        """Whether `place` finds a placement for every request on the nodes as they are."""
        return not isinstance(self.place(requests), PlacementFailure)

    def _fits(self, placements: dict[str, PodSetPlacement]) -> bool:
        for placement in placements.values():
            tree = self.trees[placement.flavor]
            for domain in placement.assignment.domains:
                leaf = tree.leaf_of(domain.values)
                if leaf is None:
                    return False
                # (the pod's own requests only: Kueue's Fits does not count the `pods` each
                # pod takes, though the usage it then adds does; an empty request fits nowhere)
                if not placement.per_pod:
                    return False
                for res, amount in placement.per_pod.items():
                    if amount and leaf.free.get(res, 0) // amount < domain.count:
                        return False
        return True

    def add(self, placements: dict[str, PodSetPlacement] | None, sign: int = 1) -> None:
        """An admission's pods take their place (sign -1: an eviction gives it back)."""
        if not placements:
            return
        for placement in placements.values():
            self.trees[placement.flavor].add_usage(placement.assignment, placement.per_pod, sign)
        self.generation += 1

    def remove_all(self, placements: dict[str, PodSetPlacement]) -> None:
        """Placements held for one scheduling cycle go (the cycle's end reverts what it held
        with `remove_all`, as it does a quota node's)."""
        self.add(placements, -1)
