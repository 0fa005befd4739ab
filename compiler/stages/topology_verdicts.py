"""Topology in the verdicts: a declared workload on a pool with a topology must also be placed
on the pool's nodes, as Kueue's Topology Aware Scheduling places it.

The quota verdicts (compiler.stages.admissibility) say on which flavor the engine admits the
workload; when that flavor's pool declares a topology, its pods are placed with Kueue's TAS
algorithms (compiler.evaluator.topology) on the pool's nodes (its node export, or the nodes its
regular shape describes) in the same two worlds:

  idle       every node free: a workload that cannot be placed there is `never` (with what it
             needs and what the roomiest domain holds);
  contended  every other team uses its guarantee, and the shared quota is taken: the pool's
             GPUs beyond the team's own quota on it are taken by pods of one whole node each
             (the last one holding the remainder), placed by Kueue's own unconstrained
             placement, which fills the fullest domains first. That packs the background as
             tightly as Kueue itself would, leaving the team's share in as few domains as
             possible; a `guaranteed` workload that still cannot be placed beside it becomes
             `borrowing` (it runs while other teams leave room).

`placement_assumptions` says, per pool, what REPORT.md states about this background.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from compiler.core.quantity import format_units, to_units
from compiler.core.resources import CPU, GPU_RESOURCE, MEMORY
from compiler.evaluator.topology import (
    Node,
    PlacementRefusal,
    SliceLayer,
    Taint,
    Toleration,
    TopologyFlavor,
    TopologyRequest,
    build_domain_tree,
    find_topology_assignment,
)
from compiler.evaluator.topology.tree import DomainTree
from compiler.stages.build import BuildResult, cpu_memory_with, format_amount
from compiler.stages.resolved_model import ResolvedCluster, ResolvedPool, ResolvedWorkload

GUARANTEED, BORROWING, NEVER = "guaranteed", "borrowing", "never"
POOL_LABEL = "kueue-policy.io/pool"
# A node of a regular shape lists no pods allocatable of its own; a kubelet's default is 110.
REGULAR_NODE_PODS = 110
BACKGROUND = ("every other team's guarantee and the shared quota taken as whole-node pods, placed the way "
              "Kueue places unconstrained pods (fullest domains first)")


@dataclass(frozen=True)
class PoolPlacement:
    """What REPORT.md says about one pool's placement (report.json `topologyPlacement`)."""

    pool: str
    topology: str
    levels: tuple[str, ...]
    nodes: int
    source: str  # "regular" or the node export's path

    def to_dict(self) -> dict:
        return {"pool": self.pool, "topology": self.topology, "levels": list(self.levels), "nodes": self.nodes,
                "source": self.source, "background": BACKGROUND}


def placement_assumptions(cluster: ResolvedCluster) -> list[PoolPlacement]:
    return [PoolPlacement(pool.name, pool.topology.name, pool.topology.levels, len(pool.topology.nodes),
                          pool.topology.source)
            for pool in cluster.pools if pool.topology is not None]


def _units(request: dict[str, Fraction]) -> dict[str, int]:
    return {resource: to_units(resource, format_amount(resource, amount)) for resource, amount in request.items()}


def _flavor(pool: ResolvedPool) -> TopologyFlavor:
    """The pool's ResourceFlavor as the compiler emits it: its node labels, a toleration per taint."""
    tolerations = tuple(Toleration(t.key, "Exists", "", t.effect) for t in pool.spec.taints)
    return TopologyFlavor(pool.topology.name, pool.topology.levels, _node_labels(pool), tolerations)


def _node_labels(pool: ResolvedPool) -> dict[str, str]:
    return dict(pool.spec.nodeLabels) or {POOL_LABEL: pool.name}


