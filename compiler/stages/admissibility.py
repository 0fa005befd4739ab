"""Admissibility of every declared workload: guaranteed, borrowing or never, with a reason.

The definitions (docs/concepts.md, Verdicts):
  guaranteed  admitted from the team's own quota even when every other team uses its guarantee;
  borrowing   can only run while cohort-mates lend idle quota;
  never       Kueue would never admit it (or admit it and the pods would never start).

Structural reasons Kueue does not see (a pod bigger than any node: Kueue admits it and the pods
wait forever; a gang over MIG slices, which have no NVLink between them) are decided here. Quota
questions are decided by the admission engine (compiler.evaluator), on the emitted objects:

  idle       the team's ClusterQueue, with everything the rest of the cluster can lend (the root
             cohort's shared quota plus every other team's lendable guarantee) available to it;
  contended  the team's ClusterQueue alone: every other team uses all of its guarantee and the
             shared quota is taken.

  guaranteed = admitted in the contended world;  borrowing = admitted only in the idle one;
  never = not admitted even in the idle world (with Kueue's own reason).

Folding the rest of the cluster into one root quota is exact for what the compiler emits: the
declared cohorts carry no quota and no limits, so every lendable unit reaches every team. It keeps
each question small: every declared workload gets a private copy of its team's queue, and all of
them are decided in two engine runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from compiler.stages.build import BuildResult, cpu_memory_with, format_amount
from compiler.evaluator import evaluate, load_manifests
from compiler.core.resources import CPU, GPU_RESOURCE, MEMORY, mig_resource_name
from compiler.stages.resolved_model import ResolvedCluster, ResolvedPool, ResolvedTeam, ResolvedWorkload
from compiler.stages.node_size import misfit
from compiler.stages.plan import Placement
from compiler.stages.topology_verdicts import PoolTrees, place_verdict, topology_question, usable_flavors
from compiler.core.quantity import parse_quantity

GUARANTEED, BORROWING, NEVER = "guaranteed", "borrowing", "never"


@dataclass(frozen=True)
class Verdict:
    team: str
    workload: str
    verdict: str
    reason: str
    flavor: str | None = None

    def to_dict(self) -> dict:
        return {"team": self.team, "name": self.workload, "verdict": self.verdict, "reason": self.reason,
                "flavor": self.flavor}


def pod_request(cluster: ResolvedCluster, workload: ResolvedWorkload, pool: ResolvedPool | None) -> dict[str, Fraction]:
    """What one replica asks for; cpu/memory default to the share that comes with its GPUs."""
    spec = workload.spec
    request: dict[str, Fraction] = {}
    cpu = memory = Fraction(0)
    if spec.gpus:
        request[GPU_RESOURCE] = Fraction(spec.gpus)
        cpu, memory = cpu_memory_with(cluster, pool, spec.gpus)
    elif workload.mig is not None:
        request[mig_resource_name(workload.mig)] = Fraction(1)
        cpu, memory = cpu_memory_with(cluster, pool, mig={workload.mig: 1})
    request[CPU] = parse_quantity(spec.cpu) if spec.cpu is not None else cpu
    request[MEMORY] = parse_quantity(spec.memory) if spec.memory is not None else memory
    return {k: v for k, v in request.items() if v > 0}


def _lendable_by_team(build: BuildResult) -> dict[str, dict[tuple[str, str], Fraction]]:
    """Per team, per (flavor, resource): what that team lends to its cohort when idle."""
    return {team: {(flavor, resource): quota.lendable
                   for flavor, resources in flavors.items() for resource, quota in resources.items()}
            for team, flavors in build.quota.items()}


def _cohort_lendable(build: BuildResult, own: dict[str, dict[tuple[str, str], Fraction]]) -> dict[tuple[str, str], Fraction]:
    """Per (flavor, resource): what the whole cluster (root shared quota + every team) can lend."""
    lendable: dict[tuple[str, str], Fraction] = {
        (flavor, resource): quota.nominal
        for flavor, resources in build.root_quota.items() for resource, quota in resources.items()}
    for team_lends in own.values():
        for key, amount in team_lends.items():
            lendable[key] = lendable.get(key, Fraction(0)) + amount
    return lendable


def _show(resource: str, value: Fraction) -> str:
    return format_amount(resource, value)


WAITS_FOREVER = "Kueue would admit it and the pods would wait forever"


def _structural_never(cluster: ResolvedCluster, team: ResolvedTeam, workload: ResolvedWorkload,
                      placement: Placement) -> tuple[str | None, list[ResolvedPool]]:
    """A reason Kueue cannot see why the workload can never run, and the pools it may use."""
    spec = workload.spec
    if workload.mig is not None and spec.gang:
        return ("gang workloads cannot run on MIG slices: MIG instances have no NVLink or "
                "peer-to-peer path between them"), []
    if spec.gpus:
        if not team.gpu_pools:
            return "the team accepts no whole-GPU pool", []
        fitting = [p for p in team.gpu_pools if p.spec.gpusPerNode >= spec.gpus]
        if not fitting:
            largest = max(p.spec.gpusPerNode for p in team.gpu_pools)
            return (f"each pod asks for {spec.gpus} GPUs but the largest node of the pools the team accepts "
                    f"has {largest}; {WAITS_FOREVER}"), []
        return _fitting_nodes(cluster, workload, fitting)
    if workload.mig is not None:
        pools = [p for p in team.mig_pools
                 if p.gpu_model is not None and p.gpu_model.profile_named(workload.mig) is not None
                 and workload.mig in (placement.mig_plans[p.name].instances() if p.name in placement.mig_plans else {})]
        if not pools:
            return f"no MIG pool the team accepts is cut into {workload.mig} instances", []
        return _fitting_nodes(cluster, workload, pools)
    return _fitting_nodes(cluster, workload, team.flavor_pools)


def _fitting_nodes(cluster: ResolvedCluster, workload: ResolvedWorkload,
                   pools: list[ResolvedPool]) -> tuple[str | None, list[ResolvedPool]]:
    """The pools where one pod fits some node (pools whose node size is not stated always do);
    none: why not, pool by pool."""
    problems = [(pool, misfit(pool, pod_request(cluster, workload, pool))) for pool in pools]
    fitting = [pool for pool, problem in problems if problem is None]
    if fitting or not pools:
        return None, fitting
    return "; ".join(problem for _, problem in problems) + f": {WAITS_FOREVER}", []


def _quota_resources(flavors: dict[str, dict[str, Fraction]], covered: list[str]) -> list[dict]:
    return [{"name": flavor, "resources": [{"name": r, "nominalQuota": _show(r, amounts.get(r, Fraction(0)))}
                                           for r in covered]}
            for flavor, amounts in flavors.items()]


def workload_object(cluster: ResolvedCluster, workload: ResolvedWorkload, *, name: str, namespace: str,
                    queue: str, pool: ResolvedPool | None, created: str) -> dict:
    """A declared workload as the Workload object Kueue would make of it: one pod set `main` of
    `replicas` pods, its priority class and value."""
    api = cluster.kueue_api_version
    request = pod_request(cluster, workload, pool)
    spec: dict = {
        "queueName": queue,
        "priority": workload.priority_value,
        "podSets": [{"name": "main", "count": workload.spec.replicas, "template": {"spec": {"containers": [{
            "name": "main", "resources": {"requests": {r: _show(r, v) for r, v in sorted(request.items())}}}]}}}],
    }
    if workload.priority is not None:
        if api.endswith("v1beta2"):
            spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                        "name": workload.priority}
        else:
            spec["priorityClassName"] = workload.priority
            spec["priorityClassSource"] = "kueue.x-k8s.io/workloadpriorityclass"
    return {"apiVersion": api, "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created}, "spec": spec}


class _Universes:
    """Private copies of team queues, each with one declared workload, for one engine run.

    Universes share nothing but ResourceFlavors and priority classes, so the engine's answer in
    one depends only on what that one holds: the team's queue (quota, preemption, queueing,
    weight, cohort or not), in the idle world what the cohort lends it (fixed by the team's own
    quota), and the workload (replicas, requests, priority). Two declared workloads that agree
    on all of that ask the same question: they share one universe (on a large policy most teams
    look alike, and the engine runs are most of the cost of a compile)."""

    def __init__(self, cluster: ResolvedCluster, build: BuildResult, contended: bool,
                 total: dict[tuple[str, str], Fraction], own: dict[str, dict[tuple[str, str], Fraction]],
                 team_keys: dict[str, int]):
        self.cluster = cluster
        self.team_keys = team_keys
        self.contended = contended
        self.objects: list[dict] = []
        self.api = cluster.kueue_api_version
        self.cohort_field = "cohortName" if self.api.endswith("v1beta2") else "cohort"
        by_kind: dict[str, list[dict]] = {}
        for built in build.objects:
            by_kind.setdefault(built.kind, []).append(built.obj)
        self.queues = {obj["metadata"]["name"]: obj for obj in by_kind.get("ClusterQueue", [])}
        self.objects += by_kind.get("ResourceFlavor", []) + by_kind.get("WorkloadPriorityClass", [])
        namespaces = sorted({ns for team in cluster.teams for ns in team.namespaces})
        self.objects += [{"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}
                         for ns in namespaces]
        self.total = total
        self.own = own
        self.count = 0
        self._asked: dict[tuple, str] = {}
        # A team's idle-world cohort quota is the same for each of its workloads: build it once.
        self._cohort_groups: dict[str, list[dict]] = {}

    def add(self, team: ResolvedTeam, workload: ResolvedWorkload, pools: list[ResolvedPool]) -> str:
        """The universe that answers for this workload (added unless an identical one exists);
        returns its workload's "ns/name"."""
        question = (self._team_key(team), workload.spec.replicas, workload.priority, workload.priority_value,
                    tuple(sorted(pod_request(self.cluster, workload, pools[0] if pools else None).items())),
                    topology_question(workload))
        if question not in self._asked:
            self._asked[question] = self._add(team, workload, pools)
        return self._asked[question]

    def _team_key(self, team: ResolvedTeam) -> int:
        return self.team_keys[team.name]

    def _add(self, team: ResolvedTeam, workload: ResolvedWorkload, pools: list[ResolvedPool]) -> str:
        index = self.count
        self.count += 1
        name = f"kueue-policy-check-{index}"
        original = self.queues[team.name]
        # Shallow copies: the engine only reads the resource groups, which stay shared.
        spec = {k: v for k, v in original["spec"].items()}
        queue = {"apiVersion": original["apiVersion"], "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}
        spec.pop("cohortName", None)
        spec.pop("cohort", None)
        spec["resourceGroups"] = _groups_for(self.cluster, workload, spec.get("resourceGroups") or [])
        if team.cohort is not None:
            spec[self.cohort_field] = name
            cohort: dict = {"apiVersion": self.api, "kind": "Cohort", "metadata": {"name": name}, "spec": {}}
            groups = self._cohort_quota(team, original["spec"])
            if groups:
                cohort["spec"]["resourceGroups"] = groups
            self.objects.append(cohort)
        self.objects.append(queue)
        namespace = team.namespaces[0]
        self.objects.append({"apiVersion": self.api, "kind": "LocalQueue",
                             "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": name}})
        self.objects.append(workload_object(self.cluster, workload, name=name, namespace=namespace, queue=name,
                                            pool=pools[0] if pools else None, created="2026-01-01T00:00:00Z"))
        return f"{namespace}/{name}"

    def _cohort_quota(self, team: ResolvedTeam, spec: dict) -> list[dict]:
        """Everything the rest of the cluster can lend the team (idle world), or nothing."""
        if self.contended or not spec.get("resourceGroups"):
            return []
        if team.name not in self._cohort_groups:
            covered = spec["resourceGroups"][0]["coveredResources"]
            own = self.own.get(team.name, {})
            flavors = {flavor: {r: self.total.get((flavor, r), Fraction(0)) - own.get((flavor, r), Fraction(0))
                                for r in covered}
                       for flavor in (f["name"] for f in spec["resourceGroups"][0]["flavors"])}
            self._cohort_groups[team.name] = [{"coveredResources": covered,
                                               "flavors": _quota_resources(flavors, covered)}]
        return self._cohort_groups[team.name]

    def run(self):
        return evaluate(load_manifests(self.objects))


