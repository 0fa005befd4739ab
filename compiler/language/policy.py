"""The policy language `kueue-policy/v1alpha1` as typed models (reference: docs/policy-reference.md).

These models describe what a user may write, nothing more: `extra="forbid"` everywhere, strict
types (a count is an integer, not "4" and not 4.0), bounded numbers (an absurd value is a typo,
not a plan). Cross-references (cluster, cohort, priority, model names) are checked later, in
resolve, because they span documents.

Every field carries a `description`: `kueue-policy schema` turns these models into the JSON
Schema under schemas/ that editors use for completion and hover text, so the words here are
what a user reads while typing.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from compiler.core.quantity import QUANTITY_PATTERN, QuantityError, Wording, parse_quantity

API_VERSION = "kueue-policy/v1alpha1"
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

DnsLabel = Annotated[str, Field(pattern=DNS_LABEL_PATTERN, min_length=1, max_length=63)]
# Label keys and values as Kubernetes validates them (prefix is a DNS subdomain).
LABEL_KEY_PATTERN = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                     r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
LabelKey = Annotated[str, Field(pattern=LABEL_KEY_PATTERN, max_length=316)]
LabelValue = Annotated[str, Field(pattern=LABEL_VALUE_PATTERN, max_length=63)]
VERSION_PATTERN = r"^\d+\.\d+(\.\d+)?$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_QUANTITY_WORDING = Wording(bad_type="must be a Kubernetes quantity such as 16, 500m or 128Gi")


def _quantity(value: object) -> str:
    """Accept a quantity written as a string or a plain number; keep the user's spelling."""
    try:
        parsed = parse_quantity(value, wording=_QUANTITY_WORDING)
    except QuantityError as error:
        raise ValueError(str(error)) from None
    if parsed < 0:
        raise ValueError(f"quantity {value} is negative")
    if parsed > 10**15:
        raise ValueError(f"quantity {value} is absurdly large")
    return str(value) if not isinstance(value, str) else value.strip()


def _positive_quantity(value: object) -> str:
    """A node's size: a quantity above zero (a node with no cpu or memory is a typo)."""
    text = _quantity(value)
    if parse_quantity(text) == 0:
        raise ValueError(f"quantity {value} is zero; a node offers more than nothing")
    return text


def _quantity_schema(schema: dict) -> None:
    """JSON Schema of a quantity field: the validator accepts `16` as well as "16" and "500m"."""
    nullable = any(option.get("type") == "null" for option in schema.get("anyOf", ()))
    for key in ("type", "anyOf"):
        schema.pop(key, None)
    options: list[dict] = [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": "number", "minimum": 0}]
    schema["anyOf"] = options + ([{"type": "null"}] if nullable else [])



def _version(value: object, example: str) -> str:
    if isinstance(value, float):
        # YAML reads 1.30 as the float 1.3: refuse rather than silently mean the wrong version.
        raise ValueError(f"write the version as a quoted string, e.g. \"{example}\" (YAML reads {value} as a number)")
    return value  # type: ignore[return-value]


class Metadata(Strict):
    name: DnsLabel = Field(description="The document's name, a DNS-1123 label. A Cluster's name names out/<cluster>/ and its root cohort; a Team's name is its ClusterQueue's name.")
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, description="Free-form Kubernetes-style labels for your own tooling; not copied to emitted objects.")
    annotations: dict[str, str] = Field(default_factory=dict, description="Free-form annotations for your own tooling; not copied to emitted objects.")


class ResourcesPerGpu(Strict):
    cpu: str = Field("16", description="CPU quota (a Kubernetes quantity) that comes with each guaranteed or burst GPU; a MIG instance brings its compute-slice share (slices / 7), rounded up to the milli-CPU.", json_schema_extra=_quantity_schema)
    memory: str = Field("128Gi", description="Memory quota (a Kubernetes quantity) that comes with each guaranteed or burst GPU; a MIG instance brings its compute-slice share, rounded up to the MiB.", json_schema_extra=_quantity_schema)

    _check = field_validator("cpu", "memory", mode="before")(lambda cls, v: _quantity(v))


