"""Preemption target selection: classical (withinClusterQueue, reclaimWithinCohort,
borrowWithinCohort, hierarchical reclaim) and Fair Sharing strategies, with fill-back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import ClusterQueue, FlavorResource
from compiler.evaluator.tree import QuotaNode, quantities_fit_in_quota

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
HUMAN_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}

WITHIN_CQ, HIERARCHICAL, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(1, 5)
_VARIANT_REASON = {WITHIN_CQ: IN_CLUSTER_QUEUE, HIERARCHICAL: IN_COHORT_RECLAMATION,
                   RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
                   RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING}


@dataclass
class Target:
    info: WorkloadInfo
    reason: str


def satisfies_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    if policy == "LowerPriority":
        return preemptor.workload.priority > candidate.workload.priority
    if policy == "LowerOrNewerEqualPriority":
        return preemptor.priority > candidate.priority or (
            preemptor.priority == candidate.priority and preemptor.workload.created < candidate.workload.created)
    return policy == "Any"


def candidate_order(preemptor_cq: str) -> Callable[[WorkloadInfo], tuple]:
    """Kueue's CandidatesOrdering: other queues first, lower priority, most recently
    reserved first, then UID."""
    def key(info: WorkloadInfo) -> tuple:
        rank = info.reserved_rank
        return (info.cluster_queue == preemptor_cq, info.priority, -rank[0], -rank[1], info.uid)
    return key


class Preemptor:
    def __init__(self, nodes: dict[str, QuotaNode], specs: dict[str, ClusterQueue],
                 admitted: dict[str, dict[str, WorkloadInfo]], fair_sharing: bool,
                 strategies: list[str]) -> None:
        self.nodes = nodes          # CQ name -> leaf node
        self.specs = specs
        self.admitted = admitted    # CQ name -> key -> info holding quota
        self.fair_sharing = fair_sharing
        self.strategies = strategies
        # CQ -> (flavor, resource) -> key -> info: candidates are found per contested
        # flavor-resource without scanning every admitted workload of the cohort.
        self.by_fr: dict[str, dict[FlavorResource, dict[str, WorkloadInfo]]] = {}
        # Priorities of admitted workloads per CQ and per cohort tree (root): a preemptor no
        # policy lets preempt anything there is answered without a candidate search.
        self.priorities: dict[object, dict[int, int]] = {}

    def _count(self, info: WorkloadInfo, delta: int) -> None:
        node = self.nodes[info.cluster_queue]
        for scope in (info.cluster_queue, id(node.root())):
            counts = self.priorities.setdefault(scope, {})
            counts[info.workload.priority] = counts.get(info.workload.priority, 0) + delta
            if counts[info.workload.priority] == 0:
                del counts[info.workload.priority]

    def track(self, info: WorkloadInfo) -> None:
        per_cq = self.by_fr.setdefault(info.cluster_queue, {})
        for fr in info.usage:
            per_cq.setdefault(fr, {})[info.key] = info
        self._count(info, 1)

    def untrack(self, info: WorkloadInfo) -> None:
        per_cq = self.by_fr.get(info.cluster_queue, {})
        for fr in info.usage:
            per_cq.get(fr, {}).pop(info.key, None)
        self._count(info, -1)

    def _may_have_candidates(self, scope, policy: str, priority: int) -> bool:
        if policy == "Never":
            return False
        if policy == "Any":
            return True
        counts = self.priorities.get(scope)
        if not counts:
            return False
        lowest = min(counts)
        return lowest < priority or (policy == "LowerOrNewerEqualPriority" and lowest <= priority)

    # -- snapshot edits ----------------------------------------------------------------------
    def remove(self, info: WorkloadInfo) -> None:
        self.nodes[info.cluster_queue].remove_all(info.usage)

    def add(self, info: WorkloadInfo) -> None:
        self.nodes[info.cluster_queue].add_all(info.usage)

    @staticmethod
    def uses(info: WorkloadInfo, frs: set[FlavorResource]) -> bool:
        return any(fr in frs for fr in info.usage)

    def fits(self, node: QuotaNode, usage: dict[FlavorResource, int], allow_borrowing: bool) -> bool:
        for fr, value in usage.items():
            if not allow_borrowing and node.borrowing_with(fr, value):
                return False
            if value > node.available(fr):
                return False
        return True

    def targets(self, preemptor: WorkloadInfo, cq_name: str, frs: set[FlavorResource],
                usage: dict[FlavorResource, int]) -> list[Target]:
        if self.fair_sharing:
            return self._fair(preemptor, cq_name, frs, usage)
        return self._classical(preemptor, cq_name, frs, usage)

    # -- classical ---------------------------------------------------------------------------
    def _classify(self, preemptor: WorkloadInfo, cq_name: str, spec: ClusterQueue, frs,
                  candidate: WorkloadInfo, advantage: bool) -> int:
        # (the caller found the candidate through the flavor-resource index, so it uses frs)
        own = candidate.cluster_queue == cq_name
        policy = spec.preemption.within_cluster_queue if own else spec.preemption.reclaim_within_cohort
        if not satisfies_policy(preemptor, candidate, policy):
            return 0
        if own:
            return WITHIN_CQ
        if advantage:
            return HIERARCHICAL
        if spec.preemption.borrow_within_cohort == "Never":
            return RECLAIM_WITHOUT_BORROWING
        threshold = spec.preemption.max_priority_threshold
        if candidate.priority >= preemptor.priority or (threshold is not None and candidate.priority > threshold):
            return RECLAIM_WITHOUT_BORROWING
        return RECLAIM_WHILE_BORROWING

    def _from_cq(self, name: str, lca, preemptor, cq_name, spec, frs, advantage, out) -> None:
        per_cq = self.by_fr.get(name)
        if not per_cq:
            return
        seen: set[str] = set()
        single = len(frs) == 1
        for fr in frs:
            for key, candidate in per_cq.get(fr, {}).items():
                if not single:
                    if key in seen:
                        continue
                    seen.add(key)
                variant = self._classify(preemptor, cq_name, spec, frs, candidate, advantage)
                if variant:
                    out.append((candidate, lca, variant))

    def _collect_subtree(self, current: QuotaNode, subtree_root: QuotaNode, skip, cq_node: QuotaNode,
                         preemptor, cq_name, spec, frs, advantage, out) -> None:
        for child in current.child_cohorts:
            if child is skip or child.within_nominal(frs):
                continue
            self._collect_subtree(child, subtree_root, skip, cq_node, preemptor, cq_name, spec, frs,
                                  advantage, out)
        for child in current.child_cqs:
            if child is cq_node:
                continue
            if not child.within_nominal(frs):
                self._from_cq(child.name, subtree_root, preemptor, cq_name, spec, frs, advantage, out)

    def _classical(self, preemptor, cq_name, frs, usage) -> list[Target]:
        node = self.nodes[cq_name]
        spec = self.specs[cq_name]
        priority = preemptor.workload.priority
        if not self._may_have_candidates(cq_name, spec.preemption.within_cluster_queue, priority) and not (
                node.parent is not None and self._may_have_candidates(
                    id(node.root()), spec.preemption.reclaim_within_cohort, priority)):
            return []
        order = candidate_order(cq_name)
        same: list = []
        if spec.preemption.within_cluster_queue != "Never":
            self._from_cq(cq_name, None, preemptor, cq_name, spec, frs, False, same)
        hierarchy: list = []
        priority: list = []
        if node.parent is not None and spec.preemption.reclaim_within_cohort != "Never":
            previous = None
            advantage, remaining = quantities_fit_in_quota(node, usage)
            for ancestor in node.ancestors():
                target_list = hierarchy if advantage else priority
                self._collect_subtree(ancestor, ancestor, previous, node, preemptor, cq_name, spec, frs,
                                      advantage, target_list)
                fits, remaining = quantities_fit_in_quota(ancestor, remaining)
                advantage = advantage or fits
                previous = ancestor
        for group in (same, hierarchy, priority):
            group.sort(key=lambda item: order(item[0]))
        candidates = hierarchy + priority + same
        if not candidates:
            return []
        forbidden = spec.preemption.borrow_within_cohort == "Never"
        no_other = not hierarchy and not priority
        if no_other or (forbidden and not self._under_nominal(node, frs)):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            removed: list[Target] = []
            for candidate, lca, variant in candidates:
                if not self._valid(candidate, lca, variant, cq_name, frs, allow_borrowing):
                    continue
                self.remove(candidate)
                removed.append(Target(candidate, _VARIANT_REASON[variant]))
                if self.fits(node, usage, allow_borrowing):
                    removed = self._fill_back(node, usage, removed, allow_borrowing)
                    for target in removed:
                        self.add(target.info)
                    return removed
            for target in removed:
                self.add(target.info)
        return []

    @staticmethod
    def _under_nominal(node: QuotaNode, frs) -> bool:
        for fr in frs:
            if node.quota(fr).nominal <= node.usage.get(fr, 0):
                return False
        return True

    def _valid(self, candidate: WorkloadInfo, lca, variant, cq_name, frs, allow_borrowing) -> bool:
        if candidate.cluster_queue == cq_name:
            return True
        if allow_borrowing and variant == RECLAIM_WITHOUT_BORROWING:
            return False
        cand_node = self.nodes[candidate.cluster_queue]
        if cand_node.within_nominal(frs):
            return False
        for ancestor in cand_node.ancestors():
            if ancestor is lca:
                break
            if ancestor.within_nominal(frs):
                return False
        return True

    def _fill_back(self, node, usage, targets: list[Target], allow_borrowing: bool) -> list[Target]:
        i = len(targets) - 2
        while i >= 0:
            self.add(targets[i].info)
            if self.fits(node, usage, allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.remove(targets[i].info)
            i -= 1
        return targets

    # -- fair sharing ------------------------------------------------------------------------
    def _fair(self, preemptor, cq_name, frs, usage) -> list[Target]:
        from compiler.evaluator.fairshare import fair_preemptions
        return fair_preemptions(self, preemptor, cq_name, frs, usage)


def all_ancestors_and_self(node: QuotaNode) -> Iterable[QuotaNode]:
    yield node
    yield from node.ancestors()
