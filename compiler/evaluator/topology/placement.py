"""Kueue's placement of one pod set on a TAS flavor (pkg/cache/scheduler
tas_flavor_snapshot.go, TASFlavorSnapshot.findTopologyAssignment) for a pod set without a
leader (no podset-group-name pairing): phase 1 counts how many pods and slices fit in every
domain (fillInCounts), phase 2a finds the level and domains that hold the request
(findLevelWithFitDomains), phase 2b walks down the tree keeping the number of domains minimal
(updateCountsToMinimumGeneric). Functions keep Kueue's names; each says which it follows."""

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
                 "slice_level", "slice_size_at_level")

    def __init__(self) -> None:
        self.count = 0
        self.slice_size = 1
        self.required = False
        self.unconstrained = False
        self.requested_level = 0
        self.slice_level = 0
        self.slice_size_at_level: dict[int, int] = {}


def find_topology_assignment(tree: DomainTree, request: TopologyRequest) -> TopologyAssignment | PlacementRefusal:
    """findTopologyAssignment for one pod set; the tree's free capacity is not changed (add the
    result with `DomainTree.add_usage` to place it)."""
    plan = _resolve_plan(tree, request)
    if isinstance(plan, PlacementRefusal):
        return plan
    stats = ExclusionStats()
    excluded = _fill_in_counts(tree, request, plan, stats)
    found = _find_level_with_fit_domains(tree, plan, plan.requested_level)
    if isinstance(found, _NoFit):
        kueue = found.message or kueue_not_fit_message(tree, plan.count, found.level, found.fit, found.wanted,
                                                      plan.slice_size, request.slices, plan.slice_size_at_level, stats)
        return PlacementRefusal(not_fit_message(tree, request, plan.requested_level, plan.slice_level, excluded), kueue)
    fit_level, fit = found
    fit = _update_counts_to_minimum(fit, plan.count, plan.slice_size, plan.unconstrained, True)
    level = fit_level
    # Above the slice level: pods and slices go greedily over all lower domains.
    while level < min(len(tree.levels) - 1, plan.slice_level):
        lower = _sorted_domains([c for d in fit for c in d.children], plan.unconstrained)
        fit = _update_counts_to_minimum(lower, plan.count, plan.slice_size, plan.unconstrained, True)
        level += 1
    # At and below it: each domain splits what it was given among its children.
    while level < len(tree.levels) - 1:
        size = plan.slice_size_at_level.get(level + 1, 1)
        below: list[Domain] = []
        for parent in fit:
            children = _sorted_domains(parent.children, plan.unconstrained)
            if size > 1:
                for child in children:
                    child.slice_count = child.pod_count // size
            below += _update_counts_to_minimum(children, parent.pod_count, size, plan.unconstrained, size > 1)
        fit = below
        level += 1
    return _build_assignment(tree, fit)


def find_topology_assignments(tree: DomainTree, requests: dict[str, TopologyRequest]
                              ) -> dict[str, TopologyAssignment] | PlacementRefusal:
    """FindTopologyAssignmentsForFlavor for a Workload's pod sets on one flavor (without
    podset-group-name pairs): in pod-set order, each placed with the usage of those before it
    assumed; the first that cannot be placed refuses the Workload. The tree is left as it was."""
    placed: dict[str, TopologyAssignment] = {}
    result: TopologyAssignment | PlacementRefusal | None = None
    for name, request in requests.items():
        result = find_topology_assignment(tree, request)
        if isinstance(result, PlacementRefusal):
            if len(requests) > 1:
                result = PlacementRefusal(f"pod set {name}: {result.reason}", result.kueue_reason)
            break
        tree.add_usage(result, request.per_pod)
        placed[name] = result
    for name, assignment in placed.items():
        tree.add_usage(assignment, requests[name].per_pod, sign=-1)
    return result if isinstance(result, PlacementRefusal) else placed


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


def _fill_in_counts(tree: DomainTree, request: TopologyRequest, plan: _Plan, stats: ExclusionStats) -> dict[str, str]:
    """fillInCounts: pods that fit in each leaf (fillLeafCounts), rolled up the tree
    (fillInCountsHelper). Returns the nodes the pod set cannot use, name -> why; `stats`
    counts them as Kueue's tasExclusionStats do (for its message)."""
    for level in tree.domains_per_level:
        for domain in level.values():
            domain.pod_count = domain.slice_count = 0
    per_pod = dict(request.per_pod)
    per_pod[PODS_RESOURCE] = per_pod.get(PODS_RESOURCE, 0) + 1  # resources.OnePodRequest
    excluded: dict[str, str] = {}
    stats.total_nodes += len(tree.leaves)
    for leaf in tree.leaves.values():
        if leaf.node is not None:
            why = node_infeasibility(leaf.node, request, tree.flavor.tolerations)
            if why is not None:
                excluded[leaf.node.name] = why
                stats.record(why)
                continue
        leaf.pod_count = count_in(per_pod, leaf.free)
        if leaf.pod_count == 0:
            stats.record_resource(per_pod, leaf.free)
    for root in tree.roots.values():
        _fill_in_counts_helper(root, plan, 0)
    return excluded