class Taint(Strict):
    key: LabelKey = Field(description="Taint key on the pool's nodes; becomes a ResourceFlavor nodeTaint and the matching toleration Kueue adds to admitted pods.")
    value: LabelValue = Field("", description="Taint value (empty for a key-only taint).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Taint effect, as on the Node.")


class MigLayout(Strict):
    """A fixed per-GPU MIG layout, e.g. {layout: {3g.40gb: 2}}."""
    layout: dict[str, Annotated[StrictInt, Field(ge=1, le=7)]] = Field(min_length=1, description="MIG profile -> instances on every GPU of the pool, e.g. {3g.40gb: 2}; the profiles must fit one GPU of the pool's model.")


HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_TOPOLOGY_LEVELS = 16  # Kueue's Topology.spec.levels maxItems
MAX_SLICE_LAYERS = 3      # Kueue's podset-slice-required-topology-constraints


class TopologyLevel(Strict):
    """One level of a pool's topology, e.g. a rack: the node label naming its domains."""
    nodeLabel: LabelKey = Field(description="The node label whose value names this level's domain (the Kueue "
                                            "Topology level's nodeLabel), e.g. nvidia.com/gpu.clique or "
                                            "kubernetes.io/hostname (only as the last level).")
    holds: Annotated[StrictInt, Field(ge=1, le=100_000)] | None = Field(
        None, description="Regular shape: how many domains of the next level down one domain of this level holds "
                          "(the last level: how many nodes). Omitted on kubernetes.io/hostname (one node) and when "
                          "the shape comes from nodesFrom.")


class PoolTopology(Strict):
    """Where the pool's nodes sit (racks, blocks, NVLink domains): a Kueue Topology for the pool's flavor."""
    name: DnsLabel | None = Field(
        None, description="Name of the Kueue Topology; default: the first pool (in declaration order) with the "
                          "same levels. Pools with the same levels share one Topology.")
    levels: list[TopologyLevel] = Field(
        min_length=1, max_length=64, description="The levels, coarsest first (block, rack, host); at most 16, "
                                  "kubernetes.io/hostname only as the last.")
    nodesFrom: Annotated[str, Field(min_length=1, max_length=1024)] | None = Field(
        None, description="The pool's real nodes instead of a regular shape: a `kubectl get nodes -o yaml` export "
                          "(a List of Nodes), path relative to this cluster file and inside the policy folder. The "
                          "nodes matching the pool's nodeLabels must number `nodes`; their labels give each "
                          "node's domains, their allocatable its GPUs.")

    @model_validator(mode="after")
    def _one_shape(self) -> "PoolTopology":
        unshaped = [level.nodeLabel for level in self.levels
                    if level.holds is None and level.nodeLabel != HOSTNAME_LABEL]
        shaped = [level.nodeLabel for level in self.levels if level.holds is not None]
        if self.nodesFrom is not None and shaped:
            raise ValueError("give the shape as holds on the levels or as nodesFrom, not both "
                             f"({', '.join(shaped)} set holds)")
        if self.nodesFrom is None and unshaped:
            raise ValueError("a regular topology gives every level (but kubernetes.io/hostname) how many domains "
                             f"of the next level it holds; missing on {', '.join(unshaped)} (or give nodesFrom)")
        if any(level.nodeLabel == HOSTNAME_LABEL and level.holds not in (None, 1) for level in self.levels):
            raise ValueError("a kubernetes.io/hostname domain is one node: it holds nothing below it")
        return self

    @property
    def level_labels(self) -> tuple[str, ...]:
        return tuple(level.nodeLabel for level in self.levels)


