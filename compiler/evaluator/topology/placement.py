"""Kueue's placement of one pod set on a TAS flavor (pkg/cache/scheduler
tas_flavor_snapshot.go, TASFlavorSnapshot.findTopologyAssignment), for a pod set alone or for
a pod-set group's workers with their leader (podset-group-name): phase 1 counts how many pods
and slices fit in every domain (fillInCounts), phase 2a finds the level and domains that hold
the request (findLevelWithFitDomains), phase 2b walks down the tree keeping the number of
domains minimal (updateCountsToMinimumGeneric). Functions keep Kueue's names; each says which it follows."""

from __future__ import annotations

from compiler.evaluator.topology.feasibility import node_infeasibility
from compiler.evaluator.topology.records import (
    PODS_RESOURCE,
    DomainAssignment,
    PlacementRefusal,
    TopologyAssignment,
    TopologyRequest,
)
from compiler.evaluator.topology.refusals import ExclusionStats, kueue_not_fit_message, not_fit_message
from compiler.evaluator.topology.tree import Domain, DomainTree

MAX_INT32 = 2**31 - 1


class _Plan:
    """findTopologyAssignmentState: what the request resolves to on this tree."""

    __slots__ = ("count", "slice_size", "required", "unconstrained", "requested_level",
                 "slice_level", "slice_size_at_level", "leader_count")

    def __init__(self) -> None:
        self.count = 0
        self.slice_size = 1
        self.required = False
        self.unconstrained = False
        self.requested_level = 0
        self.slice_level = 0
        self.slice_size_at_level: dict[int, int] = {}
        self.leader_count = 0  # 1 when a pod-set group's leader is placed with the workers


def find_topology_assignment(tree: DomainTree, request: TopologyRequest) -> TopologyAssignment | PlacementRefusal:
    """findTopologyAssignment for one pod set; the tree's free capacity is not changed (add the
    result with `DomainTree.add_usage` to place it)."""
    result = find_group_assignment(tree, request, None)
    return result if isinstance(result, PlacementRefusal) else result[0]


def find_group_assignment(tree: DomainTree, request: TopologyRequest, leader: TopologyRequest | None
                          ) -> tuple[TopologyAssignment, TopologyAssignment | None] | PlacementRefusal:
    """findTopologyAssignment for the workers' pod set and, in a pod-set group, its leader:
    one search over the workers' request (level, slices, node constraints are the workers'),
    each domain counting whether it holds the leader's one pod and how many workers fit beside
    it. Returns (workers' assignment, leader's assignment or None)."""
    plan = _resolve_plan(tree, request)
    if isinstance(plan, PlacementRefusal):
        return plan
    # PodSet grouping validation requires the leader pod set to have one replica.
    plan.leader_count = 1 if leader is not None else 0
    stats = ExclusionStats()
    excluded = _fill_in_counts(tree, request, plan, stats, leader)
    found = _find_level_with_fit_domains(tree, plan, plan.requested_level)
    if isinstance(found, _NoFit):
        kueue = found.message or kueue_not_fit_message(tree, plan.count, found.level, found.fit, found.wanted,
                                                      plan.slice_size, request.slices, plan.slice_size_at_level, stats)
        return PlacementRefusal(not_fit_message(tree, request, plan.requested_level, plan.slice_level, excluded), kueue)
    fit_level, fit = found
    fit = _update_counts_to_minimum(fit, plan.count, plan.leader_count, plan.slice_size, plan.unconstrained, True)
    level = fit_level
    # Above the slice level: pods and slices go greedily over all lower domains.
    while level < min(len(tree.levels) - 1, plan.slice_level):
        lower = _sorted_domains([c for d in fit for c in d.children], plan.unconstrained)
        fit = _update_counts_to_minimum(lower, plan.count, plan.leader_count, plan.slice_size, plan.unconstrained,
                                        True)
        level += 1
    # At and below it: each domain splits what it was given (and its leader) among its children.
    while level < len(tree.levels) - 1:
        size = plan.slice_size_at_level.get(level + 1, 1)
        below: list[Domain] = []
        for parent in fit:
            children = _sorted_domains(parent.children, plan.unconstrained)
            if size > 1:
                for child in children:
                    child.slice_count = child.pod_count // size
                    child.slice_count_with_leader = child.pod_count_with_leader // size
            below += _update_counts_to_minimum(children, parent.pod_count, parent.leader_count, size,
                                               plan.unconstrained, size > 1)
        fit = below
        level += 1
    if leader is None:
        return _build_assignment(tree, [(d, d.pod_count) for d in fit]), None
    leaders = [(d, d.leader_count) for d in fit if d.leader_count > 0]
    workers = [(d, d.pod_count) for d in fit if d.pod_count > 0]
    return _build_assignment(tree, workers), _build_assignment(tree, leaders)