def _groups_for(cluster: ResolvedCluster, workload: ResolvedWorkload, groups: list[dict]) -> list[dict]:
    """The queue's resource groups with only the flavors Kueue would consider for the workload's
    topology request (compiler.stages.topology_verdicts.usable_flavors); groups left empty go."""
    if not any(pool.topology is not None for pool in cluster.pools):
        return groups
    names = [flavor["name"] for group in groups for flavor in group["flavors"]]
    usable = set(usable_flavors(cluster, workload, names))
    if len(usable) == len(names):
        return groups
    kept = [{**group, "flavors": [f for f in group["flavors"] if f["name"] in usable]} for group in groups]
    return [group for group in kept if group["flavors"]]


def _team_keys(cluster: ResolvedCluster, build: BuildResult) -> dict[str, int]:
    """Per team, a number standing for what of the team its universes are made of (see
    _Universes): teams that agree on all of it share the number. Hashed once per team."""
    contents: dict[tuple, int] = {}
    keys = {}
    for team in cluster.teams:
        quota = tuple((flavor, tuple(per.items())) for flavor, per in build.quota[team.name].items())
        content = (quota, team.cohort is not None, team.queueing, team.preemption.model_dump_json(), team.weight)
        keys[team.name] = contents.setdefault(content, len(contents))
    return keys