class NodeAllocatable(Strict):
    """What one node of a pool offers pods (Node.status.allocatable), for the fit check of verdicts."""
    cpu: str | None = Field(None, description="Allocatable CPU of one node (a Kubernetes quantity, e.g. 190 or "
                                              "190500m).", json_schema_extra=_quantity_schema)
    memory: str | None = Field(None, description="Allocatable memory of one node (a Kubernetes quantity, e.g. "
                                                 "1900Gi).", json_schema_extra=_quantity_schema)
    nodesFrom: Annotated[str, Field(min_length=1, max_length=1024)] | None = Field(
        None, description="Instead of cpu and memory: a `kubectl get nodes -o yaml` export in the policy folder "
                          "(path relative to this cluster file); each node matching the pool's nodeLabels is "
                          "checked with its own allocatable.")

    _quantities = field_validator("cpu", "memory", mode="before")(
        lambda cls, v: None if v is None else _positive_quantity(v))

    @model_validator(mode="after")
    def _one_source(self) -> "NodeAllocatable":
        written = [name for name in ("cpu", "memory") if getattr(self, name) is not None]
        if self.nodesFrom is not None and written:
            raise ValueError(f"give the node's allocatable as cpu/memory or as nodesFrom, not both "
                             f"({' and '.join(written)} set)")
        if self.nodesFrom is None and not written:
            raise ValueError("allocatable needs cpu, memory or nodesFrom")
        return self


class Pool(Strict):
    name: DnsLabel = Field(description="Pool name; becomes the ResourceFlavor's name (one flavor per pool).")
    gpu: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")] = Field(
        description="GPU model of every node in the pool, e.g. H100-80GB (MIG pools need a model of the MIG "
                    "catalogue; any name for whole-GPU pools). Teams select pools by it (Team.spec.models).")
    nodes: Annotated[StrictInt, Field(ge=1, le=100_000)] = Field(description="Number of nodes in the pool.")
    gpusPerNode: Annotated[StrictInt, Field(ge=1, le=64)] = Field(
        description="GPUs per node; nodes x gpusPerNode is the pool's GPU capacity, and no single pod may ask for more "
                    "GPUs than one node has.")
    capacity: Literal["on-demand", "spot", "reserved"] = Field(
        "on-demand", description="Capacity class; orders the team's flavors (Team.spec.capacity). reserved ranks with "
                                 "on-demand.")
    nodeLabels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, max_length=8,
        description="Labels that select the pool's nodes; become the ResourceFlavor's nodeLabels (default "
                    "{kueue-policy.io/pool: <name>}).")
    taints: list[Taint] = Field(default_factory=list, max_length=8,
                                description="Taints on the pool's nodes; become the ResourceFlavor's nodeTaints.")
    mig: Literal["none", "planned"] | MigLayout = Field(
        "none", description="none: whole GPUs (nvidia.com/gpu). planned: the compiler chooses the fewest MIG layouts "
                            "that hold the teams' MIG guarantees and emits the mig-manager config. {layout: {...}}: a "
                            "fixed per-GPU layout.")
    allocatable: NodeAllocatable | None = Field(
        None, description="What one node offers pods (Node.status.allocatable cpu and memory), or a node export to "
                          "read it from: a declared workload whose pod fits no node of the pool is never admitted "
                          "there. Omitted: only GPUs per node are checked (or the nodes of topology.nodesFrom).")
    topology: PoolTopology | None = Field(
        None, description="Where the pool's nodes sit: topology levels (node labels, coarsest first) and the shape "
                          "(regular, or the real node list). Becomes a Kueue Topology and the flavor's topologyName, "
                          "so Kueue places a job's pods by domain (Topology Aware Scheduling).")

    @property
    def is_mig(self) -> bool:
        return self.mig != "none"


class CohortSpec(Strict):
    name: DnsLabel = Field(description="Cohort name; becomes a Kueue Cohort. Must differ from the cluster's name "
                                       "(reserved for the root cohort).")
    parent: DnsLabel | None = Field(None, description="Parent cohort (Cohort.spec.parentName); omitted = the cluster's "
                                                      "root cohort.")
    weight: Annotated[StrictFloat, Field(ge=0, le=1000)] = Field(
        1.0, description="Fair-sharing weight (Cohort.spec.fairSharing.weight), written only when fairSharing is "
                         "enabled.")


