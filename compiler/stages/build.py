"""Stage 5, build: resolved cluster + placement -> Kubernetes objects (plain dicts).

Kueue objects are rendered from the Jinja2 templates in `templates/kueue/` with a typed context,
then parsed back, so the templates are the single readable description of what each object looks
like. Quota arithmetic happens here, in exact fractions, and is formatted once.

Every object remembers the policy position that caused it (`BuiltObject.origin`): verify uses it
to report an API-server refusal at the user's line, emit writes it into the file header.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from compiler.stages import admission_policy
from compiler.dra.classes import build_dra_objects
from compiler.core.errors import SourcePosition
from compiler.mig.mig_manager import assign_nodes, mig_manager_config, mig_manager_configmap
from compiler.core.resources import CPU, GPU_RESOURCE, MEMORY, mig_resource_name
from compiler.stages.ceilings import burst_split
from compiler.stages.resolved_model import ResolvedCluster, ResolvedPool, ResolvedTeam
from compiler.stages.plan import Placement
from compiler.core.quantity import format_quantity, parse_quantity, round_cpu, round_memory
from compiler.core.templating import render_object

MANAGED_BY = {"app.kubernetes.io/managed-by": "kueue-policy"}

# Argo CD applies lower waves first and waits for them to be healthy.
WAVE_NAMESPACES = -1  # Namespaces: every namespaced object below needs its namespace first
WAVE_FOUNDATION = 0   # ResourceFlavors, Cohorts, WorkloadPriorityClasses, DeviceClasses
WAVE_QUEUES = 1       # ClusterQueues
WAVE_NAMESPACED = 2   # LocalQueues, ResourceClaimTemplates



@dataclass(frozen=True)
class Origin:
    """The policy node an object comes from. The line is looked up only when asked for: a valid
    policy never needs it, and looking it up costs a round-trip parse of the file."""

    located: Any  # compiler.language.validate.Located
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


@dataclass(frozen=True)
class FlavorQuota:
    """One resource's quota in one flavor, as exact numbers (formatted only in the templates)."""

    nominal: Fraction
    borrowing_limit: Fraction | None = None
    lending_limit: Fraction | None = None

    @property
    def lendable(self) -> Fraction:
        """What the owner lends its cohort when idle: the lending limit, else all of it."""
        return self.nominal if self.lending_limit is None else self.lending_limit

    def as_emitted(self, resource: str) -> "FlavorQuota":
        """The same quota rounded as the emitted object states it (see `emitted_amount`)."""
        return _emitted_quota(resource, self)

    def entry(self, resource: str) -> dict[str, str | None]:
        """The template's view of this (emitted) quota: the only place amounts become text."""
        return dict(_quota_entry(resource, self))


# Thousands of queues state the same few quotas: each distinct one is rounded and formatted once
# (exact arithmetic on fractions is most of the cost of building a ClusterQueue otherwise).
@functools.lru_cache(maxsize=65536)
def _emitted_quota(resource: str, quota: FlavorQuota) -> FlavorQuota:
    return FlavorQuota(emitted_amount(resource, quota.nominal),
                       None if quota.borrowing_limit is None else emitted_amount(resource, quota.borrowing_limit),
                       None if quota.lending_limit is None else emitted_amount(resource, quota.lending_limit))


@functools.lru_cache(maxsize=65536)
def _quota_entry(resource: str, quota: FlavorQuota) -> dict[str, str | None]:
    return {"name": resource, "nominal": format_amount(resource, quota.nominal),
            "borrowing_limit": format_amount(resource, quota.borrowing_limit),
            "lending_limit": format_amount(resource, quota.lending_limit)}


# flavor -> resource -> quota: a ClusterQueue's (or the root cohort's) resource groups, typed.
FlavorQuotas = dict[str, dict[str, FlavorQuota]]


