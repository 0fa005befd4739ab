"""A cycle's processing of one nominated head, and the cache and queue updates it makes: admit
(Kueue's cache.AssumeWorkload), reserve, skip, evict a target, requeue the head (Kueue's
scheduler.schedule per entry, requeueAndUpdate; the queue manager's requeue on eviction)."""

from __future__ import annotations

from compiler.evaluator.assigner import A_NO_FIT, A_PREEMPT, WAITING_FOR_QUOTA, Assignment
from compiler.evaluator.cluster_cache import INADMISSIBLE_REASONS, QUOTA_RESERVED, WAITING_FOR_PREEMPTED
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.nomination_cache import CachedNominator
from compiler.evaluator.nominator import Entry
from compiler.evaluator.preemption import HUMAN_REASONS, Target
from compiler.evaluator.statuses import EntryStatus, WorkloadStatus
from compiler.evaluator.tree import QuotaNode

NO_FIT, NO_CANDIDATES, SKIPPED = EntryStatus.NO_FIT, EntryStatus.NO_CANDIDATES, EntryStatus.SKIPPED
PREEMPTING, E_ADMITTED = EntryStatus.PREEMPTING, EntryStatus.ADMITTED
PENDING, INADMISSIBLE = WorkloadStatus.PENDING, WorkloadStatus.INADMISSIBLE
ADMITTED, PREEMPTED = WorkloadStatus.ADMITTED, WorkloadStatus.PREEMPTED