class PrioritySpec(Strict):
    name: DnsLabel = Field(description="Priority name; becomes a WorkloadPriorityClass.")
    value: Annotated[StrictInt, Field(ge=-2_147_483_648, le=1_000_000_000)] = Field(
        description="WorkloadPriorityClass value: higher is admitted first and may preempt lower.")
    default: StrictBool = Field(False, description="The priority of teams and workloads that name none (at most one "
                                                   "priority may be the default).")
    description: Annotated[str, Field(max_length=2048)] | None = Field(
        None, description="Human-readable text, copied to the WorkloadPriorityClass's description.")


WithinClusterQueue = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
ReclaimWithinCohort = Literal["Never", "LowerPriority", "Any"]


class BorrowWithinCohort(Strict):
    policy: Literal["Never", "LowerPriority"] = Field(
        "Never", description="Whether a workload that borrows may preempt lower-priority workloads of other queues in "
                             "the cohort (ClusterQueue preemption.borrowWithinCohort.policy).")
    maxPriorityThreshold: Annotated[StrictInt, Field(ge=-2_147_483_648, le=2_147_483_647)] | None = Field(
        None, description="Only workloads at or below this priority may be preempted while borrowing.")


class Preemption(Strict):
    withinClusterQueue: WithinClusterQueue = Field(
        "Never", description="Preemption among the team's own workloads (ClusterQueue preemption.withinClusterQueue).")
    reclaimWithinCohort: ReclaimWithinCohort = Field(
        "Never", description="Whether the team may preempt borrowers in its cohort to get its guarantee back "
                             "(preemption.reclaimWithinCohort).")
    borrowWithinCohort: BorrowWithinCohort = Field(
        default_factory=BorrowWithinCohort, description="Preemption while borrowing (preemption.borrowWithinCohort).")


class FairSharing(Strict):
    enabled: StrictBool = Field(False, description="Turn on Kueue's fair sharing: cohorts and ClusterQueues get "
                                                   "fairSharing.weight, and Kueue's Configuration gets fairSharing.")
    preemptionStrategies: list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]] = Field(
        default_factory=lambda: ["LessThanOrEqualToFinalShare", "LessThanInitialShare"], min_length=1, max_length=2,
        description="Kueue Configuration fairSharing.preemptionStrategies, in order.")


class Repository(Strict):
    """Where the compiled out/ lives, for the Argo CD Application / Flux source it needs."""
    url: Annotated[str, Field(min_length=1, max_length=2048)] = Field(
        description="Git URL of the repository that holds out/ (Argo CD repoURL, Flux GitRepository url).")
    revision: Annotated[str, Field(min_length=1, max_length=255)] = Field(
        "main", description="Branch or tag Argo CD / Flux follow (targetRevision, GitRepository ref.branch).")


class WhatIf(Strict):
    """A job trace `diff` and `pr` replay through both sides of a policy change."""
    trace: Annotated[str, Field(min_length=1, max_length=1024,
                                description="Path of a job trace (YAML jobs list, CSV, or a Kueue Workload "
                                            "export), relative to the repository root.")]


# --- Kueue installation and GitOps wiring (kueueConfig, structured gitops) ---------------------

class KueueConfigSpec(Strict):
    """Where the cluster's own Kueue manager Configuration lives, so kueue-policy merges into it."""
    base: Annotated[str, Field(min_length=1, max_length=1024)] | None = Field(
        default=None,
        description="Path, relative to this cluster file, of the Kueue manager "
                    "Configuration the installation runs (controller_manager_config.yaml, apiVersion "
                    "config.kueue.x-k8s.io/v1beta1 or v1beta2). kueue-policy merges deviceClassMappings and "
                    "fairSharing into it and keeps every other setting; without it, Kueue's default "
                    "Configuration for kueueVersion is the base. The file may be anywhere in the git repository the "
                    "policy folder is in (e.g. ../kueue/controller_manager_config.yaml beside the Kueue install); "
                    "a path that leaves the repository is refused, and outside a repository the file must be "
                    "in the policy folder.")


