"""The policy language `kueue-policy/v1alpha1` as typed models (see POLICY.md).

These models describe what a user may write, nothing more: `extra="forbid"` everywhere, strict
types (a count is an integer, not "4" and not 4.0), bounded numbers (an absurd value is a typo,
not a plan). Cross-references (cluster, cohort, priority, model names) are checked later, in
resolve, because they span documents.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from compiler.quantity import QuantityError, parse_quantity

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


def _quantity(value: object) -> str:
    """Accept a quantity written as a string or a plain number; keep the user's spelling."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("must be a Kubernetes quantity such as 16, 500m or 128Gi")
    try:
        parsed = parse_quantity(value)
    except QuantityError as error:
        raise ValueError(str(error)) from None
    if parsed < 0:
        raise ValueError(f"quantity {value} is negative")
    if parsed > 10**15:
        raise ValueError(f"quantity {value} is absurdly large")
    return str(value) if not isinstance(value, str) else value.strip()


def _version(value: object, example: str) -> str:
    if isinstance(value, float):
        # YAML reads 1.30 as the float 1.3: refuse rather than silently mean the wrong version.
        raise ValueError(f"write the version as a quoted string, e.g. \"{example}\" (YAML reads {value} as a number)")
    return value  # type: ignore[return-value]


class Metadata(Strict):
    name: DnsLabel
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class ResourcesPerGpu(Strict):
    cpu: str = "16"
    memory: str = "128Gi"

    _check = field_validator("cpu", "memory", mode="before")(lambda cls, v: _quantity(v))


class Taint(Strict):
    key: LabelKey
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class MigLayout(Strict):
    """A fixed per-GPU MIG layout, e.g. {layout: {3g.40gb: 2}}."""
    layout: dict[str, Annotated[StrictInt, Field(ge=1, le=7)]] = Field(min_length=1)


class Pool(Strict):
    name: DnsLabel
    gpu: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")]
    nodes: Annotated[StrictInt, Field(ge=1, le=100_000)]
    gpusPerNode: Annotated[StrictInt, Field(ge=1, le=64)]
    capacity: Literal["on-demand", "spot", "reserved"] = "on-demand"
    nodeLabels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=8)
    taints: list[Taint] = Field(default_factory=list, max_length=8)
    mig: Literal["none", "planned"] | MigLayout = "none"

    @property
    def is_mig(self) -> bool:
        return self.mig != "none"


class CohortSpec(Strict):
    name: DnsLabel
    parent: DnsLabel | None = None
    weight: Annotated[StrictFloat, Field(ge=0, le=1000)] = 1.0


class PrioritySpec(Strict):
    name: DnsLabel
    value: Annotated[StrictInt, Field(ge=-2_147_483_648, le=1_000_000_000)]
    default: StrictBool = False
    description: Annotated[str, Field(max_length=2048)] | None = None


WithinClusterQueue = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
ReclaimWithinCohort = Literal["Never", "LowerPriority", "Any"]


class BorrowWithinCohort(Strict):
    policy: Literal["Never", "LowerPriority"] = "Never"
    maxPriorityThreshold: Annotated[StrictInt, Field(ge=-2_147_483_648, le=2_147_483_647)] | None = None


class Preemption(Strict):
    withinClusterQueue: WithinClusterQueue = "Never"
    reclaimWithinCohort: ReclaimWithinCohort = "Never"
    borrowWithinCohort: BorrowWithinCohort = Field(default_factory=BorrowWithinCohort)


class FairSharing(Strict):
    enabled: StrictBool = False
    preemptionStrategies: list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]] = Field(
        default_factory=lambda: ["LessThanOrEqualToFinalShare", "LessThanInitialShare"], min_length=1, max_length=2)


class Repository(Strict):
    """Where the compiled out/ lives, for the Argo CD Application / Flux source it needs."""
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    revision: Annotated[str, Field(min_length=1, max_length=255)] = "main"


# --- Kueue installation and GitOps wiring (kueueConfig, structured gitops) ---------------------