@dataclass
class BuildResult:
    objects: list[BuiltObject] = field(default_factory=list)
    # team -> its ClusterQueue's quota, exactly as emitted (rounded the way the object states it).
    quota: dict[str, FlavorQuotas] = field(default_factory=dict)
    # The root cohort's shared quota (what no team is guaranteed), exactly as emitted.
    root_quota: FlavorQuotas = field(default_factory=dict)
    # pool -> MIG node groups (which nodes get which nvidia.com/mig.config)
    mig_nodes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The Kueue Configuration fragment this policy needs (deviceClassMappings, fairSharing).
    kueue_config_fragment: dict[str, Any] | None = None
    # The whole Kueue Configuration the kueue-config component ships (None when none is shipped).
    kueue_configuration: dict[str, Any] | None = None
    # Files that are not Kubernetes objects (the Kueue Helm values), path relative to out/<cluster>/.
    extra_files: dict[str, str] = field(default_factory=dict)
    # quota resource name -> DeviceClasses (dra-claims / dra-extended-resource)
    resource_classes: dict[str, list[str]] = field(default_factory=dict)


def _fraction(value: int | None) -> Fraction | None:
    return None if value is None else Fraction(value)


def emitted_amount(resource: str, value: Fraction) -> Fraction:
    """The exact amount an emitted quota states for `value`: memory rounded up to whole MiB,
    everything else up to the milli-unit (never below what a workload needs)."""
    return round_memory(value) if resource == MEMORY else round_cpu(value)


def format_amount(resource: str, value: Fraction | None) -> str | None:
    """The text of an (already emitted) amount: memory in Ki/Mi/Gi units where exact."""
    return None if value is None else format_quantity(value, binary=resource == MEMORY)


def cpu_memory_with(cluster: ResolvedCluster, pool: ResolvedPool | None, gpus: int = 0,
                    mig: Mapping[str, int] | None = None) -> tuple[Fraction, Fraction]:
    """The cpu and memory that come with `gpus` whole GPUs and `mig` MIG instances (profile ->
    count) on `pool`: the cluster's resourcesPerGpu per GPU; per instance its compute slices'
    share of that (compute slices / 7: docs/policy-reference.md), rounded up once per instance, exactly as a pod
    asking for one instance gets it by default, so N such pods fit N instances' quota."""
    per_gpu = cluster.spec.resourcesPerGpu
    cpu_per_gpu, memory_per_gpu = parse_quantity(per_gpu.cpu), parse_quantity(per_gpu.memory)
    cpu, memory = gpus * cpu_per_gpu, gpus * memory_per_gpu
    gpu_model = pool.gpu_model if pool is not None and mig else None
    for profile, count in (mig or {}).items():
        mig_profile = gpu_model.profile(profile) if gpu_model else None
        if mig_profile is None:
            continue
        share = Fraction(mig_profile.compute_slices, gpu_model.compute_slices)
        cpu += round_cpu(share * cpu_per_gpu) * count
        memory += round_memory(share * memory_per_gpu) * count
    return cpu, memory