class GitopsDestination(Strict):
    """The Argo CD destination cluster (server URL or registered name) and namespace."""
    server: Annotated[str, Field(min_length=1, max_length=2048)] | None = Field(
        default=None, description="Argo CD destination server URL, e.g. https://kubernetes.default.svc.")
    name: Annotated[str, Field(min_length=1, max_length=253)] | None = Field(
        default=None, description="Argo CD destination cluster name (default: the policy cluster's name).")
    namespace: DnsLabel = Field(default="kueue-system", description="Destination namespace for namespaced objects.")

    @model_validator(mode="after")
    def _one_target(self) -> "GitopsDestination":
        if self.server is not None and self.name is not None:
            raise ValueError("give the destination's server or its name, not both")
        return self


class GitopsSpec(Strict):
    """How Argo CD or Flux syncs this cluster's compiled folder."""
    tool: Literal["argocd", "flux", "kustomize"] = Field(
        default="kustomize", description="The GitOps tool: argocd, flux or kustomize (nothing extra written).")
    project: DnsLabel = Field(default="default", description="Argo CD AppProject of the Application.")
    namespace: DnsLabel | None = Field(
        default=None, description="Namespace of the Argo CD Application / Flux objects "
                                  "(default: argocd for Argo CD, flux-system for Flux).")
    destination: GitopsDestination = Field(
        default_factory=GitopsDestination, description="Argo CD destination; Flux applies to its own cluster.")
    dependsOn: list[DnsLabel] = Field(
        default_factory=lambda: ["kueue"], max_length=32,
        description="Flux Kustomizations (same namespace) this one waits for; for Argo CD, informative "
                    "(use sync waves). Default: the Kueue install, named kueue.")


# `gitops: argocd` or the object; the type of the value picks the branch, so an error is reported
# against the form the user wrote (one message, not one per form).
GitopsSetting = Annotated[
    Annotated[Literal["argocd", "flux", "kustomize"], Tag("tool")] | Annotated[GitopsSpec, Tag("settings")],
    Discriminator(lambda value: "tool" if isinstance(value, str) else "settings")]


def _gitops(value: object) -> object:
    # The short form `gitops: argocd` keeps working: it means {tool: argocd} with every default.
    return GitopsSpec(tool=value) if isinstance(value, str) else value


