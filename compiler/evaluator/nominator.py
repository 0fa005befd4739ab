"""Nomination: a head's flavor assignment in its ClusterQueue, with the preemption targets that
make it fit, and the pod-set reducer's partial admission when it does not (Kueue's
scheduler.nominate and getAssignments in pkg/scheduler/scheduler.go)."""

from __future__ import annotations

from functools import partial

from compiler.evaluator.assigner import (
    A_FIT, A_PREEMPT, NO_CANDIDATES, PREEMPT, RECLAIM, Assignment, FlavorAssigner, nomination_mapping,
)
from compiler.evaluator.cluster_cache import MISCONFIGURED, ClusterCache
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.podset_reducer import PodSetReducer
from compiler.evaluator.preemption import Target
from compiler.evaluator.statuses import EntryStatus, ReadingKind
from compiler.evaluator.tas_step import place_preempting, topology_requests
from compiler.evaluator.tree import height_of_lowest_subtree_that_fits

TARGETS_READING = ReadingKind.TARGETS  # a preemption search of the nomination itself (not the oracle's)


def _found(targets: list[Target]) -> tuple:
    """A preemption search's answer as a comparable value: who, and why."""
    return tuple([(target.info.key, target.reason) for target in targets])


class Entry:
    __slots__ = ("info", "cq", "assignment", "targets", "status", "message", "reason", "skipped",
                 "inadmissible_only", "namespace_mismatch", "prev_tried")

    def __init__(self, info: WorkloadInfo, cq: str) -> None:
        self.info = info
        self.cq = cq
        self.assignment: Assignment | None = None
        self.targets: list[Target] = []
        self.status = EntryStatus.UNPROCESSED
        self.message = ""
        self.reason = ""
        self.skipped = False
        self.inadmissible_only = False
        self.namespace_mismatch = False
        # A scan position is replaced, never edited in place: the one at hand is kept as is.
        self.prev_tried = info.last_tried or None

    @property
    def usage(self) -> dict[FlavorResource, int]:
        return self.assignment.usage


