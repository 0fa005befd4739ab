"""Admissibility of every declared workload: guaranteed, borrowing or never, with a reason.

POLICY.md's definitions:
  guaranteed  admitted from the team's own quota even when every other team uses its guarantee;
  borrowing   can only run while cohort-mates lend idle quota;
  never       Kueue would never admit it (or admit it and the pods would never start).

Structural reasons (a pod bigger than any node, a gang over MIG slices, a resource no flavor
covers) are decided here; quota questions are decided by a quota calculation over the built
ClusterQueues: per flavor, since Kueue assigns one flavor to all of a pod set's resources.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from compiler.build import CPU, MEMORY, BuildResult
from compiler.mig.catalogue import load_catalogue, mig_resource_name
from compiler.model import GPU_RESOURCE, ResolvedCluster, ResolvedPool, ResolvedTeam, ResolvedWorkload
from compiler.plan import Placement
from compiler.quantity import format_quantity, parse_quantity

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
    per_gpu_cpu = parse_quantity(cluster.spec.resourcesPerGpu.cpu)
    per_gpu_memory = parse_quantity(cluster.spec.resourcesPerGpu.memory)
    request: dict[str, Fraction] = {}
    equivalents = Fraction(0)
    if spec.gpus:
        request[GPU_RESOURCE] = Fraction(spec.gpus)
        equivalents = Fraction(spec.gpus)
    elif spec.mig is not None:
        request[mig_resource_name(spec.mig)] = Fraction(1)
        gpu = load_catalogue().model(pool.spec.gpu) if pool is not None else None
        profile = gpu.profile(spec.mig) if gpu else None
        if profile is not None:
            equivalents = Fraction(profile.compute_slices, gpu.compute_slices)
    request[CPU] = parse_quantity(spec.cpu) if spec.cpu is not None else equivalents * per_gpu_cpu
    request[MEMORY] = parse_quantity(spec.memory) if spec.memory is not None else equivalents * per_gpu_memory
    return {k: v for k, v in request.items() if v > 0}


def _amount(value: str | None) -> Fraction | None:
    return None if value is None else parse_quantity(value)


def _lendable_by_team(build: BuildResult) -> dict[str, dict[tuple[str, str], Fraction]]:
    """Per team, per (flavor, resource): what that team lends to its cohort when idle."""
    result: dict[str, dict[tuple[str, str], Fraction]] = {}
    for team, flavors in build.quota.items():
        own = result.setdefault(team, {})
        for flavor, resources in flavors.items():
            for resource, quota in resources.items():
                amount = _amount(quota["lendingLimit"]) if quota["lendingLimit"] is not None else _amount(quota["nominal"])
                own[(flavor, resource)] = amount or Fraction(0)
    return result


def _cohort_lendable(build: BuildResult, cluster: ResolvedCluster) -> dict[tuple[str, str], Fraction]:
    """Per (flavor, resource): what the whole cluster (root shared quota + every team) can lend."""
    lendable: dict[tuple[str, str], Fraction] = {}
    for built in build.objects:
        if built.kind == "Cohort" and built.name == cluster.root_cohort:
            for group in built.obj["spec"].get("resourceGroups", []):
                for flavor in group["flavors"]:
                    for resource in flavor["resources"]:
                        key = (flavor["name"], resource["name"])
                        lendable[key] = lendable.get(key, Fraction(0)) + parse_quantity(resource["nominalQuota"])
    for own in _lendable_by_team(build).values():
        for key, amount in own.items():
            lendable[key] = lendable.get(key, Fraction(0)) + amount
    return lendable


def _show(resource: str, value: Fraction) -> str:
    return format_quantity(value, binary=resource == MEMORY)


def judge_workload(cluster: ResolvedCluster, team: ResolvedTeam, workload: ResolvedWorkload,
                   build: BuildResult, placement: Placement,
                   lendable: dict[tuple[str, str], Fraction]) -> Verdict:
    """`lendable`: what cohort-mates (everyone but this team) can lend, per (flavor, resource)."""
    spec = workload.spec
    catalogue = load_catalogue()
    name = spec.name

    def never(reason: str) -> Verdict:
        return Verdict(team.name, name, NEVER, reason)

    if spec.mig is not None and spec.gang:
        return never("gang workloads cannot run on MIG slices: MIG instances have no NVLink or "
                     "peer-to-peer path between them")
    if spec.gpus:
        pools = team.gpu_pools
        if not pools:
            return never("the team accepts no whole-GPU pool")
        fitting = [p for p in pools if p.spec.gpusPerNode >= spec.gpus]
        if not fitting:
            largest = max(p.spec.gpusPerNode for p in pools)
            return never(f"each pod asks for {spec.gpus} GPUs but the largest node of the pools the team accepts "
                         f"has {largest}; Kueue would admit it and the pods would wait forever")
        pools = fitting
    elif spec.mig is not None:
        pools = [p for p in team.mig_pools
                 if catalogue.profile(p.spec.gpu, spec.mig) is not None
                 and spec.mig in (placement.mig_plans[p.name].instances() if p.name in placement.mig_plans else {})]
        if not pools:
            return never(f"no MIG pool the team accepts is cut into {spec.mig} instances")
    else:
        pools = team.flavor_pools
    quotas = build.quota.get(team.name, {})
    best_shortfall: str | None = None
    borrowing_flavor: str | None = None
    for pool in pools:
        request = {r: v * spec.replicas for r, v in pod_request(cluster, workload, pool).items()}
        flavor_quota = quotas.get(pool.flavor, {})
        if any(r not in flavor_quota for r in request):
            continue
        nominal_fits = all(request[r] <= _amount(flavor_quota[r]["nominal"]) for r in request)
        if nominal_fits:
            return Verdict(team.name, name, GUARANTEED,
                           f"fits the team's guaranteed quota on flavor {pool.flavor}", pool.flavor)
        if team.cohort is None:
            short = next(r for r in request if request[r] > _amount(flavor_quota[r]["nominal"]))
            best_shortfall = best_shortfall or (
                f"needs {_show(short, request[short])} {short} on flavor {pool.flavor}, the team is guaranteed "
                f"{flavor_quota[short]['nominal']} and has no cohort to borrow from")
            continue
        fits_with_borrowing = True
        for resource, amount in request.items():
            nominal = _amount(flavor_quota[resource]["nominal"])
            limit = _amount(flavor_quota[resource]["borrowingLimit"])
            available = lendable.get((pool.flavor, resource), Fraction(0))
            most = nominal + (available if limit is None else min(limit, available))
            if amount > most:
                fits_with_borrowing = False
                if best_shortfall is None:
                    detail = (f"{flavor_quota[resource]['nominal']} guaranteed + "
                              + (f"{flavor_quota[resource]['borrowingLimit']} burst" if limit is not None and limit <= available
                                 else f"{_show(resource, available)} the cohort can lend"))
                    best_shortfall = (f"needs {_show(resource, amount)} {resource} on one flavor; flavor {pool.flavor} "
                                      f"offers at most {_show(resource, most)} ({detail})")
                break
        if fits_with_borrowing and borrowing_flavor is None:
            borrowing_flavor = pool.flavor
    if borrowing_flavor is not None:
        return Verdict(team.name, name, BORROWING,
                       f"exceeds the team's guarantee; runs on flavor {borrowing_flavor} only while cohort-mates "
                       "lend idle quota", borrowing_flavor)
    return never(best_shortfall or "no flavor of the team's ClusterQueue covers what it asks for")


def judge(cluster: ResolvedCluster, build: BuildResult, placement: Placement) -> list[Verdict]:
    total = _cohort_lendable(build, cluster)
    own = _lendable_by_team(build)
    verdicts = []
    for team in cluster.teams:
        if not team.workloads:
            continue
        others = {key: amount - own.get(team.name, {}).get(key, Fraction(0)) for key, amount in total.items()}
        verdicts.extend(judge_workload(cluster, team, workload, build, placement, others) for workload in team.workloads)
    return verdicts