class ClusterSpec(Strict):
    kubernetesVersion: Annotated[str, Field(pattern=VERSION_PATTERN)] = Field(
        "1.34", description="Kubernetes version of the cluster, quoted (\"1.34\"): gates DRA (resource.k8s.io/v1 "
                            "needs 1.34) and the schemas built-in kinds are checked against.")
    kueueVersion: Annotated[str, Field(pattern=VERSION_PATTERN)] = Field(
        "0.19", description="Kueue version, quoted: 0.15 and later get kueue.x-k8s.io/v1beta2 objects, older "
                            "v1beta1; Cohorts need 0.11, dra-claims 0.18, dra-extended-resource 0.19.")
    gpuAccess: Literal["device-plugin", "dra-extended-resource", "dra-claims"] = Field(
        "device-plugin", description="How pods get GPUs: device-plugin (extended resources), dra-claims "
                                     "(DeviceClasses, ResourceClaimTemplates and Kueue's deviceClassMappings) or "
                                     "dra-extended-resource (DeviceClasses with extendedResourceName).")
    gitops: GitopsSetting = Field(
        default_factory=GitopsSpec,
        description="Delivery: a tool name (argocd: sync waves and an Application; flux: Kustomizations; "
                    "kustomize: kustomization.yaml only, always written) or the settings object (tool, project, "
                    "namespace, destination, dependsOn).")
    queueing: Literal["StrictFIFO", "BestEffortFIFO"] = Field(
        "BestEffortFIFO", description="Default ClusterQueue queueingStrategy for every team.")
    overcommit: Annotated[StrictFloat, Field(gt=0, le=10)] = Field(
        1.0, description="Guarantees placed on a pool may total at most its GPUs x overcommit.")
    resourcesPerGpu: ResourcesPerGpu = Field(
        default_factory=ResourcesPerGpu, description="CPU and memory quota that comes with each GPU of quota.")
    pools: list[Pool] = Field(min_length=1, max_length=256,
                              description="The cluster's GPU node pools; each becomes a ResourceFlavor.")
    cohorts: list[CohortSpec] = Field(
        default_factory=list, max_length=10_000,
        description="The cohort tree; each becomes a Kueue Cohort under a root cohort named after the cluster, "
                    "which holds every GPU no team is guaranteed. Without cohorts teams cannot borrow or lend.")
    priorities: list[PrioritySpec] = Field(default_factory=list, max_length=1_000,
                                           description="Priorities; each becomes a WorkloadPriorityClass.")
    preemption: Preemption = Field(default_factory=Preemption,
                                   description="Default ClusterQueue preemption for every team.")
    fairSharing: FairSharing = Field(default_factory=FairSharing, description="Kueue fair sharing.")
    featureGates: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9]+$")], StrictBool] = Field(
        default_factory=dict, description="Kubernetes feature gates enabled on the cluster, e.g. "
                                          "{DRAExtendedResource: true} for dra-extended-resource before it is on "
                                          "by default.")
    repository: Repository | None = Field(
        None, description="Where out/ lives, for the Argo CD Application / Flux GitRepository; omitted = a "
                          "placeholder URL to replace.")
    whatIf: WhatIf | None = Field(default=None, description="Replay this trace through the policy before and "
                                  "after a change; `diff` and `pr` report what changes per team.")
    kueueConfig: KueueConfigSpec = Field(
        default_factory=KueueConfigSpec,
        description="The Kueue manager Configuration kueue-policy merges its settings into.")
    namespaces: Literal["create", "external"] = Field(
        "create", description="Who creates the teams' namespaces (and the GPU Operator's, for the MIG config): "
                              "create (default) emits a Namespace per namespace, applied before every namespaced "
                              "object and never pruned or deleted by Argo CD or Flux; external leaves them to "
                              "you (they must exist before the first sync).")

    _versions = field_validator("kubernetesVersion", mode="before")(lambda cls, v: _version(v, "1.34"))
    _kueue_versions = field_validator("kueueVersion", mode="before")(lambda cls, v: _version(v, "0.19"))
    # Schema: a tool name or the object; models: always the object (see _gitops).
    _gitops_short = field_validator("gitops", mode="after")(lambda cls, v: _gitops(v))


class GpuBudget(Strict):
    guaranteed: Annotated[StrictInt, Field(ge=0, le=1_000_000)] = Field(
        0, description="Whole GPUs the team is guaranteed: nominalQuota of nvidia.com/gpu, placed on the pools it "
                       "accepts in preference order.")
    burst: Annotated[StrictInt, Field(ge=0, le=1_000_000)] | None = Field(
        None, description="GPUs the team may use beyond its guarantee, in total over all its pools: it never holds "
                          "more than guaranteed + burst. Split into the borrowingLimits of its whole-GPU flavors, "
                          "where its guarantee sits first, then in its flavor order (each taking what it can lend "
                          "the team); omitted = no limit. Needs a cohort.")
    lend: Annotated[StrictInt, Field(ge=0, le=1_000_000)] | None = Field(
        None, description="GPUs of the guarantee others may borrow while idle, in total: lendingLimits summing to it, "
                          "the un-lent part kept on the most preferred flavors; omitted = lends all idle quota. At most guaranteed; needs a "
                          "cohort.")


