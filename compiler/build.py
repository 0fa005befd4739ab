"""Stage 5, build: resolved cluster + placement -> Kubernetes objects (plain dicts).

Kueue objects are rendered from the Jinja2 templates in `templates/kueue/` with a typed context,
then parsed back, so the templates are the single readable description of what each object looks
like. Quota arithmetic happens here, in exact fractions, and is formatted once.

Every object remembers the policy position that caused it (`BuiltObject.origin`): verify uses it
to report an API-server refusal at the user's line, emit writes it into the file header.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from compiler.dra.classes import build_dra_objects
from compiler.errors import SourcePosition
from compiler.mig.catalogue import load_catalogue, mig_resource_name
from compiler.mig.mig_manager import assign_nodes, mig_manager_config, mig_manager_configmap
from compiler.model import GPU_RESOURCE, ResolvedCluster, ResolvedPool, ResolvedTeam
from compiler.plan import Placement
from compiler.quantity import format_quantity, parse_quantity
from compiler.templating import render_object

MANAGED_BY = {"app.kubernetes.io/managed-by": "kueue-policy"}

# Argo CD applies lower waves first and waits for them to be healthy.
WAVE_FOUNDATION = 0   # ResourceFlavors, Cohorts, WorkloadPriorityClasses, DeviceClasses
WAVE_QUEUES = 1       # ClusterQueues
WAVE_NAMESPACED = 2   # LocalQueues, ResourceClaimTemplates

CPU, MEMORY = "cpu", "memory"


@dataclass(frozen=True)
class Origin:
    """The policy node an object comes from. The line is looked up only when asked for: a valid
    policy never needs it, and looking it up costs a round-trip parse of the file."""

    located: Any  # compiler.validate.Located
    node_path: tuple

    @property
    def file(self) -> str:
        return self.located.path

    @property
    def position(self) -> SourcePosition:
        return self.located.position(*self.node_path)


@dataclass
class BuiltObject:
    obj: dict[str, Any]
    origin: Origin
    wave: int
    # Path under out/<cluster>/, e.g. "kueue/clusterqueues/alpha.yaml".
    relpath: str
    # Patches for objects another application owns (Kueue's ConfigMap and Deployment) are
    # written beside the manifests but are not resources of the cluster's kustomization.
    is_patch: bool = False

    @property
    def kind(self) -> str:
        return self.obj["kind"]

    @property
    def name(self) -> str:
        return self.obj["metadata"]["name"]


@dataclass
class BuildResult:
    objects: list[BuiltObject] = field(default_factory=list)
    # team -> flavor -> resource -> {nominal, borrowingLimit, lendingLimit} (formatted quantities)
    quota: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # pool -> MIG node groups (which nodes get which nvidia.com/mig.config)
    mig_nodes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The Kueue Configuration fragment this policy needs (deviceClassMappings, fairSharing).
    kueue_config_fragment: dict[str, Any] | None = None
    # Files that are not Kubernetes objects (the Kueue Helm values), path relative to out/<cluster>/.
    extra_files: dict[str, str] = field(default_factory=dict)
    # quota resource name -> DeviceClasses (dra-claims / dra-extended-resource)
    resource_classes: dict[str, list[str]] = field(default_factory=dict)




@dataclass
class FlavorQuota:
    """One resource's quota in one flavor, before formatting."""
    nominal: Fraction
    borrowing_limit: Fraction | None = None
    lending_limit: Fraction | None = None


def round_cpu(value: Fraction) -> Fraction:
    """Up to the next milli-CPU: Kubernetes' finest CPU unit."""
    return Fraction(math.ceil(value * 1000), 1000)


def round_memory(value: Fraction) -> Fraction:
    """Up to the next whole MiB: exact bytes of 3/7 of 128Gi are unreadable."""
    mib = 2**20
    return Fraction(math.ceil(value / mib) * mib)


def instance_share(cluster: ResolvedCluster, pool: ResolvedPool, profile: str) -> tuple[Fraction, Fraction]:
    """The cpu and memory that come with one MIG instance: its compute slices' share of a GPU's
    resourcesPerGpu, rounded up (POLICY.md: compute slices / 7)."""
    gpu = load_catalogue().model(pool.spec.gpu)
    mig_profile = gpu.profile(profile) if gpu else None
    if mig_profile is None:
        return Fraction(0), Fraction(0)
    share = Fraction(mig_profile.compute_slices, gpu.compute_slices)
    return (round_cpu(share * parse_quantity(cluster.spec.resourcesPerGpu.cpu)),
            round_memory(share * parse_quantity(cluster.spec.resourcesPerGpu.memory)))


