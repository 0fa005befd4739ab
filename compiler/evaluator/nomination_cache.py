"""The nomination cache, a layer over the plain nomination (this engine's own: Kueue nominates
every head afresh): a head whose answer provably reads the same again reuses its last one, or
that of its equivalence class in the same queue from the same scan position."""

from __future__ import annotations

from typing import Callable

from compiler.evaluator.assigner import (
    A_FIT, A_NO_FIT, A_PREEMPT, ORACLE_READING, QUOTA_READING, Assignment, restated, unused_quota_message,
)
from compiler.evaluator.answer_bounds import nomination_bounds
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource, flavor_resource
from compiler.evaluator.nominator import TARGETS_READING, Nominator, _found
from compiler.evaluator.preemption import Target, with_placement
from compiler.evaluator.tree import height_of_lowest_subtree_that_fits

def _reading_pairs(kind: str, what, amount) -> tuple:
    """The (flavor, resource) pairs whose committed usage a reading's answer depends on."""
    if kind == TARGETS_READING:
        return (*what, *amount)
    return (what,)


def _reading_touches(frs: set[FlavorResource], kind: str, what, amount) -> bool:
    """Whether a reading's answer depends on one of `frs`: `_reading_pairs` meets `frs`,
    asked without building the tuple (a retrace asks it of every reading it keeps)."""
    if kind == TARGETS_READING:
        return not (frs.isdisjoint(what) and frs.isdisjoint(amount))
    return what in frs


def _scan_key(last_tried: dict[tuple[int, str], int] | None) -> tuple | None:
    """The scan position a nomination starts from, as the cache keys it: a resource whose last
    scan went through every flavor (-1) starts again from the first, as one never scanned does,
    so the two are one position (None: every resource starts from the first flavor). A head
    set aside after a full scan is nominated again, after a requeue in the same moment, from
    the same position as after a rescan."""
    if not last_tried:
        return None
    started = [item for item in last_tried.items() if item[1] != -1]
    return tuple(sorted(started)) if started else None


def _changed(frs: list[FlavorResource] | None, before, now) -> set[FlavorResource] | None:
    """Which of `frs` have a commit version in `now` other than in `before` (the answers of a
    version reader over them; one pair's is a plain number). None when the versions are not
    per pair."""
    if frs is None:
        return None
    if len(frs) == 1:
        return set(frs) if before != now else set()
    return {fr for fr, old, new in zip(frs, before, now) if old != new}



class Nomination:
    """A workload's last nomination in a ClusterQueue, as the cache keeps it: what it answered
    and what that answer depends on besides the workload."""

    __slots__ = ("cq", "scan", "reader", "state", "assignment", "targets", "readings", "frs", "bounds")

    def __init__(self, cq: str, scan: tuple | None, reader: Callable[[], object] | None, state: object,
                 assignment: Assignment, targets: list[Target], readings: list[tuple] | None,
                 frs: list[FlavorResource] | None) -> None:
        self.cq = cq                   # the ClusterQueue nominated in
        self.scan = scan               # the scan position it started from (sorted items), or None
        # The reader of the commit versions of what it read, and its answer then; no reader: it
        # was decided by static quotas and the workload's shape alone.
        self.reader = reader
        self.state = state
        self.assignment = assignment
        self.targets = targets
        # The readings a fit or a failure took (None for a preemption: its targets are
        # particular workloads found for this one), and the pairs `reader` reads (None when
        # it reads its whole group's pairs or the whole tree).
        self.readings = readings
        self.frs = frs
        # The usage bounds its answer holds within (answer_bounds.nomination_bounds): None until
        # asked, False when its readings have none.
        self.bounds = None


class PairsRead:
    """The (flavor, resource) pairs any nomination of a workload in a ClusterQueue can read
    (`CachedNominator._reads`), kept on the workload for the last queue asked."""

    __slots__ = ("cq", "frs")

    def __init__(self, cq: str, frs: list[FlavorResource]) -> None:
        self.cq = cq
        self.frs = frs


