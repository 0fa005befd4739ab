"""Stage 3, resolve: typed documents -> resolved cluster models.

Checks everything that spans documents (names unique, references resolve, the cohort tree is a
tree, namespaces belong to one team) and applies the language's defaults (docs/policy-reference.md). Every problem is
collected, so one run reports all independent errors.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict

from compiler.core import codes
from compiler.dra.classes import check_dra_version
from compiler.core.errors import DiagnosticSink
from compiler.mig.catalogue import load_catalogue
from compiler.core.parent_cycles import cycles
from compiler.stages.resolved_model import (ResolvedCluster, ResolvedCohort, ResolvedPool, ResolvedTeam, ResolvedTopology,
                                     ResolvedWorkload, reordered_among_identical)
from compiler.language.policy import Preemption
from compiler.core.quantity import parse_quantity
from compiler.language.load import LoadedDocument
from compiler.stages.node_size import resolve_node_sizes
from compiler.stages.topology import (check_workload_topology, resolve_pool_topology, topology_names,
                               warn_unused_exports)
from compiler.language.validate import Located, ValidatedPolicy


def _check_unique(items, name_of, position_of, what: str, sink: DiagnosticSink) -> None:
    seen: dict[str, object] = {}
    for item in items:
        name = name_of(item)
        if name in seen:
            shown = name[-1] if isinstance(name, tuple) else name
            sink.error(codes.DUPLICATE_NAME, f"duplicate {what} name '{shown}'", position_of(item),
                       related=position_of(seen[name]))
        else:
            seen[name] = item


def _resolve_cohorts(cluster: Located, sink: DiagnosticSink) -> tuple[list[ResolvedCohort], str | None]:
    spec = cluster.model.spec
    name = cluster.model.metadata.name
    _check_unique(list(enumerate(spec.cohorts)), lambda ic: ic[1].name,
                  lambda ic: cluster.position("spec", "cohorts", ic[0], "name"), "cohort", sink)
    names = {c.name for c in spec.cohorts}
    if name in names and spec.rootCohort:
        index = next(i for i, c in enumerate(spec.cohorts) if c.name == name)
        sink.error(codes.DUPLICATE_NAME,
                   f"cohort '{name}' has the cluster's name, which is reserved for the root cohort that "
                   "holds the capacity no team is guaranteed", cluster.position("spec", "cohorts", index, "name"))
    parents = {}
    for index, cohort in enumerate(spec.cohorts):
        if cohort.parent is not None and cohort.parent not in names:
            sink.error(codes.UNKNOWN_COHORT, f"cohort '{cohort.name}' names unknown parent '{cohort.parent}'",
                       cluster.position("spec", "cohorts", index, "parent"))
        elif cohort.parent == cohort.name:
            sink.error(codes.COHORT_CYCLE, f"cohort '{cohort.name}' is its own parent",
                       cluster.position("spec", "cohorts", index, "parent"))
        else:
            parents[cohort.name] = cohort.parent
    index_of = {cohort.name: index for index, cohort in enumerate(spec.cohorts)}
    for cycle in cycles(parents):
        sink.error(codes.COHORT_CYCLE, "cohort parents form a cycle: " + " -> ".join(cycle + cycle[:1]),
                   cluster.position("spec", "cohorts", index_of[cycle[0]], "parent"))
    root = name if spec.cohorts and spec.rootCohort else None
    resolved = [ResolvedCohort(c, c.parent if c.parent is not None else root, i)
                for i, c in enumerate(spec.cohorts)]
    return resolved, root


def _resolve_topologies(cluster: Located, pools: list[ResolvedPool], exports: dict[str, list[LoadedDocument]],
                        sink: DiagnosticSink) -> None:
    """Each pool's topology: levels checked, shape turned into nodes, Topology names shared."""
    with_topology = [pool for pool in pools if pool.spec.topology is not None]
    names = topology_names(cluster, with_topology, sink)
    for pool in with_topology:
        resolved = resolve_pool_topology(cluster, pool, exports, sink)
        if resolved is not None:
            levels, source, nodes = resolved
            pool.topology = ResolvedTopology(names[pool.name], levels, tuple(nodes), source)