def find_topology_assignments(tree: DomainTree, requests: dict[str, TopologyRequest]
                              ) -> dict[str, TopologyAssignment] | PlacementRefusal:
    """FindTopologyAssignmentsForFlavor for a Workload's pod sets on one flavor: pod sets of
    one `group` (podset-group-name) are placed together, the others alone, in the order each
    group first appears, each seeing the usage of those before it; the first that cannot be
    placed refuses the Workload. The tree is left as it was."""
    placed: dict[str, TopologyAssignment] = {}
    refusal: PlacementRefusal | None = None
    for names in pod_set_groups(requests):
        result = place_group(tree, [(name, requests[name]) for name in names])
        if isinstance(result, PlacementRefusal):
            refusal = result
            if len(requests) > 1:
                refusal = PlacementRefusal(f"pod set {names[0]}: {result.reason}", result.kueue_reason)
            break
        for name, assignment in result.items():
            tree.add_usage(assignment, requests[name].per_pod)
            placed[name] = assignment
    for name, assignment in placed.items():
        tree.add_usage(assignment, requests[name].per_pod, sign=-1)
    return refusal if refusal is not None else placed


def pod_set_groups(requests: dict[str, TopologyRequest]) -> list[list[str]]:
    """FindTopologyAssignmentsForFlavor's grouping: pod sets by podset-group-name (a pod set
    without one is a group of its own), groups in the order they first appear."""
    groups: dict[object, list[str]] = {}
    for index, (name, request) in enumerate(requests.items()):
        groups.setdefault(("group", request.group) if request.group is not None else index, []).append(name)
    return list(groups.values())


def place_group(tree: DomainTree, members: list[tuple[str, TopologyRequest]]
                ) -> dict[str, TopologyAssignment] | PlacementRefusal:
    """One group's placement (findLeaderAndWorkers): the first pod set is the workers and the
    second the leader, unless the second has fewer pods (then the first leads)."""
    workers_name, workers = members[0]
    if len(members) == 1:
        result = find_group_assignment(tree, workers, None)
        return result if isinstance(result, PlacementRefusal) else {workers_name: result[0]}
    leader_name, leader = members[1]
    if leader.count > workers.count:
        (workers_name, workers), (leader_name, leader) = members[1], members[0]
    result = find_group_assignment(tree, workers, leader)
    if isinstance(result, PlacementRefusal):
        return result
    found = {workers_name: result[0], leader_name: result[1]}
    return {name: found[name] for name, _ in members}