def _flavor_of(outcome) -> str | None:
    flavors = sorted({f for per in outcome.assignment.values() for f in per.values()})
    return ", ".join(flavors) if flavors else None


def judge(cluster: ResolvedCluster, build: BuildResult, placement: Placement) -> list[Verdict]:
    own = _lendable_by_team(build)
    total = _cohort_lendable(build, own)
    team_keys = _team_keys(cluster, build)
    idle = _Universes(cluster, build, False, total, own, team_keys)
    pending: list[tuple[ResolvedTeam, ResolvedWorkload, str | None, str | None, list[ResolvedPool]]] = []
    for team in cluster.teams:
        for workload in team.workloads:
            reason, pools = _structural_never(cluster, team, workload, placement)
            key = idle.add(team, workload, pools) if reason is None else None
            pending.append((team, workload, reason, key, pools))
    idle_result = idle.run() if idle.count else None
    # Only a workload that borrowed in the idle world needs the contended one. One admitted
    # without borrowing took the first flavor where it fits at all (whenCanBorrow MayStopSearch):
    # earlier flavors did not fit even with the cohort's help, so with less help they still do
    # not, and its own quota on that flavor is untouched by other teams using theirs.
    contended = _Universes(cluster, build, True, total, own, team_keys)
    contended_keys: dict[int, str] = {}
    for index, (team, workload, reason, key, pools) in enumerate(pending):
        if key is not None:
            outcome = idle_result.workload(key)
            if outcome.status == "admitted" and outcome.borrowing:
                contended_keys[index] = contended.add(team, workload, pools)
    contended_result = contended.run() if contended.count else None
    verdicts = []
    for index, (team, workload, reason, key, pools) in enumerate(pending):
        name = workload.spec.name
        if reason is not None:
            verdicts.append(Verdict(team.name, name, NEVER, reason))
            continue
        free = idle_result.workload(key)
        if free.status != "admitted":
            verdicts.append(Verdict(team.name, name, NEVER,
                                    free.reason or "Kueue would not admit it even on an idle cluster"))
            continue
        busy = contended_result.workload(contended_keys[index]) if index in contended_keys else free
        unfit = _admitted_where_it_fits_no_node(cluster, workload, busy if busy.status == "admitted" else free, pools)
        if unfit is not None:
            verdicts.append(Verdict(team.name, name, NEVER, unfit, _flavor_of(free)))
            continue
        if busy.status == "admitted" and not busy.borrowing:
            flavor = _flavor_of(busy)
            verdicts.append(Verdict(team.name, name, GUARANTEED,
                                    f"admitted from the team's own quota on flavor {flavor}, even with every "
                                    "other team using its guarantee", flavor))
        else:
            flavor = _flavor_of(free)
            code = f" ({busy.reason_code})" if busy.reason_code else ""
            verdicts.append(Verdict(team.name, name, BORROWING,
                                    f"admitted on flavor {flavor} only while cohort-mates lend idle quota: it needs "
                                    f"more than the team's own quota{code}", flavor))
    verdicts = _with_topology(cluster, build, verdicts, [workload for _, workload, *_ in pending])
    return [_with_chosen_profile(v, team, workload) for v, (team, workload, *_) in zip(verdicts, pending)]