class TopologySlice(Strict):
    """`size` pods of the workload in one domain of `level` (Kueue's slice-required topology)."""
    level: LabelKey = Field(description="The topology level (a node label of the pool's topology) each slice "
                                        "must fit in.")
    size: Annotated[StrictInt, Field(ge=1, le=100_000)] = Field(
        description="Pods per slice; must divide the workload's replicas (and, from the second layer, the size of "
                    "the layer above).")


class WorkloadTopology(Strict):
    """Where the workload's pods must (or should) land, in the terms of its pools' topology levels."""
    required: LabelKey | None = Field(
        None, description="All pods in one domain of this level, or not admitted (podset-required-topology).")
    preferred: LabelKey | None = Field(
        None, description="All pods in one domain of this level if they fit, else the next level up, else spread "
                          "(podset-preferred-topology).")
    slices: list[TopologySlice] = Field(
        default_factory=list, max_length=MAX_SLICE_LAYERS,
        description="Up to three layers, coarsest first: each slice of `size` pods in one domain of `level` "
                    "(podset-slice-required-topology and podset-slice-size; two or three layers: "
                    "podset-slice-required-topology-constraints, Kueue >= 0.19).")

    @model_validator(mode="after")
    def _one_constraint(self) -> "WorkloadTopology":
        if self.required is not None and self.preferred is not None:
            raise ValueError("a workload's topology is required or preferred, not both")
        if self.required is None and self.preferred is None and not self.slices:
            raise ValueError("a workload's topology names a required or preferred level, or slices")
        return self


class DeclaredWorkload(Strict):
    name: DnsLabel = Field(description="Workload name (unique in the team), used in verdicts and reports.")
    replicas: Annotated[StrictInt, Field(ge=1, le=100_000)] = Field(
        1, description="Pods that must start together (Kueue admits a workload whole or not at all).")
    gpus: Annotated[StrictInt, Field(ge=0, le=64)] | None = Field(None, description="Whole GPUs per replica.")
    mig: Annotated[str, Field(min_length=1, max_length=32)] | None = Field(
        None, description="One MIG instance of this profile per replica, e.g. 1g.10gb.")
    # GPU memory one replica needs: mapped to the smallest MIG profile whose *real* memory covers it.
    gpuMemory: str | None = Field(
        None, description="GPU memory per replica (a quantity such as 12Gi): the smallest MIG profile whose usable "
                          "memory holds it.", json_schema_extra=_quantity_schema)
    cpu: str | None = Field(None, description="CPU per replica; default: the share that comes with its GPUs or MIG "
                                              "instance.", json_schema_extra=_quantity_schema)
    memory: str | None = Field(None, description="Memory per replica; default: the share that comes with its GPUs or "
                                                 "MIG instance.", json_schema_extra=_quantity_schema)
    priority: DnsLabel | None = Field(None, description="Priority of this workload; default: the team's.")
    gang: StrictBool = Field(False, description="Replicas talk to each other (NCCL): refused on MIG slices, which "
                                                "have no peer-to-peer path.")
    topology: WorkloadTopology | None = Field(
        None, description="Where the replicas must or should land (a required or preferred level, slices); "
                          "omitted = anywhere. REPORT.md shows the annotations the job's pod template carries.")

    _quantities = field_validator("cpu", "memory", "gpuMemory", mode="before")(
        lambda cls, v: None if v is None else _quantity(v))

    @model_validator(mode="after")
    def _asks_for_something(self) -> "DeclaredWorkload":
        asked = [name for name in ("gpus", "mig", "gpuMemory") if getattr(self, name) is not None]
        if len(asked) > 1:
            raise ValueError(f"a workload asks for whole GPUs (gpus), one MIG instance (mig) or GPU memory "
                             f"(gpuMemory), not {' and '.join(asked)}")
        if not self.gpus and self.mig is None and self.gpuMemory is None and self.cpu is None and self.memory is None:
            raise ValueError("a workload must ask for gpus, a mig instance, gpuMemory, or cpu/memory")
        return self