def pool_nodes(cluster: ResolvedCluster, pool: ResolvedPool) -> list[Node]:
    """The Node objects Kueue's TAS would read for the pool: its export's nodes, or the regular
    shape's (each with the cluster's resourcesPerGpu for its GPUs and a kubelet's 110 pods)."""
    topology = pool.topology
    regular = topology.source == "regular"
    if regular:
        cpu, memory = cpu_memory_with(cluster, pool, pool.spec.gpusPerNode)
        extra = _units({CPU: cpu, MEMORY: memory})
        extra["pods"] = REGULAR_NODE_PODS
    nodes = []
    for record in topology.nodes:
        labels = {**_node_labels(pool), **dict(zip(topology.levels, record.domains))}
        allocatable = {resource: to_units(resource, amount) for resource, amount in record.allocatable}
        if regular:
            allocatable = {**extra, **allocatable}
        taints = tuple(Taint(t.key, t.value, t.effect) for t in record.taints)
        if regular:
            taints = tuple(Taint(t.key, t.value or "", t.effect) for t in pool.spec.taints)
        nodes.append(Node(record.name, labels, allocatable, taints, record.ready, record.unschedulable))
    return nodes


def topology_request(pool: ResolvedPool, topology, count: int, per_pod: dict[str, int]) -> TopologyRequest:
    """A pod set of `count` pods asking `per_pod` (Kueue's units) with a declared topology, as
    Kueue's job integrations turn its annotations into a topology request (none: Kueue's
    implied TAS on a topology flavor); it tolerates the pool's taints as the flavor does."""
    tolerations = _flavor(pool).tolerations
    if topology is None:
        return TopologyRequest(count, per_pod, implied=True, tolerations=tolerations)
    return TopologyRequest(count, per_pod, required=topology.required, preferred=topology.preferred,
                           slices=tuple(SliceLayer(s.level, s.size) for s in topology.slices),
                           tolerations=tolerations)


def workload_request(cluster: ResolvedCluster, workload: ResolvedWorkload, pool: ResolvedPool,
                     per_pod: dict[str, Fraction]) -> TopologyRequest:
    return topology_request(pool, workload.spec.topology, workload.spec.replicas, _units(per_pod))