def count_in(per_pod: dict[str, int], free: dict[str, int]) -> int:
    """resources.CountInWithLimitingResource: how many pods fit, never negative."""
    fits = None
    for resource, amount in per_pod.items():
        count = MAX_INT32 if amount == 0 else max(0, min(free.get(resource, 0) // amount, MAX_INT32))
        fits = count if fits is None else min(fits, count)
    return fits or 0


def _fill_in_counts_helper(domain: Domain, plan: _Plan, level: int) -> None:
    """fillInCountsHelper without leaders: a parent's pods are its children's (rounded down to
    the inner slice size where a layer constrains the children's level), its slices are its
    children's, or counted afresh at the slice level."""
    if not domain.children:
        if level == plan.slice_level:
            domain.slice_count = domain.pod_count // plan.slice_size
        return
    inner = plan.slice_size_at_level.get(level + 1)
    pods = slices = 0
    for child in domain.children:
        _fill_in_counts_helper(child, plan, level + 1)
        pods += child.pod_count if inner is None else (child.pod_count // inner) * inner
        slices += child.slice_count
    domain.pod_count = pods
    domain.slice_count = pods // plan.slice_size if level == plan.slice_level else slices


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
    """findLevelWithFitDomains: one domain of the level that holds every slice (best fit), or
    for a preferred request the next level up, or for the top level / unconstrained the
    fewest domains in order."""
    domains = list(tree.domains_per_level[level].values())
    if not domains:
        return _NoFit(level, 0, 0, f"no topology domains at level: {tree.levels[level]}")
    ordered = _sorted_domains(domains, plan.unconstrained)
    top = ordered[0]
    wanted = plan.count // plan.slice_size
    lfc = _least_free_capacity(plan.unconstrained)
    if not lfc and top.slice_count >= wanted:
        top = _find_best_fit_domain(ordered, wanted, slices=True)
    if lfc:
        for candidate in ordered:
            if candidate.slice_count >= wanted:
                return level, [candidate]
        if plan.required:
            # (Kueue reports the pod count of the roomiest domain here, not its slices)
            return _NoFit(level, ordered[-1].pod_count, wanted)
    if top.slice_count >= wanted:
        return level, [top]
    if plan.required:
        return _NoFit(level, top.slice_count, wanted)
    if level > 0 and not plan.unconstrained:
        return _find_level_with_fit_domains(tree, plan, level - 1)
    chosen: list[Domain] = []
    remaining = wanted
    for index, domain in enumerate(ordered):
        if remaining <= 0:
            break
        if not lfc and domain.slice_count >= remaining:
            domain = _find_best_fit_domain(ordered[index:], remaining, slices=True)
        chosen.append(domain)
        remaining -= domain.slice_count
    return (level, chosen) if remaining <= 0 else _NoFit(level, wanted - remaining, wanted)


def _find_best_fit_domain(domains: list[Domain], needed: int, *, slices: bool) -> Domain:
    """findBestFitDomainBy: the first domain with the smallest count that still holds `needed`."""
    best, best_count = domains[0], MAX_INT32
    for domain in domains:
        count = domain.slice_count if slices else domain.pod_count
        if needed <= count < best_count:
            best, best_count = domain, count
    return best


def _sorted_domains(domains: list[Domain], unconstrained: bool) -> list[Domain]:
    """sortedDomains: slices descending (ascending for least free capacity), then pods
    ascending, then the level values."""
    sign = 1 if _least_free_capacity(unconstrained) else -1
    return sorted(domains, key=lambda d: (sign * d.slice_count, d.pod_count, d.level_values))


def _update_counts_to_minimum(domains: list[Domain], count: int, slice_size: int, unconstrained: bool,
                              slices: bool) -> list[Domain]:
    """updateCountsToMinimumGeneric without leaders: take domains in order until `count` pods
    (or count / slice_size slices) are placed, the last one chosen by best fit."""
    best_fit = not _least_free_capacity(unconstrained)
    remaining = count // slice_size if slices else count
    result: list[Domain] = []
    for index, domain in enumerate(domains):
        held = domain.slice_count if slices else domain.pod_count
        if best_fit and held >= remaining:
            domain = _find_best_fit_domain(domains[index:], remaining, slices=slices)
            held = domain.slice_count if slices else domain.pod_count
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


def _build_assignment(tree: DomainTree, domains: list[Domain]) -> TopologyAssignment:
    """buildAssignment: domains in level-value order, only the hostname level when it is the
    lowest, domains given no pods left out."""
    first = len(tree.levels) - 1 if tree.hostname_lowest else 0
    placed = tuple(DomainAssignment(d.level_values[first:], d.pod_count)
                   for d in sorted(domains, key=lambda d: d.level_values) if d.pod_count > 0)
    return TopologyAssignment(tree.levels[first:], placed)