def _resolve_cluster(cluster: Located, sink: DiagnosticSink,
                     exports: dict[str, list[LoadedDocument]]) -> ResolvedCluster:
    spec = cluster.model.spec
    catalogue = load_catalogue()
    _check_unique(list(enumerate(spec.pools)), lambda ip: ip[1].name,
                  lambda ip: cluster.position("spec", "pools", ip[0], "name"), "pool", sink)
    pools = [ResolvedPool(p, i, spec.overcommit) for i, p in enumerate(spec.pools)]
    for pool in pools:
        taints = [(t.key, t.effect) for t in pool.spec.taints]
        if len(set(taints)) != len(taints):
            sink.error(codes.DUPLICATE_NAME, f"pool '{pool.name}': taints must be unique by key and effect",
                       cluster.position("spec", "pools", pool.index, "taints"))
        if pool.is_mig:
            gpu = catalogue.model(pool.spec.gpu)
            if gpu is None:
                sink.error(codes.UNKNOWN_MODEL,
                           f"pool '{pool.name}' uses MIG but '{pool.spec.gpu}' is not a MIG-capable model; "
                           f"known models: {', '.join(sorted(catalogue.models))}",
                           cluster.position("spec", "pools", pool.index, "gpu"))
            elif not isinstance(pool.spec.mig, str):
                for profile in pool.spec.mig.layout:
                    if gpu.profile(profile) is None:
                        sink.error(codes.UNKNOWN_MIG_PROFILE, catalogue.describe_unknown_profile(pool.spec.gpu, profile),
                                   cluster.position("spec", "pools", pool.index, "mig", "layout", profile, key=True))
    _resolve_topologies(cluster, pools, exports, sink)
    for pool in pools:
        resolve_node_sizes(cluster, pool, exports, sink)
    _check_versions(cluster, sink)
    cohorts, root = _resolve_cohorts(cluster, sink)
    _check_unique(list(enumerate(spec.priorities)), lambda ip: ip[1].name,
                  lambda ip: cluster.position("spec", "priorities", ip[0], "name"), "priority", sink)
    defaults = [i for i, p in enumerate(spec.priorities) if p.default]
    if len(defaults) > 1:
        sink.error(codes.DEFAULT_PRIORITY_TWICE,
                   "priorities " + ", ".join(repr(spec.priorities[i].name) for i in defaults)
                   + " are all marked default; at most one may be",
                   cluster.position("spec", "priorities", defaults[1], "default"))
    default_priority = spec.priorities[defaults[0]].name if defaults else None
    return ResolvedCluster(cluster, pools, cohorts, root, list(spec.priorities), default_priority)


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _check_versions(cluster: Located, sink: DiagnosticSink) -> None:
    """What the cluster's Kubernetes and Kueue versions allow (DRA, hierarchical cohorts)."""
    spec = cluster.model.spec
    gates = [name for name, enabled in spec.featureGates.items() if enabled]
    for problem in check_dra_version(spec.gpuAccess, spec.kubernetesVersion, gates):
        sink.error(problem.code, problem.message, cluster.position("spec", "gpuAccess"))
    kueue = _minor(spec.kueueVersion)
    if spec.cohorts and kueue < (0, 11):
        sink.error(codes.VERSION_GATE,
                   f"Cohort objects (hierarchical cohorts) need Kueue >= 0.11; the cluster runs Kueue {spec.kueueVersion}",
                   cluster.position("spec", "cohorts"))
    needs = {"dra-claims": ((0, 18), "KueueDRAIntegration (beta, on by default from Kueue 0.18)"),
             "dra-extended-resource": ((0, 19), "KueueDRAIntegrationExtendedResource (beta, on by default from Kueue 0.19)")}
    if spec.gpuAccess in needs and kueue < needs[spec.gpuAccess][0]:
        minimum, gate = needs[spec.gpuAccess]
        sink.error(codes.VERSION_GATE,
                   f"gpuAccess {spec.gpuAccess} needs Kueue's {gate}; the cluster runs Kueue {spec.kueueVersion}",
                   cluster.position("spec", "gpuAccess"))


_CAPACITY_RANK = {
    "on-demand-first": {"on-demand": 0, "spot": 1},
    "spot-first": {"spot": 0, "on-demand": 1},
    "on-demand-only": {"on-demand": 0},
    "spot-only": {"spot": 0},
}