class ClusterBuilder:
    def __init__(self, cluster: ResolvedCluster, placement: Placement, *, whole_templates: bool = False):
        """`whole_templates`: render and parse every object in one piece (the reference the
        faster `_render_with_quota` is tested against)."""
        self.whole_templates = whole_templates
        self.cluster = cluster
        self.placement = placement
        self.api_version = cluster.kueue_api_version
        spec = cluster.spec
        self.labels = {**MANAGED_BY, "kueue-policy.io/cluster": cluster.name}
        self.argocd = spec.gitops.tool == "argocd"
        self.covered = self._covered_resources()
        # A flavor's quota entries, parsed once per distinct text (see _render_with_quota).
        self._parsed_resources: dict[tuple, list[dict[str, Any]]] = {}
        self._shares: dict[tuple, tuple[Fraction, Fraction]] = {}

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
        # Whole GPUs' share is the same on every pool; thousands of queues ask for a few amounts.
        key = (pool.name if mig else None, gpus, tuple(sorted(mig.items())))
        share = self._shares.get(key)
        if share is None:
            share = self._shares[key] = cpu_memory_with(self.cluster, pool, gpus, mig)
        return share

    def _flavor_resources(self, quotas: dict[str, FlavorQuota]) -> list[dict[str, Any]]:
        """The template's view of one flavor's (emitted) quota: the only place amounts become text."""
        resources = []
        for resource in self.covered:
            quota = quotas.get(resource)
            if quota is None:
                resources.append({"name": resource, "nominal": "0", "borrowing_limit": None, "lending_limit": None})
                continue
            resources.append(quota.entry(resource))
        return resources

    def _render_with_quota(self, template: str, resource_groups: list[dict[str, Any]], **context: Any) -> dict[str, Any]:
        """render_object for a kind whose spec.resourceGroups come from _resource_groups.yaml.j2.

        The same object as rendering and parsing it whole, for less work: on a large policy most
        teams' flavors carry the same few quota entries, and parsing them back is most of the
        cost of building a ClusterQueue. So the object is rendered with the flavors' resource
        lists left empty, and each flavor's list is rendered by its own partial
        (_flavor_resources.yaml.j2, the one _resource_groups includes) and parsed once per
        distinct content; every object gets its own copy."""
        if self.whole_templates:
            return render_object(template, resource_groups=resource_groups, **context)
        skeleton = [{"covered": group["covered"],
                     "flavors": [{"name": flavor["name"], "resources": []} for flavor in group["flavors"]]}
                    for group in resource_groups]
        obj = render_object(template, resource_groups=skeleton, **context)
        for group, parsed_group in zip(resource_groups, obj["spec"].get("resourceGroups") or []):
            for flavor, parsed_flavor in zip(group["flavors"], parsed_group["flavors"]):
                parsed_flavor["resources"] = [dict(entry) for entry in self._flavor_entries(flavor)]
        return obj

    def _flavor_entries(self, flavor: dict[str, Any]) -> list[dict[str, Any]]:
        key = tuple((r["name"], r["nominal"], r["borrowing_limit"], r["lending_limit"]) for r in flavor["resources"])
        entries = self._parsed_resources.get(key)
        if entries is None:
            entries = render_object("kueue/_flavor_resources.yaml.j2", flavor=flavor)
            self._parsed_resources[key] = entries
        return entries

    @staticmethod
    def _emitted(quotas: FlavorQuotas) -> FlavorQuotas:
        return {flavor: {resource: quota.as_emitted(resource) for resource, quota in per.items()}
                for flavor, per in quotas.items()}

    # --- objects ----------------------------------------------------------------------------
    def resource_flavor(self, pool: ResolvedPool) -> BuiltObject:
        spec = pool.spec
        node_labels = dict(sorted(spec.nodeLabels.items())) or {"kueue-policy.io/pool": pool.name}
        obj = render_object("kueue/resourceflavor.yaml.j2", api_version=self.api_version, name=pool.flavor,
                              labels={**self.labels, "kueue-policy.io/pool": pool.name},
                              annotations=self._annotations(WAVE_FOUNDATION), node_labels=node_labels,
                              taints=[t.model_dump() for t in spec.taints],
                              topology_name=pool.topology.name if pool.topology is not None else None)
        return BuiltObject(obj, Origin(self.cluster.located, ("spec", "pools", pool.index)), WAVE_FOUNDATION,
                           f"kueue/resourceflavors/{pool.flavor}.yaml")

    def topologies(self) -> list[BuiltObject]:
        """One Kueue Topology per distinct level list, from the first pool that uses it."""
        built: dict[str, BuiltObject] = {}
        for pool in self.cluster.pools:
            topology = pool.topology
            if topology is None or topology.name in built:
                continue
            obj = render_object("kueue/topology.yaml.j2", api_version=self.api_version, name=topology.name,
                                labels=self.labels, annotations=self._annotations(WAVE_FOUNDATION),
                                levels=list(topology.levels))
            built[topology.name] = BuiltObject(obj, Origin(self.cluster.located, ("spec", "pools", pool.index, "topology")),
                                               WAVE_FOUNDATION, f"kueue/topologies/{topology.name}.yaml")
        return [built[name] for name in sorted(built)]

    def root_quotas(self) -> FlavorQuotas:
        """The cluster's root cohort's quota: every GPU (and its cpu/memory) no team is guaranteed."""
        result: FlavorQuotas = {}
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
            result[pool.flavor] = quotas
        return self._emitted(result)

    def root_cohort(self, quotas: FlavorQuotas) -> BuiltObject:
        flavors = [{"name": flavor, "resources": self._flavor_resources(per)} for flavor, per in quotas.items()]
        fair = self._fair_weight(1.0)
        obj = self._render_with_quota("kueue/cohort.yaml.j2", [{"covered": self.covered, "flavors": flavors}],
                                      api_version=self.api_version, name=self.cluster.root_cohort,
                                      labels=self.labels, annotations=self._annotations(WAVE_FOUNDATION), parent=None,
                                      fair_weight=fair)
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

    def team_quotas(self, team: ResolvedTeam) -> FlavorQuotas:
        """flavor -> resource -> quota, for every flavor of the team's ClusterQueue (as emitted)."""
        gpus = team.spec.gpus
        placed = self.placement.gpus.get(team.name, {})
        mig_placed = self.placement.mig.get(team.name, {})
        in_cohort = team.cohort is not None
        burst = gpus.burst if in_cohort else None
        # burst is team-wide: split over the whole-GPU flavors so the limits sum to it (ceilings.py).
        burst_of = burst_split(self.cluster, self.placement, team)
        # lend: the part of the guarantee NOT lent stays private; keep it on the preferred flavors.
        private_left = (gpus.guaranteed - gpus.lend) if (in_cohort and gpus.lend is not None) else None
        result: FlavorQuotas = {}
        for pool in team.flavor_pools:
            if pool.is_mig:
                quotas, lend_gpus = self._mig_quotas(pool, mig_placed.get(pool.name, {}), burst), None
            else:
                nominal_gpus = placed.get(pool.name, 0)
                flavor_burst = None if burst_of is None else burst_of.get(pool.name, 0)
                lend_gpus = None
                if private_left is not None:
                    private = min(private_left, nominal_gpus)
                    private_left -= private
                    lend_gpus = nominal_gpus - private
                quotas = {GPU_RESOURCE: FlavorQuota(Fraction(nominal_gpus), _fraction(flavor_burst),
                                                    _fraction(lend_gpus))}
                cpu, memory = self._cpu_memory(pool, nominal_gpus, {})
                quotas.update(self._cpu_memory_quotas(pool, cpu, memory, flavor_burst, lend_gpus))
            result[pool.flavor] = quotas
        return self._emitted(result)

    def _mig_quotas(self, pool: ResolvedPool, mig: dict[str, int], burst: int | None) -> dict[str, FlavorQuota]:
        """A MIG flavor: every profile the pool is cut into; bursting `burst` GPUs' worth of each."""
        quotas: dict[str, FlavorQuota] = {}
        gpu_model = pool.gpu_model
        for profile in self._mig_profiles_of(pool) or sorted(mig):
            mig_profile = gpu_model.profile(profile) if gpu_model else None
            per_gpu = mig_profile.max_count if mig_profile else 1
            quotas[mig_resource_name(profile)] = FlavorQuota(
                Fraction(mig.get(profile, 0)), None if burst is None else Fraction(burst * per_gpu))
        cpu, memory = self._cpu_memory(pool, 0, mig)
        quotas.update(self._cpu_memory_quotas(pool, cpu, memory, burst, None))
        return quotas

    def _cpu_memory_quotas(self, pool: ResolvedPool, cpu: Fraction, memory: Fraction, burst: int | None,
                           lend_gpus: int | None) -> dict[str, FlavorQuota]:
        """cpu and memory quota beside the GPUs: burst and lend as many whole GPUs' worth."""
        burst_cpu, burst_memory = self._cpu_memory(pool, burst, {}) if burst is not None else (None, None)
        lend_cpu, lend_memory = self._cpu_memory(pool, lend_gpus, {}) if lend_gpus is not None else (None, None)
        return {CPU: FlavorQuota(cpu, burst_cpu, lend_cpu), MEMORY: FlavorQuota(memory, burst_memory, lend_memory)}

    def cluster_queue(self, team: ResolvedTeam, quotas: FlavorQuotas) -> BuiltObject:
        flavors = [{"name": flavor, "resources": self._flavor_resources(per)} for flavor, per in quotas.items()]
        preemption = team.preemption.model_dump()
        obj = self._render_with_quota("kueue/clusterqueue.yaml.j2",
                              [{"covered": self.covered, "flavors": flavors}] if flavors else [],
                              api_version=self.api_version, name=team.name,
                              labels={**self.labels, "kueue-policy.io/team": team.name},
                              annotations=self._annotations(WAVE_QUEUES),
                              cohort_field="cohortName" if self.api_version.endswith("v1beta2") else "cohort",
                              cohort=team.cohort, namespaces=sorted(team.namespaces), queueing=team.queueing,
                              preemption=preemption, fair_weight=self._fair_weight(team.weight))
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

    def namespace_objects(self, objects: list[BuiltObject]) -> list[BuiltObject]:
        """A Namespace for every namespace the namespaced objects live in (teams' and the MIG
        config's), so the tree applies to a fresh cluster (`namespaces: create`).

        Labels: the ClusterQueues select their namespaces by `kubernetes.io/metadata.name`, which
        the API server sets on every Namespace itself, so nothing else is needed for Kueue;
        `kueue-policy.io/team` is for people and selectors of their own. An existing namespace
        keeps its other labels: apply (client- or server-side) only adds the fields it owns.
        Neither tool may ever delete one: removing a team from the policy (or the Application,
        whose finalizer cascades) would delete every job and secret in it. Argo CD:
        `Prune=false,Delete=false`; Flux: `kustomize.toolkit.fluxcd.io/prune: disabled`."""
        if self.cluster.spec.namespaces != "create":
            return []
        team_of = {ns: team for team in self.cluster.teams for ns in team.namespaces}
        used = sorted({b.obj["metadata"]["namespace"] for b in objects if b.obj["metadata"].get("namespace")
                       and not b.is_patch})
        annotations: dict[str, str] = {}
        if self.argocd:
            annotations = {"argocd.argoproj.io/sync-wave": str(WAVE_NAMESPACES),
                           "argocd.argoproj.io/sync-options": "Prune=false,Delete=false"}
        elif self.cluster.spec.gitops.tool == "flux":
            annotations = {"kustomize.toolkit.fluxcd.io/prune": "disabled"}
        built = []
        for namespace in used:
            team = team_of.get(namespace)
            labels = dict(self.labels)
            if team is not None:
                labels["kueue-policy.io/team"] = team.name
                origin = Origin(team.located, ("spec", "namespaces", team.namespaces.index(namespace)))
            else:  # the GPU Operator's namespace, for the MIG config
                origin = Origin(self.cluster.located, ("spec", "pools"))
            obj = render_object("core/namespace.yaml.j2", name=namespace, labels=labels, annotations=annotations)
            built.append(BuiltObject(obj, origin, WAVE_NAMESPACES, f"namespaces/{namespace}.yaml"))
        return built

    def priority_policies(self, frameworks: list[str] | None) -> list[BuiltObject]:
        """The MutatingAdmissionPolicy (and binding) per team with a priority, where the cluster's
        Kubernetes serves the kind (compiler/stages/admission_policy.py); none otherwise."""
        spec = self.cluster.spec
        version = admission_policy.api_version(spec.kubernetesVersion, spec.featureGates)
        if version is None:
            return []
        built = []
        for team in self.cluster.teams:
            if not team.priority or not team.namespaces:
                continue
            policy, binding = admission_policy.team_priority_objects(
                version, team.name, team.priority, team.namespaces, frameworks,
                {**self.labels, "kueue-policy.io/team": team.name}, self._annotations(WAVE_FOUNDATION))
            origin = Origin(team.located, ("spec", "priority") if team.spec.priority else ("spec",))
            name = admission_policy.policy_name(team.name)
            built.append(BuiltObject(policy, origin, WAVE_FOUNDATION,
                                     f"admission/mutatingadmissionpolicies/{name}.yaml"))
            built.append(BuiltObject(binding, origin, WAVE_FOUNDATION,
                                     f"admission/mutatingadmissionpolicybindings/{name}.yaml"))
        return built

    # --- the device side: DRA classes and claims, MIG layouts, Kueue's configuration ----------
    def _team_devices(self, team: ResolvedTeam) -> list[tuple[str, str | None]]:
        """(model, MIG profile or None) pairs the team's namespaces may request."""
        devices = {(pool.spec.gpu, None) for pool in team.gpu_pools}
        declared = set(team.mig) | {w.mig for w in team.workloads if w.mig}
        for pool in team.mig_pools:
            # Every slice the pool's layout creates, not only the profiles teams declared: the spare
            # GPUs' all-balanced layout adds others (2g.20gb on an H100-80GB), which the shared quota
            # counts; without a DeviceClass, a mapping and a claim template no pod could claim them.
            for profile in declared | set(self._mig_profiles_of(pool)):
                if pool.gpu_model is not None and pool.gpu_model.profile_named(profile) is not None:
                    devices.add((pool.spec.gpu, profile))
        return sorted(devices, key=lambda d: (d[0], d[1] or ""))

    @staticmethod
    def _team_device_counts(team: ResolvedTeam) -> dict[tuple[str, str | None], set[int]]:
        """How many whole GPUs of a model one of the team's pods may claim at once: each declared
        workload's GPUs per replica and a whole node of each pool (the usual multi-GPU pod), up
        to what a node of that model has. MIG pods claim one slice each."""
        counts: dict[tuple[str, str | None], set[int]] = {}
        declared = {w.spec.gpus for w in team.workloads if w.spec.gpus}
        for pool in team.gpu_pools:
            per_node = pool.spec.gpusPerNode
            counts.setdefault((pool.spec.gpu, None), set()).update(
                {per_node} | {n for n in declared if n <= per_node})
        return counts

    def device_side(self, result: BuildResult) -> None:
        spec = self.cluster.spec
        position = Origin(self.cluster.located, ("spec", "gpuAccess"))
        namespace_devices = {ns: self._team_devices(team) for team in self.cluster.teams for ns in team.namespaces}
        device_counts = {ns: self._team_device_counts(team) for team in self.cluster.teams for ns in team.namespaces}
        gates = [name for name, on in spec.featureGates.items() if on]
        dra = build_dra_objects(spec.gpuAccess, spec.kubernetesVersion, namespace_devices, feature_gates=gates,
                                device_counts=device_counts)
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
            # The component itself (merged into the user's or Kueue's Configuration) is compiler/stages/kueue_config.py's.
            result.kueue_config_fragment = fragment
        self._mig_side(result)

    def _mig_side(self, result: BuildResult) -> None:
        configs: dict[str, Any] = {}
        filters: set[str] = set()
        for pool_name, plan in sorted(self.placement.mig_plans.items()):
            pool = plan.pool
            gpu = pool.gpu_model
            assignment = assign_nodes([(l.count, l.profiles) for l in plan.layouts], pool.spec.nodes,
                                      pool.spec.gpusPerNode, gpu or pool.spec.gpu)
            configs.update(assignment.configs)
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
        objects.extend(self.topologies())
        objects.extend(self.resource_flavor(pool) for pool in self.cluster.pools)
        if self.cluster.root_cohort:
            result.root_quota = self.root_quotas()
            objects.append(self.root_cohort(result.root_quota))
        objects.extend(self.cohort(c) for c in self.cluster.cohorts)
        objects.extend(self.priority_class(i) for i in range(len(self.cluster.priorities)))
        for team in self.cluster.teams:
            result.quota[team.name] = self.team_quotas(team)
            objects.append(self.cluster_queue(team, result.quota[team.name]))
        for team in self.cluster.teams:
            objects.extend(self.local_queue(team, i) for i in range(len(team.namespaces)))
        self.device_side(result)
        objects[:0] = self.namespace_objects(objects)
        return result


def build(cluster: ResolvedCluster, placement: Placement) -> BuildResult:
    return ClusterBuilder(cluster, placement).build()


def add_priority_policies(built: BuildResult, cluster: ResolvedCluster, placement: Placement,
                          default_configuration: dict | None) -> None:
    """After the Kueue Configuration is known (compiler/stages/kueue_config.py): its integrations decide
    which kinds the policies match; the shipped one, else Kueue's default for the version."""
    configuration = built.kueue_configuration or default_configuration or {}
    integrations = configuration.get("integrations") if isinstance(configuration, dict) else None
    frameworks = integrations.get("frameworks") if isinstance(integrations, dict) else None
    built.objects.extend(ClusterBuilder(cluster, placement).priority_policies(
        [str(f) for f in frameworks] if isinstance(frameworks, list) else None))