def _fmt(resource: str, value: Fraction | None) -> str | None:
    if value is None:
        return None
    if resource == MEMORY:
        # Round memory up to whole MiB: exact bytes of 3/7 of 128Gi are unreadable.
        mib = 2**20
        value = Fraction(-(-value.numerator // (value.denominator * mib)) * mib) if value % mib else value
        return format_quantity(value, binary=True)
    return format_quantity(value)


class ClusterBuilder:
    def __init__(self, cluster: ResolvedCluster, placement: Placement):
        self.cluster = cluster
        self.placement = placement
        self.api_version = cluster.kueue_api_version
        self.catalogue = load_catalogue()
        spec = cluster.spec
        self.cpu_per_gpu = parse_quantity(spec.resourcesPerGpu.cpu)
        self.memory_per_gpu = parse_quantity(spec.resourcesPerGpu.memory)
        self.labels = {**MANAGED_BY, "kueue-policy.io/cluster": cluster.name}
        self.argocd = spec.gitops.tool == "argocd"
        self.covered = self._covered_resources()

    # --- shared helpers ---------------------------------------------------------------------
    def _annotations(self, wave: int) -> dict[str, str]:
        if not self.argocd:
            return {}
        return {"argocd.argoproj.io/sync-wave": str(wave),
                # Kueue's CRDs are installed by another Application: skip the dry run that would
                # fail before they exist on a fresh cluster.
                "argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true"}

    def _mig_profiles_of(self, pool: ResolvedPool) -> list[str]:
        plan = self.placement.mig_plans.get(pool.name)
        return sorted(plan.instances()) if plan else []

    def _covered_resources(self) -> list[str]:
        """cpu, memory, whole GPUs, then every MIG resource that physically exists (sorted)."""
        mig = sorted({mig_resource_name(p) for pool in self.cluster.pools for p in self._mig_profiles_of(pool)}
                     | {mig_resource_name(p) for team in self.cluster.teams for p in team.mig})
        return [CPU, MEMORY, GPU_RESOURCE, *mig]

    def _cpu_memory(self, pool: ResolvedPool, gpus: int, mig: dict[str, int]) -> tuple[Fraction, Fraction]:
        """cpu and memory that come with whole GPUs and MIG instances on this pool.

        An instance's share is rounded up once, per instance, exactly as a pod asking for one
        instance gets it by default: N such pods then fit N instances' quota to the milli-CPU."""
        cpu = Fraction(gpus) * self.cpu_per_gpu
        memory = Fraction(gpus) * self.memory_per_gpu
        for profile, count in mig.items():
            instance_cpu, instance_memory = instance_share(self.cluster, pool, profile)
            cpu += instance_cpu * count
            memory += instance_memory * count
        return cpu, memory

    def _flavor_resources(self, quotas: dict[str, FlavorQuota]) -> list[dict[str, Any]]:
        return [{"name": resource,
                 "nominal": _fmt(resource, quotas[resource].nominal) if resource in quotas else "0",
                 "borrowing_limit": _fmt(resource, quotas[resource].borrowing_limit) if resource in quotas else None,
                 "lending_limit": _fmt(resource, quotas[resource].lending_limit) if resource in quotas else None}
                for resource in self.covered]

    # --- objects ----------------------------------------------------------------------------
    def resource_flavor(self, pool: ResolvedPool) -> BuiltObject:
        spec = pool.spec
        node_labels = dict(sorted(spec.nodeLabels.items())) or {"kueue-policy.io/pool": pool.name}
        obj = render_object("kueue/resourceflavor.yaml.j2", api_version=self.api_version, name=pool.flavor,
                              labels={**self.labels, "kueue-policy.io/pool": pool.name},
                              annotations=self._annotations(WAVE_FOUNDATION), node_labels=node_labels,
                              taints=[t.model_dump() for t in spec.taints])
        return BuiltObject(obj, Origin(self.cluster.located, ("spec", "pools", pool.index)), WAVE_FOUNDATION,
                           f"kueue/resourceflavors/{pool.flavor}.yaml")

    def root_cohort(self) -> BuiltObject:
        """The cluster's root cohort: it owns every GPU (and its cpu/memory) no team is guaranteed."""
        flavors = []
        for pool in self.cluster.pools:
            quotas: dict[str, FlavorQuota] = {}
            if pool.is_mig:
                plan = self.placement.mig_plans.get(pool.name)
                have = plan.instances() if plan else {}
                guaranteed = self.placement.mig_guaranteed_on(pool.name)
                free = {p: max(0, n - guaranteed.get(p, 0)) for p, n in have.items()}
                for profile, count in free.items():
                    quotas[mig_resource_name(profile)] = FlavorQuota(Fraction(count))
                cpu, memory = self._cpu_memory(pool, 0, free)
            else:
                free_gpus = max(0, pool.gpus - self.placement.guaranteed_on(pool.name))
                quotas[GPU_RESOURCE] = FlavorQuota(Fraction(free_gpus))
                cpu, memory = self._cpu_memory(pool, free_gpus, {})
            quotas[CPU] = FlavorQuota(cpu)
            quotas[MEMORY] = FlavorQuota(memory)
            flavors.append({"name": pool.flavor, "resources": self._flavor_resources(quotas)})
        fair = self._fair_weight(1.0)
        obj = render_object("kueue/cohort.yaml.j2", api_version=self.api_version, name=self.cluster.root_cohort,
                              labels=self.labels, annotations=self._annotations(WAVE_FOUNDATION), parent=None,
                              fair_weight=fair,
                              resource_groups=[{"covered": self.covered, "flavors": flavors}])
        return BuiltObject(obj, Origin(self.cluster.located, ("spec", "pools")), WAVE_FOUNDATION,
                           f"kueue/cohorts/{self.cluster.root_cohort}.yaml")

    def _fair_weight(self, weight: float) -> str | None:
        if not self.cluster.spec.fairSharing.enabled:
            return None
        return format_quantity(Fraction(str(weight)))

    def cohort(self, cohort) -> BuiltObject:
        obj = render_object("kueue/cohort.yaml.j2", api_version=self.api_version, name=cohort.spec.name,
                              labels=self.labels, annotations=self._annotations(WAVE_FOUNDATION),
                              parent=cohort.parent, fair_weight=self._fair_weight(cohort.spec.weight),
                              resource_groups=[])
        return BuiltObject(obj, Origin(self.cluster.located, ("spec", "cohorts", cohort.index)), WAVE_FOUNDATION,
                           f"kueue/cohorts/{cohort.spec.name}.yaml")

    def priority_class(self, index: int) -> BuiltObject:
        priority = self.cluster.priorities[index]
        obj = render_object("kueue/workloadpriorityclass.yaml.j2", api_version=self.api_version,
                              name=priority.name, labels=self.labels,
                              annotations=self._annotations(WAVE_FOUNDATION), value=priority.value,
                              description=priority.description)
        return BuiltObject(obj, Origin(self.cluster.located, ("spec", "priorities", index)), WAVE_FOUNDATION,
                           f"kueue/workloadpriorityclasses/{priority.name}.yaml")

    def team_quotas(self, team: ResolvedTeam) -> dict[str, dict[str, FlavorQuota]]:
        """flavor -> resource -> quota, for every flavor of the team's ClusterQueue."""
        gpus = team.spec.gpus
        placed = self.placement.gpus.get(team.name, {})
        mig_placed = self.placement.mig.get(team.name, {})
        in_cohort = team.cohort is not None
        # lend: the part of the guarantee NOT lent stays private; keep it on the preferred flavors.
        private_left = (gpus.guaranteed - gpus.lend) if (in_cohort and gpus.lend is not None) else None
        result: dict[str, dict[str, FlavorQuota]] = {}
        for pool in team.flavor_pools:
            quotas: dict[str, FlavorQuota] = {}
            nominal_gpus = placed.get(pool.name, 0)
            mig = mig_placed.get(pool.name, {})
            burst = gpus.burst if in_cohort else None
            if not pool.is_mig:
                lend_gpus = None
                if private_left is not None:
                    private = min(private_left, nominal_gpus)
                    private_left -= private
                    lend_gpus = nominal_gpus - private
                quotas[GPU_RESOURCE] = FlavorQuota(Fraction(nominal_gpus),
                                                   None if burst is None else Fraction(burst),
                                                   None if lend_gpus is None else Fraction(lend_gpus))
                cpu, memory = self._cpu_memory(pool, nominal_gpus, {})
                lend_equivalents = None if lend_gpus is None else Fraction(lend_gpus)
            else:
                gpu_model = self.catalogue.model(pool.spec.gpu)
                for profile in self._mig_profiles_of(pool) or sorted(mig):
                    mig_profile = gpu_model.profile(profile) if gpu_model else None
                    per_gpu = mig_profile.max_count if mig_profile else 1
                    quotas[mig_resource_name(profile)] = FlavorQuota(
                        Fraction(mig.get(profile, 0)), None if burst is None else Fraction(burst * per_gpu))
                cpu, memory = self._cpu_memory(pool, 0, mig)
                lend_equivalents = None
            burst_equivalents = None if burst is None else Fraction(burst)
            quotas[CPU] = FlavorQuota(cpu,
                                      None if burst_equivalents is None else burst_equivalents * self.cpu_per_gpu,
                                      None if lend_equivalents is None else lend_equivalents * self.cpu_per_gpu)
            quotas[MEMORY] = FlavorQuota(memory,
                                         None if burst_equivalents is None else burst_equivalents * self.memory_per_gpu,
                                         None if lend_equivalents is None else lend_equivalents * self.memory_per_gpu)
            result[pool.flavor] = quotas
        return result

    def cluster_queue(self, team: ResolvedTeam, quotas: dict[str, dict[str, FlavorQuota]]) -> BuiltObject:
        flavors = [{"name": flavor, "resources": self._flavor_resources(per)} for flavor, per in quotas.items()]
        preemption = team.preemption.model_dump()
        obj = render_object("kueue/clusterqueue.yaml.j2", api_version=self.api_version, name=team.name,
                              labels={**self.labels, "kueue-policy.io/team": team.name},
                              annotations=self._annotations(WAVE_QUEUES),
                              cohort_field="cohortName" if self.api_version.endswith("v1beta2") else "cohort",
                              cohort=team.cohort, namespaces=sorted(team.namespaces), queueing=team.queueing,
                              preemption=preemption, fair_weight=self._fair_weight(team.weight),
                              resource_groups=[{"covered": self.covered, "flavors": flavors}] if flavors else [])
        if not flavors:
            obj["spec"]["resourceGroups"] = []
        return BuiltObject(obj, Origin(team.located, ("spec",)), WAVE_QUEUES,
                           f"kueue/clusterqueues/{team.name}.yaml")

    def local_queue(self, team: ResolvedTeam, index: int) -> BuiltObject:
        namespace = team.namespaces[index]
        annotations = self._annotations(WAVE_NAMESPACED)
        if team.priority:
            # Kueue has no per-queue default priority; the annotation records the team's intent for
            # admission policies (and for people) to apply as the kueue.x-k8s.io/priority-class label.
            annotations = {**annotations, "kueue-policy.io/default-priority-class": team.priority}
        obj = render_object("kueue/localqueue.yaml.j2", api_version=self.api_version, name="default",
                              namespace=namespace, labels={**self.labels, "kueue-policy.io/team": team.name},
                              annotations=annotations, cluster_queue=team.name)
        return BuiltObject(obj, Origin(team.located, ("spec", "namespaces", index)), WAVE_NAMESPACED,
                           f"kueue/localqueues/{namespace}.default.yaml")

    # --- the device side: DRA classes and claims, MIG layouts, Kueue's configuration ----------
    def _team_devices(self, team: ResolvedTeam) -> list[tuple[str, str | None]]:
        """(model, MIG profile or None) pairs the team's namespaces may request."""
        devices = {(pool.spec.gpu, None) for pool in team.gpu_pools}
        profiles = set(team.mig) | {w.mig for w in team.workloads if w.mig}
        for pool in team.mig_pools:
            for profile in profiles:
                if self.catalogue.profile(pool.spec.gpu, profile) is not None:
                    devices.add((pool.spec.gpu, profile))
        return sorted(devices, key=lambda d: (d[0], d[1] or ""))

    def device_side(self, result: BuildResult) -> None:
        spec = self.cluster.spec
        position = Origin(self.cluster.located, ("spec", "gpuAccess"))
        namespace_devices = {ns: self._team_devices(team) for team in self.cluster.teams for ns in team.namespaces}
        gates = [name for name, on in spec.featureGates.items() if on]
        dra = build_dra_objects(spec.gpuAccess, spec.kubernetesVersion, namespace_devices, feature_gates=gates)
        result.resource_classes = dra.resource_classes
        for device_class in dra.device_classes:
            device_class["metadata"]["labels"] = {**device_class["metadata"].get("labels", {}), **self.labels}
            device_class["metadata"]["annotations"] = {**device_class["metadata"].get("annotations", {}),
                                                       **self._annotations(WAVE_FOUNDATION)}
            result.objects.append(BuiltObject(device_class, position, WAVE_FOUNDATION,
                                              f"dra/deviceclasses/{device_class['metadata']['name']}.yaml"))
        for template in dra.claim_templates:
            meta = template["metadata"]
            meta["labels"] = {**meta.get("labels", {}), **self.labels}
            if self.argocd:
                meta["annotations"] = {**meta.get("annotations", {}), **self._annotations(WAVE_NAMESPACED)}
            team = next(t for t in self.cluster.teams if meta["namespace"] in t.namespaces)
            result.objects.append(BuiltObject(
                template, Origin(team.located, ("spec", "namespaces", team.namespaces.index(meta["namespace"]))),
                WAVE_NAMESPACED, f"dra/resourceclaimtemplates/{meta['namespace']}.{meta['name']}.yaml"))
        fragment: dict[str, Any] = dict(dra.mapping_fragment or {})
        if spec.fairSharing.enabled:
            fragment["fairSharing"] = {"preemptionStrategies": list(spec.fairSharing.preemptionStrategies)}
        if fragment:
            # The component itself (merged into the user's or Kueue's Configuration) is compiler/kueue_config.py's.
            result.kueue_config_fragment = fragment
        self._mig_side(result)

    def _mig_side(self, result: BuildResult) -> None:
        configs: dict[str, Any] = {}
        filters: set[str] = set()
        for pool_name, plan in sorted(self.placement.mig_plans.items()):
            pool = plan.pool
            assignment = assign_nodes([(l.count, l.profiles) for l in plan.layouts], pool.spec.nodes,
                                      pool.spec.gpusPerNode, pool.spec.gpu)
            configs.update(assignment.configs)
            gpu = self.catalogue.model(pool.spec.gpu)
            if gpu is not None:
                filters.update(gpu.device_filter)
            result.mig_nodes[pool_name] = [group.to_dict() for group in assignment.groups]
        if not configs:
            return
        # One mig-parted config for the cluster; device-filter keeps entries to the models in use.
        config = mig_manager_config(configs, sorted(filters))
        configmap = mig_manager_configmap(config)
        configmap["metadata"]["labels"] = dict(self.labels)
        if self.argocd:
            configmap["metadata"]["annotations"] = self._annotations(WAVE_FOUNDATION)
        first = next(iter(self.placement.mig_plans.values())).pool
        result.objects.append(BuiltObject(configmap, Origin(self.cluster.located, ("spec", "pools", first.index, "mig")),
                                          WAVE_FOUNDATION, "mig/mig-parted-config.yaml"))

    def build(self) -> BuildResult:
        result = BuildResult()
        objects = result.objects
        objects.extend(self.resource_flavor(pool) for pool in self.cluster.pools)
        if self.cluster.root_cohort:
            objects.append(self.root_cohort())
        objects.extend(self.cohort(c) for c in self.cluster.cohorts)
        objects.extend(self.priority_class(i) for i in range(len(self.cluster.priorities)))
        for team in self.cluster.teams:
            quotas = self.team_quotas(team)
            objects.append(self.cluster_queue(team, quotas))
            result.quota[team.name] = {
                flavor: {resource: {"nominal": _fmt(resource, q.nominal),
                                    "borrowingLimit": _fmt(resource, q.borrowing_limit),
                                    "lendingLimit": _fmt(resource, q.lending_limit)}
                         for resource, q in per.items()}
                for flavor, per in quotas.items()}
        for team in self.cluster.teams:
            objects.extend(self.local_queue(team, i) for i in range(len(team.namespaces)))
        self.device_side(result)
        return result


def build(cluster: ResolvedCluster, placement: Placement) -> BuildResult:
    return ClusterBuilder(cluster, placement).build()