def _accepted_pools(team: Located, cluster: ResolvedCluster, sink: DiagnosticSink) -> list[ResolvedPool]:
    """The pools the team accepts, in preference order: capacity class, then model, then declaration,
    identical pools spread over the teams."""
    spec = team.model.spec
    ranks = _CAPACITY_RANK[spec.capacity]
    models = spec.models
    if models is not None:
        known = {p.spec.gpu for p in cluster.pools}
        for index, model in enumerate(models):
            if model not in known:
                sink.error(codes.UNKNOWN_MODEL,
                           f"no pool of cluster '{cluster.name}' has GPU model '{model}'; "
                           f"its models are {', '.join(sorted(known))}", team.position("spec", "models", index))
    accepted = [p for p in cluster.pools
                if p.capacity_class in ranks and (models is None or p.spec.gpu in models)]

    def preference(pool: ResolvedPool) -> tuple:
        model_rank = models.index(pool.spec.gpu) if models is not None else 0
        return (ranks[pool.capacity_class], model_rank, pool.index)

    return _spread_over_interchangeable(team.model.metadata.name, sorted(accepted, key=preference))


def _spread_over_interchangeable(team: str, ordered: list[ResolvedPool]) -> list[ResolvedPool]:
    """`ordered` with each set of interchangeable pools (same model, capacity, node shape, taints,
    price: ResolvedPool.interchangeable_key) put in an order of this team's own.

    Declaration order alone would put every team's guarantee, burst and first try on the first
    of identical pools: the planner packs guarantees into it, each team's burst sits on its
    guarantee's flavor, and the last identical pool ends up with GPUs no team can reach (KP402).
    The order is weighted rendezvous hashing of the team's name over the pools (weighted by what
    each can guarantee): teams spread over identical pools in proportion to their size, the
    same team always gets the same order, and adding or removing a team or a pool changes no
    other team's order (the planner's caps then keep the spread even, plan.py)."""
    return reordered_among_identical(ordered, lambda pool: _rendezvous_score(team, pool))


def _rendezvous_score(team: str, pool: ResolvedPool) -> tuple[float, int]:
    """Weighted rendezvous hashing: the pool with the lowest -ln(u) / weight comes first, u a
    uniform draw from (0, 1] hashed from the team and pool names, so each pool comes first for
    a share of the teams proportional to its weight."""
    digest = hashlib.sha256(f"{team}\0{pool.name}".encode()).digest()
    draw = (int.from_bytes(digest[:8], "big") + 1) / 2**64
    return (-math.log(draw) / max(1, pool.guarantee_capacity), pool.index)


def profile_for_memory(amount: str, mig_pools: list[ResolvedPool], catalogue) -> str | None:
    """The smallest profile, on the first MIG pool (in preference order) that has one, whose real
    usable memory covers `amount` (profile names overstate memory: 1g.10gb holds 9.75 GiB)."""
    gib = float(parse_quantity(amount)) / 2**30
    for pool in mig_pools:
        profile = catalogue.smallest_profile_for_memory(pool.spec.gpu, gib)
        if profile is not None:
            return profile.name
    return None


def _resolve_team(team: Located, clusters: dict[str, ResolvedCluster],
                  sink: DiagnosticSink) -> tuple[ResolvedCluster, ResolvedTeam] | None:
    """The team with every reference checked and defaults applied, and the cluster it joins
    (None when it names no cluster that exists: nothing else about it can be checked)."""
    cluster = _team_cluster(team, clusters, sink)
    if cluster is None:
        return None
    spec = team.model.spec
    cohort = _team_cohort(team, cluster, sink)
    if spec.gpus.lend is not None and spec.gpus.lend > spec.gpus.guaranteed:
        sink.error(codes.LEND_ABOVE_GUARANTEE,
                   f"team '{team.model.metadata.name}': gpus.lend ({spec.gpus.lend}) is more than gpus.guaranteed "
                   f"({spec.gpus.guaranteed}); a team can only lend what it is guaranteed",
                   team.position("spec", "gpus", "lend"))
    _check_priority(spec.priority, team, cluster, sink, "spec", "priority")
    priority = spec.priority or cluster.default_priority
    accepted = _accepted_pools(team, cluster, sink)
    gpu_pools = [p for p in accepted if not p.is_mig]
    mig_pools = [p for p in accepted if p.is_mig]
    if not accepted and spec.models is None:
        sink.error(codes.NO_ACCEPTABLE_POOL,
                   f"team '{team.model.metadata.name}' accepts no pool: capacity '{spec.capacity}' excludes every "
                   f"pool of cluster '{cluster.name}'", team.position("spec", "capacity"))
    for profile in spec.mig:
        _check_profile(profile, team, cluster, mig_pools, sink, "spec", "mig", profile, key=True)
    workloads = _resolve_workloads(team, cluster, priority, accepted, sink)
    cspec = cluster.spec
    preemption: Preemption = spec.preemption or cspec.preemption
    return cluster, ResolvedTeam(
        located=team, cohort=cohort, namespaces=list(spec.namespaces), gpu_pools=gpu_pools,
        mig_pools=mig_pools, priority=priority, queueing=spec.queueing or cspec.queueing,
        preemption=preemption, weight=spec.weight, mig=dict(spec.mig), workloads=workloads)


