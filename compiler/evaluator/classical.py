"""Classical preemption (Kueue's preemption/classical): withinClusterQueue, reclaimWithinCohort,
borrowWithinCohort and hierarchical reclaim, with fill-back.

Candidates come in three groups, each in candidate order: those found below an ancestor that
the request fits in ("hierarchical advantage"), the other cohort members, then the preemptor's
own queue. A search usually stops after a few removals, so each group is merged lazily from
the snapshot's per-queue sorted candidate lists instead of being collected and sorted whole, a
queue that stopped lending is dropped from the merge at once, and a search that cannot succeed
is recognised first by removing every eligible candidate at once.
"""

from __future__ import annotations

import heapq
from itertools import chain
from operator import itemgetter
from typing import Iterator

from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import ClusterQueue
from compiler.evaluator.preemption_common import (
    IN_CLUSTER_QUEUE, IN_COHORT_RECLAIM_WHILE_BORROWING, IN_COHORT_RECLAMATION, PreemptionRequest, Snapshot,
    Target, UntilCommit, satisfies_policy,
)
from compiler.evaluator.tree import QuotaNode, quantities_fit_in_quota

WITHIN_CQ, HIERARCHICAL, RECLAIM_WITHOUT_BORROWING, RECLAIM_WHILE_BORROWING = range(1, 5)
_VARIANT_REASON = {WITHIN_CQ: IN_CLUSTER_QUEUE, HIERARCHICAL: IN_COHORT_RECLAMATION,
                   RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
                   RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING}
_KEY = itemgetter(0)