class PoolTrees:
    """Domain trees per pool: empty (the idle world) and with a given background taken (the
    contended world), built once each and only read by placement afterwards."""

    def __init__(self, cluster: ResolvedCluster) -> None:
        self.cluster = cluster
        self._nodes: dict[str, list[Node]] = {}
        self._trees: dict[tuple[str, int], DomainTree] = {}
        # Many teams ask the same question (one background, one request shape): placed once.
        self._answers: dict[tuple, object] = {}

    def fresh(self, pool: ResolvedPool) -> DomainTree:
        """A tree of its own, every node free, for a caller that places pods on it."""
        if pool.name not in self._nodes:
            self._nodes[pool.name] = pool_nodes(self.cluster, pool)
        return build_domain_tree(_flavor(pool), self._nodes[pool.name])

    def tree(self, pool: ResolvedPool, background_gpus: int = 0) -> DomainTree:
        key = (pool.name, background_gpus)
        if key not in self._trees:
            tree = self.fresh(pool)
            if background_gpus:
                self._take_background(tree, pool, background_gpus)
            self._trees[key] = tree
        return self._trees[key]

    def place(self, pool: ResolvedPool, background_gpus: int, request: TopologyRequest):
        """find_topology_assignment on the pool with that background taken (the tree unchanged)."""
        key = (pool.name, background_gpus, request.count, tuple(sorted(request.per_pod.items())), request.required,
               request.preferred, request.implied, tuple((s.level, s.size) for s in request.slices))
        if key not in self._answers:
            self._answers[key] = find_topology_assignment(self.tree(pool, background_gpus), request)
        return self._answers[key]

    def _take_background(self, tree: DomainTree, pool: ResolvedPool, gpus: int) -> None:
        per_node = pool.spec.gpusPerNode
        tolerations = _flavor(pool).tolerations
        for count, size in ((gpus // per_node, per_node), (1 if gpus % per_node else 0, gpus % per_node)):
            if not count:
                continue
            cpu, memory = cpu_memory_with(self.cluster, pool, size)
            per_pod = _units({GPU_RESOURCE: Fraction(size), CPU: cpu, MEMORY: memory})
            # Nodes the pods cannot use (not Ready, tainted) hold none of the background: place as
            # many of the pods as fit at all (the most that an unconstrained request takes).
            low, high, best = 0, count, None
            while low < high:
                trial = (low + high + 1) // 2
                result = find_topology_assignment(tree, TopologyRequest(trial, per_pod, unconstrained=True,
                                                                        tolerations=tolerations))
                if isinstance(result, PlacementRefusal):
                    high = trial - 1
                else:
                    low, best = trial, result
            if best is not None:
                tree.add_usage(best, per_pod)


def _pool_of_flavor(cluster: ResolvedCluster, flavor: str | None) -> ResolvedPool | None:
    pool = cluster.pool(flavor) if flavor is not None else None
    return pool if pool is not None and pool.topology is not None else None


def _own_gpus(build: BuildResult, team: str, flavor: str) -> int:
    quota = build.quota.get(team, {}).get(flavor, {}).get(GPU_RESOURCE)
    return int(quota.nominal) if quota is not None else 0


def place_verdict(verdict, cluster: ResolvedCluster, build: BuildResult, workload: ResolvedWorkload,
                  per_pod: dict[str, Fraction], trees: PoolTrees):
    """The verdict with topology accounted for: unchanged on a flavor without topology."""
    pool = _pool_of_flavor(cluster, verdict.flavor)
    if verdict.verdict == NEVER or pool is None or workload.spec.gpus == 0:
        return verdict
    request = workload_request(cluster, workload, pool, per_pod)
    idle = trees.place(pool, 0, request)
    if isinstance(idle, PlacementRefusal):
        return replace(verdict, verdict=NEVER, flavor=None,
                       reason=f"Kueue's topology-aware scheduling cannot place it on flavor {pool.name} even with "
                              f"every node free: {idle.reason}")
    if verdict.verdict != GUARANTEED:
        return verdict
    background = max(pool.gpus - _own_gpus(build, verdict.team, pool.name), 0)
    busy = trees.place(pool, background, request)
    if isinstance(busy, PlacementRefusal):
        return replace(verdict, verdict=BORROWING,
                       reason=f"fits the team's own quota on flavor {pool.name}, but with every other team using "
                              f"its guarantee ({format_units(GPU_RESOURCE, background)} of the pool's "
                              f"{pool.gpus} GPUs taken, packed into the fullest domains) Kueue's topology-aware "
                              f"scheduling cannot place it: {busy.reason}; it runs while other teams leave room")
    return verdict


def _asked_levels(workload: ResolvedWorkload) -> tuple[str, ...]:
    topology = workload.spec.topology
    if topology is None:
        return ()
    anchor = tuple(level for level in (topology.required, topology.preferred) if level is not None)
    return anchor + tuple(piece.level for piece in topology.slices)


def topology_question(workload: ResolvedWorkload) -> tuple:
    """What of a workload's topology changes which flavors Kueue considers (a universe key part)."""
    return (workload.spec.topology is not None, _asked_levels(workload))


def usable_flavors(cluster: ResolvedCluster, workload: ResolvedWorkload, flavors: list[str]) -> list[str]:
    """The flavors of a team's queue Kueue's flavor assigner may pick for the workload
    (checkPodSetAndFlavorMatchForTAS): with a topology request only flavors whose Topology has
    every level it names; without one, on a queue mixing topology and plain flavors, only the
    plain ones (a queue of topology flavors only places it anyway: Kueue's implied TAS)."""
    with_topology = {name for name in flavors if (pool := cluster.pool(name)) is not None and pool.topology is not None}
    if workload.spec.topology is not None:
        levels = _asked_levels(workload)
        return [name for name in flavors if name in with_topology
                and all(level in cluster.pool(name).topology.levels for level in levels)]
    if with_topology and len(with_topology) < len(flavors):
        return [name for name in flavors if name not in with_topology]
    return list(flavors)