def _team_cluster(team: Located, clusters: dict[str, ResolvedCluster], sink: DiagnosticSink) -> ResolvedCluster | None:
    """The cluster the team names (or the only one), else an error."""
    name = team.model.metadata.name
    cluster_name = team.model.spec.cluster
    if cluster_name is None:
        if len(clusters) == 1:
            return next(iter(clusters.values()))
        sink.error(codes.MISSING_FIELD,
                   f"team '{name}' must name its cluster (spec.cluster): the policy has "
                   f"{len(clusters)} clusters", team.position("spec", key=True))
        return None
    cluster = clusters.get(cluster_name)
    if cluster is None:
        sink.error(codes.UNKNOWN_CLUSTER,
                   f"team '{name}' names unknown cluster '{cluster_name}'"
                   + (f"; clusters: {', '.join(sorted(clusters))}" if clusters else ""),
                   team.position("spec", "cluster"))
    return cluster


def _team_cohort(team: Located, cluster: ResolvedCluster, sink: DiagnosticSink) -> str | None:
    """The team's cohort: as named, else the cluster's first root cohort, else none (and then
    burst/lend have nothing to borrow from or lend to)."""
    spec = team.model.spec
    name = team.model.metadata.name
    cohort_names = {c.spec.name for c in cluster.cohorts}
    cohort = spec.cohort
    if cohort is not None and cohort not in cohort_names:
        sink.error(codes.UNKNOWN_COHORT,
                   f"team '{name}' names unknown cohort '{cohort}'"
                   + (f"; cohorts of '{cluster.name}': {', '.join(sorted(cohort_names))}" if cohort_names
                      else f"; cluster '{cluster.name}' declares no cohorts"),
                   team.position("spec", "cohort"))
    if cohort is None and cluster.spec.rootCohort:
        # Without a root cohort (rootCohort: false, as import writes it) a team names its cohort or has none.
        cohort = next((c.spec.name for c in cluster.cohorts if c.spec.parent is None), None)
    if cohort is None:
        for field in ("burst", "lend"):
            if getattr(spec.gpus, field) is not None:
                sink.error(codes.LIMIT_WITHOUT_COHORT,
                           f"team '{name}' sets gpus.{field} but has no cohort to "
                           f"{'borrow from' if field == 'burst' else 'lend to'} (cluster '{cluster.name}' "
                           "declares no cohorts); Kueue refuses borrowingLimit/lendingLimit without a cohort",
                           team.position("spec", "gpus", field))
    return cohort


def _check_priority(value: str | None, team: Located, cluster: ResolvedCluster, sink: DiagnosticSink,
                    *path) -> None:
    if value is None or any(p.name == value for p in cluster.priorities):
        return
    names = {p.name for p in cluster.priorities}
    sink.error(codes.UNKNOWN_PRIORITY,
               f"unknown priority '{value}'"
               + (f"; priorities of '{cluster.name}': {', '.join(sorted(names))}"
                  if names else f"; cluster '{cluster.name}' declares no priorities"),
               team.position(*path))


def _check_profile(profile: str, team: Located, cluster: ResolvedCluster, mig_pools: list[ResolvedPool],
                   sink: DiagnosticSink, *path, key: bool = False) -> None:
    """A MIG profile the team asks for exists on a MIG pool it accepts."""
    if not mig_pools:
        sink.error(codes.UNKNOWN_MIG_PROFILE,
                   f"team '{team.model.metadata.name}' asks for MIG profile '{profile}' but accepts no MIG pool "
                   f"of cluster '{cluster.name}'", team.position(*path, key=key))
    elif not any(p.gpu_model is not None and p.gpu_model.profile_named(profile) for p in mig_pools):
        catalogue = load_catalogue()
        sink.error(codes.UNKNOWN_MIG_PROFILE,
                   "; ".join(catalogue.describe_unknown_profile(model, profile)
                             for model in sorted({p.spec.gpu for p in mig_pools})),
                   team.position(*path, key=key))