def _resolve_plan(tree: DomainTree, request: TopologyRequest) -> _Plan | PlacementRefusal:
    """The first half of findTopologyAssignment: slice size, levels and their checks."""
    plan = _Plan()
    plan.count = request.count
    slice_only = request.required is None and request.preferred is None and bool(request.slices)
    plan.slice_size = request.slices[0].size if request.slices else 1
    plan.required = request.required is not None
    plan.unconstrained = request.unconstrained or request.implied or slice_only
    key = _level_key(tree, request, slice_only)
    if key is None:
        return PlacementRefusal("the pod set names no topology level", "topology level not specified")
    if key not in tree.levels:
        return PlacementRefusal(f'topology "{tree.flavor.topology_name}" has no level {key}',
                                f"no requested topology level: {key}")
    plan.requested_level = tree.levels.index(key)
    slice_key = request.slices[0].level if request.slices else tree.levels[-1]
    if slice_key not in tree.levels:
        return PlacementRefusal(f'topology "{tree.flavor.topology_name}" has no level {slice_key} for slices',
                                f"no requested topology level for slices: {slice_key}")
    plan.slice_level = tree.levels.index(slice_key)
    if plan.requested_level > plan.slice_level:
        return PlacementRefusal(f"the slice level {slice_key} is above the pod set's level {key}",
                                f"podset slice topology {slice_key} is above the podset topology {key}")
    return _build_slice_size_at_level(tree, request, plan)


def _level_key(tree: DomainTree, request: TopologyRequest, slice_only: bool) -> str | None:
    """levelKeyWithImpliedFallback / levelKey."""
    if request.required is not None:
        return request.required
    if request.preferred is not None:
        return request.preferred
    if slice_only:
        return tree.levels[0]
    if request.unconstrained or request.implied:
        return tree.levels[-1]
    return None


def _build_slice_size_at_level(tree: DomainTree, request: TopologyRequest, plan: _Plan) -> _Plan | PlacementRefusal:
    """buildSliceSizeAtLevel: the inner slice layers, each finer than and dividing the last."""
    previous_size, previous_level = plan.slice_size, plan.slice_level
    for layer in request.slices[1:]:
        if layer.level not in tree.levels:
            return PlacementRefusal(f'topology "{tree.flavor.topology_name}" has no level {layer.level} for slices',
                                    f"no requested topology level for additional slice layer: {layer.level}")
        level = tree.levels.index(layer.level)
        if level <= previous_level:
            return PlacementRefusal(f"the slice layer at {layer.level} must be below {tree.levels[previous_level]}",
                                    f"additional slice layer topology {layer.level} must be at a lower level than "
                                    f"{tree.levels[previous_level]}")
        if previous_size % layer.size:
            return PlacementRefusal(f"the slice layer size {layer.size} does not divide {previous_size}",
                                    f"additional slice layer size {layer.size} must evenly divide parent layer size "
                                    f"{previous_size}")
        for between in range(previous_level + 1, level + 1):
            plan.slice_size_at_level[between] = layer.size
        previous_size, previous_level = layer.size, level
    return plan


def _fill_in_counts(tree: DomainTree, request: TopologyRequest, plan: _Plan, stats: ExclusionStats,
                    leader: TopologyRequest | None = None) -> dict[str, str]:
    """fillInCounts: pods that fit in each leaf (fillLeafCounts), rolled up the tree
    (fillInCountsHelper). Returns the nodes the pod set cannot use, name -> why; `stats`
    counts them as Kueue's tasExclusionStats do (for its message). With a leader each leaf also
    says whether the leader's pod fits and how many workers fit beside it."""
    for level in tree.domains_per_level:
        for domain in level.values():
            domain.pod_count = domain.slice_count = 0
            domain.pod_count_with_leader = domain.slice_count_with_leader = domain.leader_count = 0
    per_pod = _with_pod_slot(request.per_pod)
    leader_per_pod = _with_pod_slot(leader.per_pod) if leader is not None else None
    excluded: dict[str, str] = {}
    stats.total_nodes += len(tree.leaves)
    # (a node can only be left out for a taint, or for a selector or affinity the pod set has)
    may_exclude = bool(request.node_selector or request.affinity) or tree.tainted
    for leaf in tree.leaves.values():
        if may_exclude and leaf.node is not None:
            why = node_infeasibility(leaf.node, request, tree.flavor.tolerations)
            if why is not None:
                excluded[leaf.node.name] = why
                stats.record(why)
                continue
        leaf.pod_count = count_in(per_pod, leaf.free)
        if leaf.pod_count == 0:
            stats.record_resource(per_pod, leaf.free)
        leaf.pod_count_with_leader = leaf.pod_count
        if leader_per_pod is not None and count_in(leader_per_pod, leaf.free) > 0:
            leaf.leader_count = 1
            rest = dict(leaf.free)
            for resource, amount in leader_per_pod.items():
                rest[resource] = rest.get(resource, 0) - amount
            leaf.pod_count_with_leader = count_in(per_pod, rest)
    for root in tree.roots.values():
        _fill_in_counts_helper(root, plan, 0)
    return excluded


