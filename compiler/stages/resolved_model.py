"""The resolved cluster model: what resolve produces and plan/build consume.

Everything here is already checked: references resolve, defaults are applied, the cohort tree is
a tree. Each piece keeps the policy document it came from (`Located`) so later stages can still
point at the user's line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

from compiler.core.resources import GPU_RESOURCE
from compiler.mig.catalogue import GpuModel, load_catalogue
from compiler.language.policy import ClusterDocument, CohortSpec, DeclaredWorkload, Pool, Preemption, PrioritySpec, TeamDocument
from compiler.language.validate import Located



@dataclass(frozen=True)
class NodeTaint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class TopologyNode:
    """One node of a pool: the domain (label value) it sits in at each level, and what it offers."""

    name: str
    domains: tuple[str, ...]  # one value per topology level, coarsest first
    allocatable: tuple[tuple[str, str], ...]  # resource -> quantity text, sorted
    ready: bool = True
    unschedulable: bool = False
    taints: tuple[NodeTaint, ...] = ()

    @property
    def gpus(self) -> int:
        return int(dict(self.allocatable).get(GPU_RESOURCE, "0") or 0)


@dataclass(frozen=True)
class ResolvedTopology:
    """A pool's topology: the Kueue Topology it uses and the nodes it has."""

    name: str  # the Kueue Topology's name (shared by pools with the same levels)
    levels: tuple[str, ...]
    nodes: tuple[TopologyNode, ...]
    source: str  # "regular", or the display path of the node export


@dataclass(frozen=True)
class NodeSize:
    """One node shape of a pool: what a pod may take of it (None: not stated, not checked)."""

    name: str  # the node's name, or "declared" for the pool's allocatable
    gpus: int
    cpu: Fraction | None
    memory: Fraction | None


def guarantee_capacity(gpus: int, overcommit: float) -> int:
    """How many of `gpus` may be guaranteed: x overcommit, rounded down, with the overcommit as
    written (100 x 0.29 is 29, where the float product, 28.999999999999996, would give 28)."""
    return int(Fraction(gpus) * Fraction(str(overcommit)))


@dataclass
class ResolvedPool:
    spec: Pool
    index: int  # position in the cluster's pool list (declaration order breaks ties)
    overcommit: float
    # The pool's Kueue Topology and nodes, when it declares a topology (and it resolved cleanly).
    topology: ResolvedTopology | None = None
    # What one node offers pods (declared, or read from a node export); empty: not known, so only
    # GPUs per node are checked (compiler/stages/node_size.py).
    node_sizes: tuple["NodeSize", ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def flavor(self) -> str:
        return self.spec.name

    @property
    def gpus(self) -> int:
        """Physical GPUs in the pool."""
        return self.spec.nodes * self.spec.gpusPerNode

    @property
    def guarantee_capacity(self) -> int:
        """How many GPUs may be guaranteed on this pool (capacity x overcommit, rounded down)."""
        return guarantee_capacity(self.gpus, self.overcommit)

    @property
    def is_mig(self) -> bool:
        return self.spec.is_mig

    @property
    def gpu_model(self) -> GpuModel | None:
        """The catalogue's entry for the pool's GPU model (None for a model it does not know)."""
        return load_catalogue().model(self.spec.gpu)

    @cached_property  # asked for every team and pool; the spec does not change after resolve
    def interchangeable_key(self) -> tuple:
        """What a team sees of the pool beyond its size and where its nodes are: pools with equal
        keys differ only in name, node count and node labels, so no team has a reason to prefer one
        (resolve.py spreads teams over them instead of packing the first)."""
        spec = self.spec
        shape = spec.model_dump(mode="json", exclude={"name", "nodes", "nodeLabels", "flavorSpec", "topology"})
        # A flavor written verbatim (import) counts with everything but its node labels: its
        # taints and tolerations tell pools apart as the pool fields do.
        flavor = {k: v for k, v in (spec.flavorSpec or {}).items() if k != "nodeLabels"}
        levels = spec.topology.level_labels if spec.topology is not None else None
        return (json.dumps(shape, sort_keys=True), spec.flavorSpec is None, json.dumps(flavor, sort_keys=True), levels)

    @property
    def capacity_class(self) -> str:
        """'spot' or 'on-demand' (reserved capacity is paid for either way: it ranks as on-demand)."""
        return "spot" if self.spec.capacity == "spot" else "on-demand"


def reordered_among_identical(pools: list["ResolvedPool"], key) -> list["ResolvedPool"]:
    """`pools` with each set of identical whole-GPU pools (equal `interchangeable_key`) sorted by
    `key` among the places they hold (a stable sort: pools that `key` ties keep their order);
    every other pool stays where it is."""
    groups: dict[tuple, list[int]] = {}
    for slot, pool in enumerate(pools):
        if not pool.is_mig:
            groups.setdefault(pool.interchangeable_key, []).append(slot)
    result = list(pools)
    for slots in groups.values():
        if len(slots) > 1:
            for slot, pool in zip(slots, sorted((pools[slot] for slot in slots), key=key)):
                result[slot] = pool
    return result


@dataclass
class ResolvedWorkload:
    spec: DeclaredWorkload
    index: int
    priority: str | None
    priority_value: int
    # The MIG profile one replica asks for: `mig` as written, or the one chosen for `gpuMemory`.
    mig: str | None = None


@dataclass
class ResolvedTeam:
    located: Located[TeamDocument]
    cohort: str | None
    namespaces: list[str]
    # Pools the team accepts for whole GPUs / for MIG instances, in preference order.
    gpu_pools: list[ResolvedPool]
    mig_pools: list[ResolvedPool]
    priority: str | None
    queueing: str
    preemption: Preemption
    weight: float
    mig: dict[str, int]
    workloads: list[ResolvedWorkload]

    @property
    def name(self) -> str:
        return self.located.model.metadata.name

    @property
    def spec(self):
        return self.located.model.spec

    @property
    def flavor_pools(self) -> list[ResolvedPool]:
        """Every pool that becomes a flavor of this team's ClusterQueue, in preference order."""
        return self.gpu_pools + [p for p in self.mig_pools if p not in self.gpu_pools]


@dataclass
class ResolvedCohort:
    spec: CohortSpec
    parent: str | None  # after attaching declared roots to the cluster root
    index: int


@dataclass
class ResolvedCluster:
    located: Located[ClusterDocument]
    pools: list[ResolvedPool]
    cohorts: list[ResolvedCohort]
    root_cohort: str | None
    priorities: list[PrioritySpec]
    default_priority: str | None
    teams: list[ResolvedTeam] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.located.model.metadata.name

    @property
    def spec(self):
        return self.located.model.spec

    def pool(self, name: str) -> ResolvedPool | None:
        return next((p for p in self.pools if p.name == name), None)

    def priority_value(self, name: str | None) -> int:
        if name is None:
            return 0
        return next((p.value for p in self.priorities if p.name == name), 0)

    @property
    def kueue_api_version(self) -> str:
        """Kueue >= 0.15 serves kueue.x-k8s.io/v1beta2; older clusters get v1beta1."""
        major, minor = (int(x) for x in self.spec.kueueVersion.split(".")[:2])
        return "kueue.x-k8s.io/v1beta2" if (major, minor) >= (0, 15) else "kueue.x-k8s.io/v1beta1"
