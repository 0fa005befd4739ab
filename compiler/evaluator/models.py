"""Typed Kueue objects, as the engine sees them after loading.

Quantities are already integers (see `compiler/core/quantity.py`, `to_units`); names keep Kueue's meaning. Both API
versions (v1beta1, v1beta2) load into the same models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction

from compiler.core.errors import Diagnostic, SourcePosition

FlavorResource = tuple[str, str]  # (flavor, resource)

# One tuple object per (flavor, resource) pair, shared by every engine in this process: the
# engine's dicts are keyed by pairs, and a lookup whose key is the very object stored returns
# at the identity check, where an equal tuple built elsewhere is compared element by element
# (a simulation looks pairs up tens of millions of times). Bounded by the pairs the policies
# loaded in this process name.
_PAIRS: dict[FlavorResource, FlavorResource] = {}


def flavor_resource(flavor: str, resource: str) -> FlavorResource:
    """The shared tuple of a (flavor, resource) pair (see `_PAIRS`)."""
    pair = (flavor, resource)
    return _PAIRS.setdefault(pair, pair)


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class ResourceQuota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass
class ResourceGroup:
    covered_resources: list[str]
    flavors: list[str]  # preference order
    quotas: dict[FlavorResource, ResourceQuota] = field(default_factory=dict)


@dataclass
class ResourceFlavor:
    name: str
    node_labels: dict[str, str] = field(default_factory=dict)
    node_taints: list[dict] = field(default_factory=list)
    tolerations: list[dict] = field(default_factory=list)
    # spec.topologyName: the flavor places pods on nodes with Topology Aware Scheduling
    topology_name: str | None = None
    source: SourcePosition | None = None


@dataclass
class FlavorFungibility:
    when_can_borrow: str = "MayStopSearch"   # or TryNextFlavor
    when_can_preempt: str = "TryNextFlavor"  # or MayStopSearch
    preference: str | None = None            # BorrowingOverPreemption | PreemptionOverBorrowing


@dataclass
class PreemptionPolicy:
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass
class ClusterQueue:
    name: str
    cohort: str | None = None
    resource_groups: list[ResourceGroup] = field(default_factory=list)
    namespace_selector: dict | None = None  # None admits no namespace; {} admits all
    queueing_strategy: str = "BestEffortFIFO"
    fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    preemption: PreemptionPolicy = field(default_factory=PreemptionPolicy)
    stop_policy: str = "None"
    fair_weight: Fraction = Fraction(1)
    admission_checks: list[str] = field(default_factory=list)
    source: SourcePosition | None = None


@dataclass
class Cohort:
    name: str
    parent: str | None = None
    resource_groups: list[ResourceGroup] = field(default_factory=list)
    fair_weight: Fraction = Fraction(1)
    source: SourcePosition | None = None


@dataclass
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = "None"
    source: SourcePosition | None = None


@dataclass(frozen=True)
class PodSetTopologyRequest:
    """Kueue's PodSetTopologyRequest, the fields that place pods: one of required, preferred
    or unconstrained, and slices as (level, size) layers, outermost first (the
    podSetSliceRequiredTopology + podSetSliceSize pair is one layer)."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slices: tuple[tuple[str, int], ...] = ()
    # podSetGroupName (`kueue.x-k8s.io/podset-group-name`): the pod sets of one group, a leader
    # and its workers, are placed together
    group: str | None = None


@dataclass
class PodSet:
    name: str
    count: int
    per_pod: dict[str, int]  # resource -> per-pod amount (cpu in milli)
    min_count: int | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    # required node affinity: list of terms (ORed), each a list of match expressions (ANDed)
    affinity_terms: list[list[dict]] | None = None
    tolerations: list[dict] = field(default_factory=list)
    # What the pod set asks of Topology Aware Scheduling (spec.podSets[].topologyRequest or the
    # pod template's podset-*-topology annotations); None when it asks nothing explicitly.
    topology: PodSetTopologyRequest | None = None
    # Kueue's SpecShape of the pod template as Go writes it (compiler.evaluator.spec_shape): part
    # of the scheduling equivalence class, which tells apart specs the fields above do not
    # (`affinity: {}` and none, per-container requests, ports, runtimeClassName, ...).
    spec_shape: str = ""

    def total(self, count: int | None = None) -> dict[str, int]:
        n = self.count if count is None else count
        return {res: amount * n for res, amount in self.per_pod.items()}


@dataclass
class PodSetAdmission:
    name: str
    flavors: dict[str, str]
    resource_usage: dict[str, int]
    count: int
    # status.admission's topologyAssignment (topology.TopologyAssignment): where its pods run
    topology_assignment: object | None = None


@dataclass
class Admission:
    cluster_queue: str
    podsets: list[PodSetAdmission]


@dataclass
class Workload:
    namespace: str
    name: str
    queue_name: str | None
    podsets: list[PodSet]
    priority: int = 0
    created: datetime = EPOCH
    uid: str = ""
    job_uid: str = ""          # label kueue.x-k8s.io/job-uid (the owner job's UID)
    admission: Admission | None = None
    quota_reserved_at: datetime | None = None
    active: bool = True
    # A problem found while loading that makes the workload inadmissible (reason, message).
    invalid: tuple[str, str] | None = None
    kind: str = "Workload"
    source: SourcePosition | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Configuration:
    fair_sharing: bool = False
    preemption_strategies: list[str] = field(
        default_factory=lambda: ["LessThanOrEqualToFinalShare", "LessThanInitialShare"])
    quota_check_strategy: str = "BlockUndeclared"
    exclude_resource_prefixes: list[str] = field(default_factory=list)
    device_class_mappings: dict[str, str] = field(default_factory=dict)  # device class -> resource


@dataclass
class ClusterState:
    """Everything read from the manifests: the input of `evaluate`."""

    flavors: dict[str, ResourceFlavor] = field(default_factory=dict)
    cohorts: dict[str, Cohort] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueue] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], LocalQueue] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    priority_classes: dict[str, int] = field(default_factory=dict)
    workloads: list[Workload] = field(default_factory=list)
    # Topology Aware Scheduling: Topology name -> its levels (node labels, coarsest first), and
    # the Nodes (topology.Node records) the TAS flavors place pods on.
    topologies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    nodes: list = field(default_factory=list)
    configuration: Configuration = field(default_factory=Configuration)
    warnings: list[Diagnostic] = field(default_factory=list)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        labels = dict(self.namespaces.get(namespace, {}))
        # The API server puts this label on every namespace.
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels


def copy_with(record, **changes):
    """A copy of a dataclass instance with some fields changed: `dataclasses.replace` without
    re-running `__init__`, for the records here, which have no field derived from others. A
    simulation copies its jobs' Workloads by the hundred thousand, and `replace` costs several
    times as much. (The assigner's records have slots and copy themselves.)"""
    copy = object.__new__(type(record))
    copy.__dict__.update(record.__dict__)
    copy.__dict__.update(changes)
    return copy