def _with_pod_slot(per_pod: dict[str, int]) -> dict[str, int]:
    """A pod's requests plus the `pods` slot it takes (resources.OnePodRequest)."""
    requests = dict(per_pod)
    requests[PODS_RESOURCE] = requests.get(PODS_RESOURCE, 0) + 1
    return requests


def count_in(per_pod: dict[str, int], free: dict[str, int]) -> int:
    """resources.CountInWithLimitingResource: how many pods fit, never negative (a resource
    the pod asks none of does not limit; no requests at all fit nowhere)."""
    if not per_pod:
        return 0
    fits = MAX_INT32
    for resource, amount in per_pod.items():
        if amount:
            have = free.get(resource, 0)
            if have < amount:
                return 0  # (the first short resource settles it, a negative free one too)
            count = have // amount
            if count < fits:
                fits = count
    return fits


def _fill_in_counts_helper(domain: Domain, plan: _Plan, level: int) -> None:
    """fillInCountsHelper: a parent's pods are its children's (rounded down to the inner slice
    size where a layer constrains the children's level), its slices are its children's, or
    counted afresh at the slice level. With a leader, the parent holds it if a child does, and
    its workers beside the leader are its children's less the smallest loss a leader-holding
    child takes by holding it."""
    if not domain.children:
        if level == plan.slice_level:
            domain.slice_count = domain.pod_count // plan.slice_size
            domain.slice_count_with_leader = domain.pod_count_with_leader // plan.slice_size
        return
    inner = plan.slice_size_at_level.get(level + 1)
    leader_required = plan.leader_count > 0
    pods = slices = leaders = 0
    contributes = False
    pod_loss = slice_loss = MAX_INT32
    for child in domain.children:
        _fill_in_counts_helper(child, plan, level + 1)
        child_pods, child_with_leader = child.pod_count, child.pod_count_with_leader
        if inner is not None:
            child_pods, child_with_leader = (child_pods // inner) * inner, (child_with_leader // inner) * inner
        pods += child_pods
        slices += child.slice_count
        if not leader_required or child.leader_count > 0:
            contributes = True
            pod_loss = min(child_pods - child_with_leader, pod_loss)
            slice_loss = min(child.slice_count - child.slice_count_with_leader, slice_loss)
        leaders = max(child.leader_count, leaders)
    domain.pod_count = pods
    with_leader = slices - slice_loss if contributes else 0
    domain.pod_count_with_leader = pods - pod_loss if contributes else 0
    domain.leader_count = leaders
    if level == plan.slice_level:
        slices = pods // plan.slice_size
        with_leader = domain.pod_count_with_leader // plan.slice_size
    domain.slice_count = slices
    domain.slice_count_with_leader = with_leader


def _least_free_capacity(unconstrained: bool) -> bool:
    """useLeastFreeCapacityAlgorithm: unconstrained requests (TASProfileMixed, on in v0.19.2)."""
    return unconstrained


class _NoFit:
    """Why findLevelWithFitDomains found nothing: at `level`, `fit` of `wanted` slices fit
    (the counts Kueue's notFitMessage reports), or Kueue's `message` outright."""

    __slots__ = ("level", "fit", "wanted", "message")

    def __init__(self, level: int, fit: int, wanted: int, message: str = "") -> None:
        self.level, self.fit, self.wanted, self.message = level, fit, wanted, message


def _find_level_with_fit_domains(tree: DomainTree, plan: _Plan, level: int) -> tuple[int, list[Domain]] | _NoFit:
    """findLevelWithFitDomains: one domain of the level that holds every slice (and the
    leader) by best fit, or for a preferred request the next level up, or for the top level /
    unconstrained the fewest domains in order, a leader-holding one first."""
    domains = list(tree.domains_per_level[level].values())
    if not domains:
        return _NoFit(level, 0, 0, f"no topology domains at level: {tree.levels[level]}")
    ordered = _sorted_domains_with_leader(domains, plan.unconstrained)
    top = ordered[0]
    wanted = plan.count // plan.slice_size
    leaders = plan.leader_count
    lfc = _least_free_capacity(plan.unconstrained)
    if not lfc and top.slice_count_with_leader >= wanted and top.leader_count >= leaders:
        top = _find_best_fit_domain(ordered, wanted, leaders, slices=True)
    if lfc:
        for candidate in ordered:
            capacity = candidate.slice_count
            if leaders > 0:
                if candidate.leader_count < leaders:
                    continue
                capacity = candidate.slice_count_with_leader
            if capacity >= wanted:
                return level, [candidate]
        if plan.required:
            # (Kueue reports the pod count of the last domain here, not its slices)
            return _NoFit(level, ordered[-1].pod_count, wanted)
    if top.slice_count_with_leader >= wanted and top.leader_count >= leaders:
        return level, [top]
    if plan.required:
        return _NoFit(level, top.slice_count, wanted)
    if level > 0 and not plan.unconstrained:
        return _find_level_with_fit_domains(tree, plan, level - 1)
    chosen: list[Domain] = []
    remaining, remaining_leaders = wanted, leaders
    ordered = _prioritize_leader_domain(ordered, plan.count, leaders, plan.slice_size, True)
    # Leaders first, from a domain that keeps the workers' capacity, then the rest by capacity.
    index = 0
    while remaining_leaders > 0 and index < len(ordered) and ordered[index].leader_count > 0:
        domain = ordered[index]
        if not lfc and domain.slice_count_with_leader >= remaining:
            domain = _find_best_fit_domain(ordered[index:], remaining, remaining_leaders, slices=True)
        chosen.append(domain)
        remaining_leaders -= domain.leader_count
        remaining -= domain.slice_count_with_leader
        index += 1
    if remaining_leaders > 0:
        return _NoFit(level, leaders - remaining_leaders, wanted)
    rest = _sorted_domains(ordered[index:], plan.unconstrained)
    for index, domain in enumerate(rest):
        if remaining <= 0:
            break
        if not lfc and domain.slice_count >= remaining:
            domain = _find_best_fit_domain(rest[index:], remaining, 0, slices=True)
        chosen.append(domain)
        remaining -= domain.slice_count
    return (level, chosen) if remaining <= 0 else _NoFit(level, wanted - remaining, wanted)


def _find_best_fit_domain(domains: list[Domain], needed: int, leaders: int, *, slices: bool) -> Domain:
    """findBestFitDomainBy: the first domain with the smallest count that still holds `needed`
    (the counts beside a leader, among the domains that hold it, when a leader is wanted)."""
    best, best_count = domains[0], MAX_INT32
    for domain in domains:
        if domain.leader_count < leaders:
            continue
        if leaders > 0:
            count = domain.slice_count_with_leader if slices else domain.pod_count_with_leader
        else:
            count = domain.slice_count if slices else domain.pod_count
        if needed <= count < best_count:
            best, best_count = domain, count
    return best


def _sorted_domains(domains: list[Domain], unconstrained: bool) -> list[Domain]:
    """sortedDomains: slices descending (ascending for least free capacity), then pods
    ascending, then the level values."""
    sign = 1 if _least_free_capacity(unconstrained) else -1
    return sorted(domains, key=lambda d: (sign * d.slice_count, d.pod_count, d.level_values))


def _sorted_domains_with_leader(domains: list[Domain], unconstrained: bool) -> list[Domain]:
    """sortedDomainsWithLeader: domains holding a leader first, then as sortedDomains by the
    counts beside a leader."""
    sign = 1 if _least_free_capacity(unconstrained) else -1
    return sorted(domains, key=lambda d: (-d.leader_count, sign * d.slice_count_with_leader,
                                          d.pod_count_with_leader, d.level_values))


def _prioritize_leader_domain(domains: list[Domain], count: int, leaders: int, slice_size: int,
                              slices: bool) -> list[Domain]:
    """prioritizeLeaderDomain: move to the front the first domain that holds the leader and
    whose loss of workers for it still leaves room for all of them."""
    if leaders == 0 or len(domains) < 2:
        return domains
    required = count // slice_size if slices else count
    available = sum(d.slice_count if slices else d.pod_count for d in domains)
    for index, domain in enumerate(domains):
        if domain.leader_count < leaders:
            continue
        loss = (domain.slice_count - domain.slice_count_with_leader if slices
                else domain.pod_count - domain.pod_count_with_leader)
        if available - loss < required:
            continue
        if index == 0:
            return domains
        return [domain] + domains[:index] + domains[index + 1:]
    return domains


def _update_counts_to_minimum(domains: list[Domain], count: int, leaders: int, slice_size: int,
                              unconstrained: bool, slices: bool) -> list[Domain]:
    """updateCountsToMinimumGeneric: take domains in order until `count` pods (or count /
    slice_size slices) and the leader are placed, the last one chosen by best fit; while the
    leader is unplaced a domain gives the workers only its room beside the leader."""
    domains = _prioritize_leader_domain(domains, count, leaders, slice_size, slices)
    best_fit = not _least_free_capacity(unconstrained)
    remaining = count // slice_size if slices else count
    remaining_leaders = leaders
    with_leader_field, primary_field = (("slice_count_with_leader", "slice_count") if slices
                                        else ("pod_count_with_leader", "pod_count"))
    size = slice_size if slices else 1
    result: list[Domain] = []
    for index, domain in enumerate(domains):
        if remaining_leaders > 0:
            # consumeWithLeadersGeneric
            if (best_fit and getattr(domain, with_leader_field) >= remaining
                    and domain.leader_count >= remaining_leaders):
                domain = _find_best_fit_domain(domains[index:], remaining, remaining_leaders, slices=slices)
            with_leader = getattr(domain, with_leader_field)
            result.append(domain)
            if with_leader >= remaining and domain.leader_count >= remaining_leaders:
                setattr(domain, primary_field, remaining)
                domain.leader_count = remaining_leaders
                domain.pod_count = remaining * size
                return result
            if with_leader > remaining:
                with_leader = remaining
                setattr(domain, with_leader_field, with_leader)
            if domain.leader_count > remaining_leaders:
                domain.leader_count = remaining_leaders
            setattr(domain, primary_field, with_leader)
            domain.pod_count = with_leader * size
            remaining_leaders -= domain.leader_count
            remaining -= with_leader
            continue
        held = domain.slice_count if slices else domain.pod_count
        if best_fit and held >= remaining:
            domain = _find_best_fit_domain(domains[index:], remaining, 0, slices=slices)
            held = domain.slice_count if slices else domain.pod_count
        domain.leader_count = 0
        result.append(domain)
        if held >= remaining:
            if slices:
                domain.slice_count = remaining
            domain.pod_count = remaining * slice_size if slices else remaining
            return result
        if slices:
            domain.pod_count = held * slice_size
        remaining -= held
    return result


def _build_assignment(tree: DomainTree, domains: list[tuple[Domain, int]]) -> TopologyAssignment:
    """buildAssignment: (domain, pods) in level-value order, only the hostname level when it is
    the lowest, domains given no pods left out."""
    first = len(tree.levels) - 1 if tree.hostname_lowest else 0
    placed = tuple(DomainAssignment(d.level_values[first:], count)
                   for d, count in sorted(domains, key=lambda pair: pair[0].level_values) if count > 0)
    return TopologyAssignment(tree.levels[first:], placed)