class ClassicalPreemption:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        # (cohort, contested pairs) -> its queues above nominal, until the next commit
        self._above = UntilCommit(snapshot)

    def targets(self, request: PreemptionRequest) -> list[Target]:
        snap = self.snapshot
        cq_name = request.cq
        node = snap.nodes[cq_name]
        policy = snap.specs[cq_name].preemption
        priority = request.preemptor.workload.priority
        if not snap.may_have_candidates(cq_name, policy.within_cluster_queue, priority) and not (
                node.parent is not None and snap.may_have_candidates(
                    id(node.root()), policy.reclaim_within_cohort, priority)):
            return []
        same, hierarchy, others = self._sources(request, node)
        groups = [hierarchy, others, same]
        in_hierarchy, in_others, in_same = [any(self._offers(request, name) for name, _, _ in group)
                                             for group in groups]
        forbidden = policy.borrow_within_cohort == "Never"
        no_other = not in_hierarchy and not in_others
        if no_other and not in_same:
            return []
        # A queue above nominal that may not borrow while reclaiming has one attempt, and it
        # borrows. An attempt that borrows skips every candidate of another queue that would be
        # a reclaim without borrowing, which under borrowWithinCohort Never is every one without
        # hierarchical advantage: such an attempt draws from its own queue and the advantage
        # group only. A busy cohort asks this of most failed heads, so it is answered before any
        # removal.
        borrowing_only = forbidden and not _under_nominal(node, request.frs)
        if borrowing_only and not in_hierarchy and not in_same:
            return []
        if borrowing_only or no_other:
            attempts = [True]
        elif forbidden and not in_hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow_borrowing in attempts:
            # (the others' candidates, all skipped, are left out of a borrowing attempt)
            skips_others = allow_borrowing and forbidden
            tried = [hierarchy, same] if skips_others else groups
            # An attempt cannot succeed when the request does not fit with every candidate it
            # may take removed at once (removing usage never makes a request fit less): that
            # is asked first, with one removal per queue instead of one per candidate.
            if not self._may_fit(request, node, same + hierarchy + ([] if skips_others else others),
                                 allow_borrowing):
                continue
            found = self._attempt(request, node, tried, allow_borrowing)
            if found:
                return found
        return []

    # -- candidates --------------------------------------------------------------------------
    def _sources(self, request: PreemptionRequest, node: QuotaNode):
        """The ClusterQueues to take candidates from, as (name, lowest common ancestor, with
        hierarchical advantage), in three groups: own queue, advantage, the rest. A queue (or a
        whole cohort) within its nominal quota for the contested resources lends nothing."""
        policy = self.snapshot.specs[request.cq].preemption
        same = [(request.cq, None, False)] if policy.within_cluster_queue != "Never" else []
        hierarchy: list = []
        others: list = []
        if node.parent is not None and policy.reclaim_within_cohort != "Never":
            previous = None
            advantage, remaining = quantities_fit_in_quota(node, request.usage)
            for ancestor in node.ancestors():
                out = hierarchy if advantage else others
                for child in ancestor.child_cohorts:
                    if child is not previous:
                        out.extend((cq.name, ancestor, advantage) for cq in self._above_nominal(child, request.frs))
                out.extend((cq.name, ancestor, advantage) for cq in ancestor.child_cqs
                           if cq is not node and not cq.within_nominal(request.frs))
                fits, remaining = quantities_fit_in_quota(ancestor, remaining)
                advantage = advantage or fits
                previous = ancestor
        return same, hierarchy, others

    def _above_nominal(self, cohort: QuotaNode, frs: frozenset) -> list[QuotaNode]:
        """The queues under `cohort` above nominal for `frs`, pruning whole cohorts within
        nominal. Between two commits of the snapshot (all the nominations of one cycle) the
        answer does not change, so it is computed once per cohort and pairs."""
        def compute() -> list[QuotaNode]:
            found: list[QuotaNode] = []
            if not cohort.within_nominal(frs):
                for child in cohort.child_cohorts:
                    found.extend(self._above_nominal(child, frs))
                found.extend(cq for cq in cohort.child_cqs if not cq.within_nominal(frs))
            return found

        return self._above.get((id(cohort), frs), compute)

    def _offers(self, request: PreemptionRequest, cq_name: str) -> bool:
        """Whether `cq_name` has a candidate the policy allows (read off the sorted lists'
        heads for a priority bound, without starting a merge)."""
        spec = self.snapshot.specs[request.cq].preemption
        policy = spec.within_cluster_queue if cq_name == request.cq else spec.reclaim_within_cohort
        if policy in ("Any", "LowerPriority"):
            bound = request.preemptor.workload.priority
            for fr in request.frs:
                ordered = self.snapshot.sorted_candidates(cq_name, fr)
                if ordered and (policy == "Any" or ordered[0][0][0] < bound):
                    return True
            return False
        return next(self._candidates(request, cq_name), None) is not None

    def _candidates(self, request: PreemptionRequest, cq_name: str) -> Iterator:
        """(key, info) of one queue's workloads using the contested pairs, in candidate
        order, stopping where the policy's priority bound ends."""
        snap = self.snapshot
        own = cq_name == request.cq
        spec = snap.specs[request.cq].preemption
        policy = spec.within_cluster_queue if own else spec.reclaim_within_cohort
        lists = [snap.sorted_candidates(cq_name, fr) for fr in sorted(request.frs)]
        lists = [items for items in lists if items]
        if not lists:
            return
        # (one sort of the few candidates, in C, rather than heapq.merge, a generator run as
        # Python: keys are unique per workload, so a workload's copies from several pairs
        # are adjacent either way, and the first is kept)
        merged = lists[0] if len(lists) == 1 else _dedupe(sorted(chain.from_iterable(lists), key=_KEY))
        preemptor = request.preemptor
        bound = preemptor.workload.priority
        for key, info in merged:
            if policy == "LowerPriority" and key[0] >= bound:
                return
            if policy == "LowerOrNewerEqualPriority" and key[0] > bound:
                return
            if satisfies_policy(preemptor, info, policy):
                yield key, info

    def _may_fit(self, request: PreemptionRequest, node: QuotaNode, sources: list, allow_borrowing: bool) -> bool:
        """Whether the request fits (borrowing or not) with every candidate of every source
        removed at once. Removing usage never makes a request fit less, so when this is False
        no subset of those candidates can make room."""
        snap = self.snapshot
        own: dict = {}
        if sources and sources[0][0] == request.cq:
            own = self._removable(request, request.cq)
        if not allow_borrowing:
            # Without borrowing the queue's own usage must leave room, and only its own
            # candidates lower that: asked first, before the other queues are read.
            for fr, value in request.usage.items():
                if node.borrowing_with(fr, value - own.get(fr, 0)):
                    return False
        removed: list[tuple[QuotaNode, dict]] = []
        for name, _, _ in sources:
            amounts = own if name == request.cq else self._removable(request, name)
            if amounts:
                snap.nodes[name].remove_all(amounts)
                removed.append((snap.nodes[name], amounts))
        fits = snap.fits(node, request.usage, allow_borrowing)
        for source_node, amounts in removed:
            source_node.add_all(amounts)
        return fits

    def _removable(self, request: PreemptionRequest, cq_name: str) -> dict:
        """Usage, on the requested pairs, of every candidate `cq_name` offers."""
        if len(request.usage) == 1 and request.frs == request.usage.keys():
            # one pair: a prefix sum of the queue's sorted candidates answers it
            (fr,) = request.frs
            spec = self.snapshot.specs[request.cq].preemption
            policy = spec.within_cluster_queue if cq_name == request.cq else spec.reclaim_within_cohort
            total = self.snapshot.usage_below(cq_name, fr, policy, request.preemptor.workload.priority)
            if total is not None:
                return {fr: total} if total else {}
        amounts: dict = {}
        for _, info in self._candidates(request, cq_name):
            for fr, value in info.usage.items():
                if fr in request.usage:
                    amounts[fr] = amounts.get(fr, 0) + value
        return amounts

    # -- the search --------------------------------------------------------------------------
    def _attempt(self, request: PreemptionRequest, node: QuotaNode, groups: list[list],
                 allow_borrowing: bool) -> list[Target]:
        """Remove candidates group after group, each group in candidate order, until the
        request fits; then fill back. Returns [] (with the tree as it was) when it never fits."""
        snap = self.snapshot
        removed: list[Target] = []
        for sources in groups:
            for candidate, variant in self._valid_candidates(request, sources, allow_borrowing):
                snap.remove(candidate)
                removed.append(Target(candidate, _VARIANT_REASON[variant]))
                if snap.fits(node, request.usage, allow_borrowing) and snap.placeable():
                    removed = snap.fill_back(node, request.usage, removed, allow_borrowing)
                    snap.restore(removed)
                    return removed
        snap.restore(removed)
        return []

    def _valid_candidates(self, request: PreemptionRequest, sources: list, allow_borrowing: bool):
        """(candidate, variant) of one group, merged across its queues in candidate order,
        valid at the moment they are reached. Removals only lower usage, so once a queue (or a
        cohort between it and the common ancestor) is within nominal it stays so for the rest
        of the attempt: its remaining candidates are dropped at once instead of one by one."""
        spec = self.snapshot.specs[request.cq]
        streams = [self._candidates(request, name) for name, _, _ in sources]
        heap = []
        for index, stream in enumerate(streams):
            first = next(stream, None)
            if first is not None:
                heap.append((first[0], index, 0, first[1]))
        heapq.heapify(heap)
        while heap:
            _, index, seq, candidate = heap[0]
            name, lca, advantage = sources[index]
            own = name == request.cq
            variant = _variant(request.preemptor, spec, own, candidate, advantage)
            skipped = not own and allow_borrowing and variant == RECLAIM_WITHOUT_BORROWING
            if not own and not skipped and self._lends_nothing(candidate, lca, request):
                heapq.heappop(heap)  # the queue leaves the merge: its stream is not read further
                continue
            following = next(streams[index], None)
            if following is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (following[0], index, seq + 1, following[1]))
            if not skipped:
                yield candidate, variant

    def _lends_nothing(self, candidate: WorkloadInfo, lca, request: PreemptionRequest) -> bool:
        """A candidate of another queue is worth evicting only while its queue, and each cohort
        between it and the common ancestor, is above nominal for the contested pairs."""
        cand_node = self.snapshot.nodes[candidate.cluster_queue]
        if cand_node.within_nominal(request.frs):
            return True
        for ancestor in cand_node.ancestors():
            if ancestor is lca:
                break
            if ancestor.within_nominal(request.frs):
                return True
        return False


def _variant(preemptor: WorkloadInfo, spec: ClusterQueue, own: bool, candidate: WorkloadInfo,
             advantage: bool) -> int:
    if own:
        return WITHIN_CQ
    if advantage:
        return HIERARCHICAL
    policy = spec.preemption
    if policy.borrow_within_cohort == "Never":
        return RECLAIM_WITHOUT_BORROWING
    threshold = policy.max_priority_threshold
    if candidate.priority >= preemptor.priority or (threshold is not None and candidate.priority > threshold):
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def _dedupe(items: Iterator) -> Iterator:
    seen: set[str] = set()
    for key, info in items:
        if info.key not in seen:
            seen.add(info.key)
            yield key, info


def _under_nominal(node: QuotaNode, frs) -> bool:
    for fr in frs:
        if node.quota(fr).nominal <= node.usage.get(fr, 0):
            return False
    return True