class Nominator(ClusterCache):
    """The plain nomination: every head's assignment worked out afresh."""

    def oracle_may_preempt(self, cq_name: str) -> bool:
        """Whether the oracle of `cq_name` searches for candidates at all: without a policy that
        can evict, it answers no candidates from the quota alone."""
        policy = self.state.cluster_queues[cq_name].preemption
        return policy.within_cluster_queue != "Never" or (
            self.nodes[cq_name].parent is not None and policy.reclaim_within_cohort != "Never")

    def _oracle_for(self, info: WorkloadInfo, cq_name: str):
        node = self.nodes[cq_name]
        may_preempt = self.oracle_may_preempt(cq_name)

        def oracle(fr: FlavorResource, quantity: int) -> tuple[int, int]:
            if not may_preempt:  # no candidate can exist: skip the search
                return NO_CANDIDATES, height_of_lowest_subtree_that_fits(node, fr, quantity)[0]
            targets = self.preemptor.pair_targets(info, cq_name, fr, quantity)
            if not targets:
                borrow, _ = height_of_lowest_subtree_that_fits(node, fr, quantity)
                return NO_CANDIDATES, borrow
            with self.preemptor.without(targets):
                borrow, _ = height_of_lowest_subtree_that_fits(node, fr, quantity)
            if any(t.info.cluster_queue == cq_name for t in targets):
                return PREEMPT, borrow
            return RECLAIM, borrow
        return oracle

    def get_assignment(self, info: WorkloadInfo, cq_name: str) -> tuple[Assignment, list[Target]]:
        assignment, targets = self._assign_and_search(info, cq_name)
        if assignment.mode == A_PREEMPT:
            assigner = self.assigner(cq_name)
            if assigner.tas is not None:
                place_preempting(assigner, assignment, info.workload.podsets, targets)
        return assignment, targets

    def reassign_within_cycle(self, info: WorkloadInfo, cq_name: str, nominated: Assignment
                              ) -> tuple[Assignment, list[Target]]:
        """updateAssignmentIfNeeded's second assignment of a nomination within its cycle: from the
        first flavor, and on the flavors it was nominated with only (Kueue's NominationMapping
        keeps it from switching flavors)."""
        info.last_tried = None
        assigner = self.assigner(cq_name)
        assigner.pinned = nomination_mapping(nominated)
        try:
            return self.get_assignment(info, cq_name)
        finally:
            assigner.pinned = None

    def _assign_and_search(self, info: WorkloadInfo, cq_name: str) -> tuple[Assignment, list[Target]]:
        """Kueue's getAssignments before updateAssignmentForTAS: the flavor assignment, the
        preemption targets, the pod-set reducer."""
        assigner = self.assigner(cq_name)
        assigner.oracle = self._oracle_for(info, cq_name)
        podsets = info.workload.podsets
        full = assigner.assign(podsets, None, info.last_tried)
        if full.mode == A_FIT:
            return full, []
        if full.mode == A_PREEMPT:
            targets = self._search(assigner, info, cq_name, full.frs_needing_preemption(),
                                   full.preemption_request(podsets), full)
            if targets:
                return full, targets
        # Kueue's PodSetReducer: the smallest reduction that fits, i.e. the largest counts; a
        # probe fits if it is Fit or Preempt with targets.
        reduced = PodSetReducer(podsets).search(partial(self._probe, assigner, info, cq_name))
        if reduced is not None:
            return reduced
        return full, []

    def _probe(self, assigner: FlavorAssigner, info: WorkloadInfo, cq_name: str,
               counts: list[int]) -> tuple[Assignment, list[Target]] | None:
        """The pod-set reducer's probe: the assignment with these counts if it fits (a fit, or
        a preemption with targets), else None."""
        probe = assigner.assign(info.workload.podsets, counts, info.last_tried)
        if probe.mode == A_FIT:
            return probe, []
        if probe.mode == A_PREEMPT:
            targets = self._search(assigner, info, cq_name, probe.frs_needing_preemption(),
                                   probe.preemption_request(info.workload.podsets), probe)
            if targets:
                return probe, targets
        return None

    def _nominate_cached(self, info: WorkloadInfo, cq_name: str) -> tuple[Assignment, list[Target]]:
        """The nomination of `info` in `cq_name`: afresh here; the nomination cache's layer
        answers it from what it kept when it can."""
        return self.get_assignment(info, cq_name)

    def _search(self, assigner: FlavorAssigner, info: WorkloadInfo, cq_name: str, frs, usage,
                assignment: Assignment) -> list[Target]:
        """The preemption targets of a request (Kueue's GetTargets: the assignment's TAS
        requests too, whose pods must then be placeable), recorded as one of the nomination's
        readings when the assigner records them. (A nomination that placed pods is never
        reused from its readings: nomination_cache keeps it on the TAS generation.)"""
        tas = topology_requests(assigner, assignment, info.workload.podsets) if assigner.tas is not None else ()
        targets = self.preemptor.targets(info, cq_name, frs, usage, tas)
        if assigner.readings is not None:
            assigner.readings.append((TARGETS_READING, frozenset(frs), dict(usage), _found(targets)))
        return targets

    def _nominate(self, info: WorkloadInfo, cq_name: str) -> Entry:
        entry = Entry(info, cq_name)
        if info.last_tried is not None and self._scan_outdated(info, cq_name):
            # The scan starts from the first flavor: what the next cycle resumes from is new
            # even where this scan ends where the outdated one did (quiescence compares them).
            info.last_tried = entry.prev_tried = None
        if not self._namespace_selected(cq_name, info.workload.namespace):
            entry.inadmissible_only = True
            entry.namespace_mismatch = True
            entry.message = "workload namespace doesn't match ClusterQueue selector"
            entry.reason = MISCONFIGURED
            return entry
        assignment, targets = self._nominate_cached(info, cq_name)
        entry.assignment = assignment
        entry.targets = targets
        entry.message = assignment.message()
        return entry

    def _scan_outdated(self, info: WorkloadInfo, cq_name: str) -> bool:
        """Kueue's lastAssignmentOutdated (FlavorFungibilityPreserveScanProgress, on): a scan
        position recorded two or more scheduling cycles ago is dropped, and the scan starts over
        from the first flavor, once its ClusterQueue's generation moved on since. The scheduling
        cycles are the cycles that pop a head (Kueue's schedule); a ClusterQueue's generation
        (AllocatableResourceGeneration) is one more on every admission or eviction in it (the
        cache's deleteWorkload, which the workload controller's update after an admission goes
        through too). One from the cycle before is resumed whatever happened."""
        cycle, generation = info.tried_at
        return self.scheduling_cycle - cycle > 1 and self.generations.get(cq_name, 0) > generation