class CachedNominator(Nominator):
    """Nomination with the cache in front (`layers.nomination_cache`, and the sharing of a
    nomination within its equivalence class, `layers.class_nominations`); without it, the plain
    nomination."""

    def _nominate_cached(self, info: WorkloadInfo, cq_name: str) -> tuple[Assignment, list[Target]]:
        layers = self.layers
        if not layers.nomination_cache:
            return self.get_assignment(info, cq_name)
        scan = _scan_key(info.last_tried)
        cached = info.nomination
        if cached is not None and cached.cq == cq_name and cached.scan == scan:
            found = self._reuse(info, cached, True)
            if found is not None:
                return found.assignment, found.targets
        # The last failure or fit of the workload's equivalence class in this queue from this
        # scan position (another workload's, or its own before a scan elsewhere).
        class_key = None if self.fair_sharing or not layers.class_nominations else (
            cq_name, info.scheduling_hash, scan)
        shared = self._class_nominations.get(class_key) if class_key is not None else None
        found = self._reuse(info, shared, False) if shared is not None and shared is not cached else None
        if found is not None:
            self.reused_from_class += 1
            if found.assignment.mode == A_FIT:
                self.reused_fits += 1
            return found.assignment, found.targets
        assigner = self.assigner(cq_name)
        assigner.read_usage = False
        assigner.read_placement = False
        assigner.readings = []
        try:
            assignment, targets = self.get_assignment(info, cq_name)
            readings = assigner.readings
        finally:
            assigner.readings = None
        # A failure is kept with its readings, and so is a fit: the workload's class comes
        # back (the next job of the same shape arriving in this queue) and takes the same
        # path while the readings decide the same. A preemption's targets are particular
        # workloads found for this one: it is not kept.
        failed = assignment.mode == A_NO_FIT or (assignment.mode == A_PREEMPT and not targets)
        # An answer that placed pods on nodes is kept for this workload only, and only while no
        # placement moved (the TAS generation is part of what its reader reads).
        placed = assigner.read_placement
        kept = (failed or assignment.mode == A_FIT) and not placed
        reader, frs = None, None
        if assigner.read_usage:
            reader, frs = self._state_reader(info, cq_name, readings if kept else None)
            if placed:
                reader = with_placement(reader, self.tas)
        info.nomination = Nomination(cq_name, scan, reader, reader() if reader else None, assignment, targets,
                                     readings if kept else None, frs)
        if kept and class_key is not None:
            self._class_nominations[class_key] = info.nomination
        return assignment, targets

    def _reuse(self, info: WorkloadInfo, cached: Nomination, own: bool) -> Nomination | None:
        """The nomination nominating `info` now gives, from `cached` (of `info` itself when
        `own`, else of a workload of its equivalence class, same queue and scan position), or
        None; it becomes `info`'s (`_answer_from`, then `_keep_answer`)."""
        found = self._answer_from(info, cached, own)
        if found is None:
            return None
        self.reused += 1
        if found is not cached and found.assignment.mode != A_FIT:
            self.reused_failures += 1
        self._keep_answer(info, found)
        return found

    def _answer_from(self, info: WorkloadInfo, cached: Nomination, own: bool) -> Nomination | None:
        """What nominating `info` now answers, worked out from `cached` without a nomination:
        `cached` itself when nothing it read moved (or moved within its answer bounds), a new
        Nomination when its readings retrace to the same path (its message restated where an
        unused amount changed), else None. It changes nothing. The class shares the assigner's
        path (same pod sets, same priority): quota answers, and preemption answers unless the
        queue's policy compares creation times, when every answer is asked again for `info`."""
        cq_name, reader = cached.cq, cached.reader
        if reader is None:  # decided by static quotas and the workload's shape alone
            return cached
        state = reader()
        as_is = own or not self.preemptor.compares_creation(cq_name)
        if state == cached.state and as_is:
            return cached
        if own and self.layers.answer_bounds and nomination_bounds(self, cq_name, info, cached) is not None:
            self.bounded += 1  # the commits since moved nothing its readings read
            return cached
        if cached.readings is None:
            return None
        retraced = self._retrace(info, cq_name, cached.readings,
                                 _changed(cached.frs, cached.state, state) if as_is else None)
        if retraced is None:
            return None
        readings, messages = retraced
        assignment = restated(cached.assignment, messages) if messages else cached.assignment
        found = Nomination(cq_name, cached.scan, reader, state, assignment, cached.targets, readings, cached.frs)
        if readings is cached.readings and cached.bounds is False:
            found.bounds = False  # (the same readings: no bounds, as before)
        return found

    def _still_answered(self, info: WorkloadInfo, cq_name: str) -> Nomination | None:
        """The nomination nominating `info` afresh in `cq_name` now would give, when it answers
        as its last one did, to the message (`_answer_from`), else None. Asked of a set-aside
        head before its turn (quiet_queues), it changes nothing; `_keep_answer` then stores it."""
        cached = info.nomination
        if cached is None or cached.cq != cq_name or cached.scan is not None:
            return None
        with self.preemptor.at_commit():
            found = self._answer_from(info, cached, True)
        if found is None or found.assignment is not cached.assignment:
            return None
        return found

    def _keep_answer(self, info: WorkloadInfo, found: Nomination) -> None:
        """`found` (from `_answer_from`) becomes `info`'s nomination, and, when it is new, its
        class's."""
        if found is info.nomination:
            return
        info.nomination = found
        if not self.fair_sharing and self.layers.class_nominations:
            self._class_nominations[(found.cq, info.scheduling_hash, found.scan)] = found

    def _retrace(self, info: WorkloadInfo, cq_name: str, readings: list[tuple],
                 changed: set[FlavorResource] | None) -> tuple[list[tuple], dict[str, str]] | None:
        """Whether the readings a nomination took decide the same now: asked in the order the
        nomination took them, each answer decided which reading came next, so answers that
        decide the same retrace the same path to the same assignment. A quota answer decides by
        its borrowing height, whether reclaiming could help, and whether the request fits in
        the unused amount: another unused amount short of the request changes the message's
        amount only. A reading of pairs none of which is in `changed` (None: any may have)
        reads what it read before: it is not asked. Returns the readings with today's answers
        and the messages that change (old -> new), or None when the path differs."""
        node = self.nodes[cq_name]
        oracle = None
        now_readings, messages = readings, {}
        for index, (kind, what, amount, answer) in enumerate(readings):
            if changed is not None and not _reading_touches(changed, kind, what, amount):
                continue
            if kind == QUOTA_READING:
                # (borrowing height, whether reclaiming could help, the unused amount)
                height, may_reclaim = height_of_lowest_subtree_that_fits(node, what, amount)
                unused = node.available(what)
                now = (height, may_reclaim, unused)
                if now != answer:
                    height_then, may_reclaim_then, unused_then = answer
                    if height != height_then or may_reclaim != may_reclaim_then or (
                            (amount <= unused) != (amount <= unused_then)):
                        return None
                    if amount > unused:
                        messages[unused_quota_message(what, amount, unused_then)] = unused_quota_message(
                            what, amount, unused)
            elif kind == ORACLE_READING:
                oracle = oracle or self._oracle_for(info, cq_name)
                now = oracle(what, amount)
            else:
                now = _found(self.preemptor.targets(info, cq_name, what, amount))
            if now != answer:
                if kind != QUOTA_READING:
                    return None
                if now_readings is readings:
                    now_readings = list(readings)
                now_readings[index] = (kind, what, amount, now)
        return now_readings, messages

    def _reads(self, info: WorkloadInfo, cq_name: str) -> tuple:
        """The (flavor, resource) pairs any flavor assignment of this workload in this queue
        can look at: every flavor of the groups covering a requested resource."""
        reads = info.reads
        if reads is None or reads.cq != cq_name:
            assigner = self.assigner(cq_name)
            groups = self.state.cluster_queues[cq_name].resource_groups
            resources = {res for ps in info.workload.podsets for res in ps.per_pod}
            if "pods" in assigner.group_of:
                resources.add("pods")
            frs = set()
            for res in resources:
                index = assigner.group_of.get(res)
                if index is not None:
                    group = groups[index]
                    frs.update(flavor_resource(f, r) for f in group.flavors for r in group.covered_resources)
            reads = info.reads = PairsRead(cq_name, sorted(frs))
        return reads.frs

    def _state_reader(self, info: WorkloadInfo, cq_name: str, readings: list[tuple] | None):
        """What a nomination's answer depends on besides the workload and its scan position:
        the commit versions of the pairs it can read (the whole cohort tree under fair sharing,
        whose shares read it all). A failure depends on what it did read only: each of its
        readings (a quota answer, an oracle answer or a classical search on some pairs) is a
        function of the committed usage of those pairs in the tree, which a commit on any other
        pair leaves as it was."""
        snapshot = self.preemptor.snapshot
        if self.fair_sharing:
            return snapshot.version_reader(cq_name, (), True), None
        if readings is None:
            return snapshot.version_reader(cq_name, self._reads(info, cq_name), False), None
        frs: set[FlavorResource] = set()
        for kind, what, amount, _ in readings:
            frs.update(_reading_pairs(kind, what, amount))
        ordered = sorted(frs)
        return snapshot.version_reader(cq_name, ordered, False), ordered