def _with_topology(cluster: ResolvedCluster, build: BuildResult, verdicts: list[Verdict],
                   workloads: list[ResolvedWorkload]) -> list[Verdict]:
    """On a flavor whose pool declares a topology, the pods must also be placed on its nodes
    (compiler.stages.topology_verdicts): that can turn guaranteed into borrowing, or into never."""
    if not any(pool.topology is not None for pool in cluster.pools):
        return verdicts
    trees = PoolTrees(cluster)
    return [place_verdict(verdict, cluster, build, workload,
                          pod_request(cluster, workload, cluster.pool(verdict.flavor) if verdict.flavor else None), trees)
            for verdict, workload in zip(verdicts, workloads)]


def _admitted_where_it_fits_no_node(cluster: ResolvedCluster, workload: ResolvedWorkload, outcome,
                                    fitting: list[ResolvedPool]) -> str | None:
    """Kueue picks a flavor by quota alone: when it picks one whose nodes cannot hold a pod (an
    earlier flavor in the team's order), the pods wait there forever though a later pool fits."""
    names = {pool.name for pool in fitting}
    flavors = sorted({f for per in outcome.assignment.values() for f in per.values()})
    for flavor in flavors:
        pool = cluster.pool(flavor)
        if pool is None or flavor in names:
            continue
        problem = misfit(pool, pod_request(cluster, workload, pool))
        if problem is None and workload.spec.gpus and pool.spec.gpusPerNode < workload.spec.gpus:
            problem = f"a pod asks {workload.spec.gpus} GPUs; pool {pool.name}'s nodes have {pool.spec.gpusPerNode}"
        if problem is not None:
            return (f"Kueue would admit it on flavor {flavor}, the first in the team's order with quota for it, "
                    f"but {problem}: the pods would wait forever")
    return None


def _with_chosen_profile(verdict: Verdict, team: ResolvedTeam, workload: ResolvedWorkload) -> Verdict:
    """Say which MIG profile a `gpuMemory` request became: reviewers need to see that choice."""
    if workload.spec.gpuMemory is None or workload.mig is None:
        return verdict
    return Verdict(verdict.team, verdict.workload, verdict.verdict,
                   f"one {workload.mig} instance per replica for {workload.spec.gpuMemory} of GPU memory; "
                   + verdict.reason, verdict.flavor)