def _resolve_workloads(team: Located, cluster: ResolvedCluster, priority: str | None,
                       accepted: list[ResolvedPool], sink: DiagnosticSink) -> list[ResolvedWorkload]:
    """The team's declared workloads: priorities checked and defaulted, `gpuMemory` turned into
    the MIG profile one replica gets, topology requests checked against the pools' levels."""
    spec = team.model.spec
    mig_pools = [p for p in accepted if p.is_mig]
    pool_levels = {p.name: p.spec.topology.level_labels for p in accepted if p.spec.topology is not None}
    _check_unique(list(enumerate(spec.workloads)), lambda iw: iw[1].name,
                  lambda iw: team.position("spec", "workloads", iw[0], "name"), "workload", sink)
    workloads = []
    for index, workload in enumerate(spec.workloads):
        _check_priority(workload.priority, team, cluster, sink, "spec", "workloads", index, "priority")
        if workload.mig is not None:
            _check_profile(workload.mig, team, cluster, mig_pools, sink, "spec", "workloads", index, "mig")
        profile = workload.mig
        if workload.gpuMemory is not None:
            profile = profile_for_memory(workload.gpuMemory, mig_pools, load_catalogue())
            if profile is None:
                gib = float(parse_quantity(workload.gpuMemory)) / 2**30
                models = sorted({p.spec.gpu for p in mig_pools})
                sink.error(codes.UNKNOWN_MIG_PROFILE,
                           f"no MIG profile of the MIG pools team '{team.model.metadata.name}' accepts has {gib:g} "
                           "GiB of usable memory"
                           + (f" (models: {', '.join(models)})" if models else "; the team accepts no MIG pool"),
                           team.position("spec", "workloads", index, "gpuMemory"))
        if workload.topology is not None:
            check_workload_topology(team, index, workload.replicas, workload.topology, pool_levels,
                                    cluster.spec.kueueVersion, sink)
        wl_priority = workload.priority or priority
        workloads.append(ResolvedWorkload(workload, index, wl_priority, cluster.priority_value(wl_priority), profile))
    return workloads


def resolve(policy: ValidatedPolicy, sink: DiagnosticSink,
            node_exports: dict[str, list[LoadedDocument]] | None = None) -> list[ResolvedCluster]:
    """`node_exports`: the policy folder's `kubectl get nodes -o yaml` files, by display path
    (the shapes pools name in topology.nodesFrom)."""
    if not policy.clusters:
        if policy.teams and not policy.invalid_clusters:
            sink.error(codes.NO_CLUSTER, "the policy has teams but no Cluster document",
                       policy.teams[0].position())
        return []
    _check_unique(policy.clusters, lambda c: c.model.metadata.name, lambda c: c.position("metadata", "name"),
                  "cluster", sink)
    warn_unused_exports(policy.clusters, node_exports or {}, sink)
    clusters: dict[str, ResolvedCluster] = {}
    for cluster in policy.clusters:
        clusters.setdefault(cluster.model.metadata.name, _resolve_cluster(cluster, sink, node_exports or {}))
    # Team names become ClusterQueue names, namespaces get one LocalQueue each: both unique per cluster.
    by_cluster: dict[str, list[Located]] = defaultdict(list)
    for team in policy.teams:
        by_cluster[team.model.spec.cluster or ""].append(team)
    _check_unique(policy.teams, lambda t: (t.model.spec.cluster, t.model.metadata.name),
                  lambda t: t.position("metadata", "name"), "team", sink)
    owners: dict[tuple[str | None, str], tuple[str, Located, int]] = {}
    for team in policy.teams:
        for index, namespace in enumerate(team.model.spec.namespaces):
            key = (team.model.spec.cluster, namespace)
            if key in owners:
                other_team, other, other_index = owners[key]
                sink.error(codes.NAMESPACE_CLAIMED_TWICE,
                           f"namespace '{namespace}' is claimed by team '{team.model.metadata.name}' and by team "
                           f"'{other_team}'; a namespace belongs to one team",
                           team.position("spec", "namespaces", index),
                           related=other.position("spec", "namespaces", other_index))
            else:
                owners[key] = (team.model.metadata.name, team, index)
    for team in policy.teams:
        target = team.model.spec.cluster
        if target not in clusters and (target in policy.invalid_clusters or None in policy.invalid_clusters
                                       or (target is None and policy.invalid_clusters)):
            continue  # its cluster document has errors of its own, already reported
        resolved = _resolve_team(team, clusters, sink)
        if resolved is not None:
            cluster, resolved_team = resolved
            cluster.teams.append(resolved_team)
    for cluster in clusters.values():
        cluster.teams.sort(key=lambda t: t.name)
    return [clusters[name] for name in sorted(clusters)]