class KueueConfigSpec(Strict):
    """Where the cluster's own Kueue manager Configuration lives, so kueue-policy merges into it."""
    base: Annotated[str, Field(min_length=1, max_length=1024)] | None = Field(
        default=None,
        description="Path, relative to this cluster file and inside the policy folder, of the Kueue manager "
                    "Configuration the installation runs (controller_manager_config.yaml, apiVersion "
                    "config.kueue.x-k8s.io/v1beta1 or v1beta2). kueue-policy merges deviceClassMappings and "
                    "fairSharing into it and keeps every other setting; without it, Kueue's default "
                    "Configuration for kueueVersion is the base.")


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
    kubernetesVersion: Annotated[str, Field(pattern=VERSION_PATTERN)] = "1.34"
    kueueVersion: Annotated[str, Field(pattern=VERSION_PATTERN)] = "0.19"
    gpuAccess: Literal["device-plugin", "dra-extended-resource", "dra-claims"] = "device-plugin"
    gitops: GitopsSetting = Field(default_factory=GitopsSpec)
    queueing: Literal["StrictFIFO", "BestEffortFIFO"] = "BestEffortFIFO"
    overcommit: Annotated[StrictFloat, Field(gt=0, le=10)] = 1.0
    resourcesPerGpu: ResourcesPerGpu = Field(default_factory=ResourcesPerGpu)
    pools: list[Pool] = Field(min_length=1, max_length=256)
    cohorts: list[CohortSpec] = Field(default_factory=list, max_length=10_000)
    priorities: list[PrioritySpec] = Field(default_factory=list, max_length=1_000)
    preemption: Preemption = Field(default_factory=Preemption)
    fairSharing: FairSharing = Field(default_factory=FairSharing)
    featureGates: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9]+$")], StrictBool] = Field(default_factory=dict)
    repository: Repository | None = None
    # --- added by the Kueue-configuration / GitOps work (own block, see above) ---
    kueueConfig: KueueConfigSpec = Field(
        default_factory=KueueConfigSpec,
        description="The Kueue manager Configuration kueue-policy merges its settings into.")

    _versions = field_validator("kubernetesVersion", mode="before")(lambda cls, v: _version(v, "1.34"))
    _kueue_versions = field_validator("kueueVersion", mode="before")(lambda cls, v: _version(v, "0.19"))
    # Schema: a tool name or the object; models: always the object (see _gitops).
    _gitops_short = field_validator("gitops", mode="after")(lambda cls, v: _gitops(v))


class GpuBudget(Strict):
    guaranteed: Annotated[StrictInt, Field(ge=0, le=1_000_000)] = 0
    burst: Annotated[StrictInt, Field(ge=0, le=1_000_000)] | None = None
    lend: Annotated[StrictInt, Field(ge=0, le=1_000_000)] | None = None


class DeclaredWorkload(Strict):
    name: DnsLabel
    replicas: Annotated[StrictInt, Field(ge=1, le=100_000)] = 1
    gpus: Annotated[StrictInt, Field(ge=0, le=64)] | None = None
    mig: Annotated[str, Field(min_length=1, max_length=32)] | None = None
    # GPU memory one replica needs: mapped to the smallest MIG profile whose *real* memory covers it.
    gpuMemory: str | None = None
    cpu: str | None = None
    memory: str | None = None
    priority: DnsLabel | None = None
    gang: StrictBool = False

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
    cluster: DnsLabel | None = None
    cohort: DnsLabel | None = None
    namespaces: list[DnsLabel] = Field(min_length=1, max_length=1_000)
    gpus: GpuBudget = Field(default_factory=GpuBudget)
    capacity: Literal["on-demand-first", "spot-first", "on-demand-only", "spot-only"] = "on-demand-first"
    models: list[Annotated[str, Field(min_length=1, max_length=63)]] | None = Field(default=None, min_length=1)
    mig: dict[Annotated[str, Field(min_length=1, max_length=32)], Annotated[StrictInt, Field(ge=0, le=100_000)]] = (
        Field(default_factory=dict))
    priority: DnsLabel | None = None
    weight: Annotated[StrictFloat, Field(ge=0, le=1000)] = 1.0
    queueing: Literal["StrictFIFO", "BestEffortFIFO"] | None = None
    preemption: Preemption | None = None
    # CODEOWNERS entries: @user, @org/team or an e-mail address.
    owners: list[Annotated[str, Field(pattern=r"^(@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+)$")]] = (
        Field(default_factory=list))
    workloads: list[DeclaredWorkload] = Field(default_factory=list, max_length=1_000)


class ClusterDocument(Strict):
    apiVersion: Literal["kueue-policy/v1alpha1"]
    kind: Literal["Cluster"]
    metadata: Metadata
    spec: ClusterSpec


class TeamDocument(Strict):
    apiVersion: Literal["kueue-policy/v1alpha1"]
    kind: Literal["Team"]
    metadata: Metadata
    spec: TeamSpec


DOCUMENT_MODELS: dict[str, type[Strict]] = {"Cluster": ClusterDocument, "Team": TeamDocument}