class EntryProcessor(CachedNominator):
    """What a cycle does with each nominated head, and how a head goes back to its queue."""

    def _requeue_entries(self, entries: list[Entry]) -> bool:
        """The cycle's heads not admitted go back to their queues; each queue's trail records
        whether its head was a failure set aside with its class, all a quiet queue does."""
        changed = False
        for entry in entries:
            queue = self.queues[entry.cq]
            if entry.status is E_ADMITTED:
                queue.trail = None
                continue
            changed |= self._requeue(entry)
            trail = queue.trail
            if trail is None:
                continue
            info = entry.info
            if entry.status is NO_FIT or (entry.status is NO_CANDIDATES and not self._reserves(entry.cq)):
                if info.key in queue.inadmissible:
                    trail.append(info)
                    continue
            queue.trail = None
        return changed

    def _inert(self, entry: Entry) -> bool:
        """Whether processing `entry` neither reads nor changes the cycle's state: a head that
        does not fit, or that found no candidates in a queue that holds no reservation for it
        (reclaimWithinCohort: Any). It only records its own answer (see `_process`)."""
        mode = entry.assignment.mode
        return mode == A_NO_FIT or (mode == A_PREEMPT and not entry.targets and not self._reserves(entry.cq))

    def _reserves(self, cq_name: str) -> bool:
        """Whether a head of `cq_name` that found no preemption candidates holds the quota it
        could use for the rest of the cycle (Kueue does unless reclaimWithinCohort is Any)."""
        return self.state.cluster_queues[cq_name].preemption.reclaim_within_cohort != "Any"

    def _process(self, entry: Entry, preempted: dict[str, Target], temporary, preemptors) -> bool:
        info = entry.info
        assignment = entry.assignment
        node = self.nodes[entry.cq]
        if assignment.placements is not None and self._quota_fits(entry, preempted) \
                and not self._placement_fits(entry, preempted):
            # Kueue's updateAssignmentIfNeeded (TASRecomputeAssignmentWithinSchedulingCycle): the
            # nomination placed pods on nodes this cycle took since; assign it again.
            assignment, entry.targets = self.reassign_within_cycle(info, entry.cq, assignment)
            entry.assignment = assignment
            entry.message = assignment.message()
        mode = assignment.mode
        info.last_assignment = assignment
        if mode == A_NO_FIT:
            entry.reason = assignment.no_fit_reason
            entry.status = NO_FIT
            self._remember_scan(info, entry.cq, assignment)
            return False
        if mode == A_PREEMPT and not entry.targets:
            entry.reason = WAITING_FOR_QUOTA
            entry.status = NO_CANDIDATES
            self._remember_scan(info, entry.cq, assignment)
            if self._reserves(entry.cq):
                reserve = self._reservation(assignment, node)
                node.add_all(reserve)
                temporary.append((node, reserve))
                self._hold_placements_for_cycle(assignment, temporary)
            return False
        # (comprehensions and loops, not generator expressions, in the methods a cycle calls
        # per head: compiled, these are C calls, which cannot hold a generator's closure)
        if any([t.info.key in preempted for t in entry.targets]):
            entry.skipped = True
            entry.status = SKIPPED
            entry.message = "Workload has overlapping preemption targets with another workload"
            entry.reason = WAITING_FOR_QUOTA
            self._remember_scan(info, entry.cq, assignment)
            return False
        fits = self._quota_fits(entry, preempted) and self._placement_fits(entry, preempted)
        if not fits:
            entry.skipped = True
            entry.status = SKIPPED
            entry.message = "Workload no longer fits after processing another workload"
            entry.reason = WAITING_FOR_QUOTA
            self._remember_scan(info, entry.cq, assignment)
            return False
        for target in entry.targets:
            preempted[target.info.key] = target
        if mode == A_PREEMPT:
            node.add_all(assignment.usage)
            temporary.append((node, dict(assignment.usage)))
            self._hold_placements_for_cycle(assignment, temporary)
            entry.status = PREEMPTING
            entry.reason = WAITING_FOR_PREEMPTED
            entry.message += f". Pending the preemption of {len(entry.targets)} workload(s)"
            info.last_tried = None
            info.pending_victims = sorted([t.info.key for t in entry.targets])
            preemptors.append((entry, entry.targets))
            return True
        self._admit(info, entry.cq, assignment)
        entry.status = E_ADMITTED
        return True

    def _quota_fits(self, entry: Entry, preempted: dict[str, Target]) -> bool:
        """Whether the entry's usage fits the quota with this cycle's targets gone."""
        node = self.nodes[entry.cq]
        with self.preemptor.without(_cycle_victims(entry, preempted)):
            for fr, value in entry.assignment.usage.items():
                if node.available(fr) < value:
                    return False
        return True

    def _placement_fits(self, entry: Entry, preempted: dict[str, Target]) -> bool:
        """Whether the entry's pods still fit the nodes it placed them on (TAS), with this
        cycle's targets gone."""
        placements = entry.assignment.placements
        if placements is None:
            return True
        gone = [t.info.placements for t in _cycle_victims(entry, preempted) if t.info.placements]
        return self.tas.fits(placements, gone)


    def _hold_placements_for_cycle(self, assignment: Assignment, temporary: list) -> None:
        """The entry's pods hold their nodes for the rest of the cycle (Kueue's AddUsage of the
        TAS usage), given back with the cycle's other temporary usage."""
        if assignment.placements is not None:
            self.tas.add(assignment.placements)
            temporary.append((self.tas, assignment.placements))

    def _remember_scan(self, info: WorkloadInfo, cq_name: str, assignment: Assignment) -> None:
        # FlavorFungibilityPreserveScanProgress: the next attempt resumes after the last flavor
        # tried for each resource that got one. A reused nomination gives the same position
        # (and the position is only ever replaced, never edited), so it is worked out once.
        tried = assignment.scan_position
        if tried is None:
            tried = {}
            for index, ps in enumerate(assignment.podsets):
                for res, idx in ps.tried_index.items():
                    if res in ps.flavors:
                        tried[(index, res)] = idx
            assignment.scan_position = tried
        info.last_tried = tried or None
        if tried:
            self._scanned.add(info)
            # (the queue's generation as this cycle's snapshot had it: the only admission a
            # queue can have in a cycle is its head's, which records no scan)
            info.tried_at = (self.scheduling_cycle, self.generations.get(cq_name, 0))

    @staticmethod
    def _reservation(assignment: Assignment, node: QuotaNode) -> dict[FlavorResource, int]:
        reserve = {}
        for fr, value in assignment.usage.items():
            quota = node.quota(fr)
            used = node.usage.get(fr, 0)
            if assignment.borrowing > 0:
                if quota.borrowing_limit is None:
                    reserve[fr] = value
                else:
                    reserve[fr] = min(value, quota.nominal + quota.borrowing_limit - used)
            else:
                reserve[fr] = max(0, min(value, quota.nominal - used))
            if reserve[fr] <= 0:
                del reserve[fr]
        return reserve

    def _admit(self, info: WorkloadInfo, cq_name: str, assignment: Assignment) -> None:
        node = self.nodes[cq_name]
        node.add_all(assignment.usage)
        if assignment.placements is not None:
            self.tas.add(assignment.placements)
        info.placements = assignment.placements
        self.generations[cq_name] = self.generations.get(cq_name, 0) + 1
        self._reserve_seq += 1
        info.cluster_queue = cq_name
        info.usage = dict(assignment.usage)
        info.flavors = {ps.name: {res: f[0] for res, f in sorted(ps.flavors.items())} for ps in assignment.podsets}
        info.counts = {ps.name: ps.count for ps in assignment.podsets}
        info.holds_quota = True
        info.status = ADMITTED
        info.reason_code = QUOTA_RESERVED
        info.reason = f"Quota reserved in ClusterQueue {cq_name}"
        # Candidates are ordered by quota reservation time, then UID, as Kueue orders them. A
        # static evaluation has no clock: what it admits is newer than anything in the input,
        # and the later of two admissions is the newer. In time (simulate) the same holds within
        # one moment; `rescan` then gives them the moment's time only, as an export shows them.
        if self.clock is None:
            info.reserved_rank = (float("inf"), self._reserve_seq)
        else:
            info.reserved_rank = (self.clock, self._reserve_seq)
            self._admitted_now.append(info)
        info.borrowing = assignment.borrowing > 0
        info.sticky = False
        info.last_tried = None
        info.preempted_by = None
        info.pending_victims = []
        self.admitted[cq_name][info.key] = info
        self.preemptor.track(info)
        self.holders_print ^= hash((info.key, cq_name))
        if self.journal is not None:
            self.journal.append((ADMITTED, info, None))
        queue = self.queues[cq_name]
        if queue.sticky is info:
            queue.sticky = None

    def _evict(self, victim: WorkloadInfo, entry: Entry, reason: str) -> None:
        cq_name = victim.cluster_queue
        node = self.nodes[cq_name]
        node.remove_all(victim.usage)
        if victim.placements is not None:
            self.tas.add(victim.placements, -1)
            victim.placements = None
        self.generations[cq_name] = self.generations.get(cq_name, 0) + 1
        self.admitted[cq_name].pop(victim.key, None)
        self.preemptor.untrack(victim)
        self.holders_print ^= hash((victim.key, cq_name))
        preemptor = entry.info
        victim.holds_quota = False
        victim.usage = {}
        victim.flavors = {}
        victim.counts = {}
        victim.borrowing = False
        victim.status = PREEMPTED
        victim.reason_code = "Preempted"
        uid = preemptor.workload.uid or "UNKNOWN"
        job_uid = preemptor.workload.job_uid or "UNKNOWN"
        victim.reason = (f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to "
                         f"{HUMAN_REASONS[reason]}; preemptor path: {self.nodes[entry.cq].path()}; "
                         f"preemptee path: {node.path()}")
        victim.preempted_by = preemptor.key
        victim.last_tried = None  # a requeued workload starts a fresh flavor scan
        self._evicted_now.append(victim)
        if self.journal is not None:
            self.journal.append((PREEMPTED, victim, preemptor.key))

    def _requeue_root(self, info: WorkloadInfo) -> QuotaNode | None:
        """The cohort tree whose inadmissible workloads Kueue requeues when `info` releases its
        quota (QueueAssociatedInadmissibleWorkloadsAfter): the tree of the ClusterQueue its
        LocalQueue points to. A workload whose LocalQueue does not exist was never assigned to
        a queue by Kueue's queue manager, so releasing its quota requeues nothing."""
        workload = info.workload
        lq = self.state.local_queues.get((workload.namespace, workload.queue_name))
        if lq is None or lq.cluster_queue not in self.nodes:
            return None
        return self.nodes[lq.cluster_queue].root()

    def _return_evicted(self, victims: list[WorkloadInfo]) -> None:
        # An evicted workload goes back to its queue (if it still resolves to an active CQ).
        for victim in victims:
            if victim.holds_quota:
                continue
            target_cq, code, _ = self._resolve_queue(victim.workload)
            if not code and target_cq in self.queues:
                victim.cluster_queue = target_cq
                if target_cq in self._quiet:  # (something enters it: walked up to now)
                    self._wake(target_cq, self._moment_cycle)
                self.queues[target_cq].add(victim)

    def _requeue(self, entry: Entry) -> bool:
        info = entry.info
        queue = self.queues[entry.cq]
        info.cluster_queue = entry.cq
        if info.preempted_by is not None:
            # Evicted by this evaluation and not back in: report the preemption, which is the
            # decision that matters, rather than the later pending message.
            pass
        else:
            info.status = PENDING
            info.reason_code = entry.reason or WAITING_FOR_QUOTA
            info.reason = entry.message
        if entry.status is PREEMPTING:
            info.sticky = True
            self._scanned.add(info)
            queue.sticky = info if not queue.strict else queue.sticky
            self._aside.add(queue.name)
            queue.push(info)
            return True
        if entry.namespace_mismatch:
            if info.preempted_by is None:
                info.status = INADMISSIBLE
            queue.set_aside(info)
            return True
        if queue.strict or entry.skipped:
            queue.push(info)
            if queue.strict and info.reason_code in INADMISSIBLE_REASONS and info.preempted_by is None:
                # It keeps the head of its StrictFIFO queue, yet no cycle can admit it: the status
                # says what Kueue's reason says, as on a BestEffortFIFO queue.
                info.status = INADMISSIBLE
            # Back at the front with the same state: only a changed flavor-scan position makes
            # the next cycle differ (the engine is deterministic). A StrictFIFO head whose scan
            # alternates between flavors keeps changing, as it does in Kueue.
            return (info.last_tried or None) != entry.prev_tried
        if info.reason_code in INADMISSIBLE_REASONS and info.preempted_by is None:
            info.status = INADMISSIBLE
        if info.last_tried and any([index != -1 for index in info.last_tried.values()]):
            # Kueue's requeueIfNotPresent: a flavor scan with flavors still to try (PendingFlavors)
            # goes back to the heap, so the next cycle resumes the scan where this one stopped.
            queue.push(info)
            return (info.last_tried or None) != entry.prev_tried
        queue.set_aside(info)
        if entry.status is NO_FIT or entry.status is NO_CANDIDATES:
            queue.bulk_move(info)
        return True


def _cycle_victims(entry: Entry, preempted: dict[str, Target]) -> list[Target]:
    """The cycle's targets so far and the entry's, each workload once: the entry's targets may
    be earlier heads' targets too (Kueue keeps the cycle's victims in a set). Evicting one twice
    would take its usage twice from its ClusterQueue but, past the queue's own usage, not from
    its cohort, and putting it back twice would leave the cohort's usage too high for good."""
    victims = dict(preempted)
    for target in entry.targets:
        victims.setdefault(target.info.key, target)
    return list(victims.values())