class TeamSpec(Strict):
    cluster: DnsLabel | None = Field(None, description="The Cluster this team runs on; may be omitted when the policy "
                                                       "has one cluster.")
    cohort: DnsLabel | None = Field(None, description="Cohort of the team's ClusterQueue (cohortName); default: the "
                                                      "cluster's first root cohort, or none.")
    namespaces: list[DnsLabel] = Field(
        min_length=1, max_length=1_000,
        description="The team's namespaces: the ClusterQueue's namespaceSelector and one LocalQueue named default in "
                    "each. A namespace belongs to one team.")
    gpus: GpuBudget = Field(default_factory=GpuBudget, description="Whole-GPU quota: guarantee, burst and lend.")
    capacity: Literal["on-demand-first", "spot-first", "on-demand-only", "spot-only"] = Field(
        "on-demand-first", description="Which capacity classes the team accepts and which it tries first (the "
                                       "ClusterQueue's flavor order).")
    models: list[Annotated[str, Field(min_length=1, max_length=63)]] | None = Field(
        default=None, min_length=1,
        description="Acceptable GPU models in preference order (pool gpu names); omitted = every pool.")
    mig: dict[Annotated[str, Field(min_length=1, max_length=32)], Annotated[StrictInt, Field(ge=0, le=100_000)]] = (
        Field(default_factory=dict, description="Guaranteed MIG instances by profile, e.g. {1g.10gb: 8}: "
                                                "nominalQuota of nvidia.com/mig-<profile> on the MIG pools."))
    priority: DnsLabel | None = Field(None, description="Default priority of the team's workloads; default: the "
                                                        "cluster's default priority.")
    weight: Annotated[StrictFloat, Field(ge=0, le=1000)] = Field(
        1.0, description="Fair-sharing weight of the ClusterQueue (with fairSharing enabled).")
    queueing: Literal["StrictFIFO", "BestEffortFIFO"] | None = Field(
        None, description="queueingStrategy of the team's ClusterQueue; default: the cluster's.")
    preemption: Preemption | None = Field(None, description="Preemption of the team's ClusterQueue; default: the "
                                                            "cluster's (replaced whole, not merged).")
    # CODEOWNERS entries: @user, @org/team or an e-mail address.
    owners: list[Annotated[str, Field(pattern=r"^(@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+)$")]] = (
        Field(default_factory=list, description="CODEOWNERS entries for this team's policy file (@user, @org/team or "
                                                "an e-mail address); written to out/CODEOWNERS."))
    workloads: list[DeclaredWorkload] = Field(
        default_factory=list, max_length=1_000,
        description="Job shapes the team promises to run; each gets a verdict: guaranteed, borrowing or never.")


class ClusterDocument(Strict):
    """A cluster: its GPU pools and the rules every team shares (owned by the platform team)."""
    apiVersion: Literal["kueue-policy/v1alpha1"] = Field(description="Always kueue-policy/v1alpha1.")
    kind: Literal["Cluster"] = Field(description="Cluster.")
    metadata: Metadata = Field(description="The cluster's name (and free-form labels/annotations).")
    spec: ClusterSpec = Field(description="What the cluster has and the rules every team shares.")


class TeamDocument(Strict):
    """A team: its namespaces, GPU budget and the job shapes it runs (owned by that team)."""
    apiVersion: Literal["kueue-policy/v1alpha1"] = Field(description="Always kueue-policy/v1alpha1.")
    kind: Literal["Team"] = Field(description="Team.")
    metadata: Metadata = Field(description="The team's name (its ClusterQueue's name).")
    spec: TeamSpec = Field(description="What the team needs and runs.")


DOCUMENT_MODELS: dict[str, type[Strict]] = {"Cluster": ClusterDocument, "Team": TeamDocument}
