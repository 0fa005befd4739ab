"""Kueue's scheduling loop over a ClusterState: heads, nomination, ordering, admission,
preemption, requeueing, cycle after cycle."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from datetime import datetime
from operator import itemgetter
from typing import Callable

from compiler.evaluator.assigner import (
    A_FIT, A_NO_FIT, A_PREEMPT, FIT, NO_CANDIDATES, ORACLE_READING, PREEMPT, QUOTA_READING, RECLAIM,
    Assignment, FlavorAssigner, WAITING_FOR_QUOTA, requirement_values, restated, unused_quota_message,
)
from compiler.evaluator.circles import CircleFinder
from compiler.evaluator.fair_tournament import FairTournament, pop_fair
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import ClusterQueue, ClusterState, FlavorResource, Workload, flavor_resource
from compiler.evaluator.preemption import HUMAN_REASONS, Preemptor, Target
from compiler.evaluator.tree import QuotaNode, height_of_lowest_subtree_that_fits
from compiler.parents import cycles

MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
QUOTA_RESERVED = "QuotaReserved"
# Reasons that say the workload cannot be admitted until some object changes.
INADMISSIBLE_REASONS = {MISCONFIGURED, SUSPENDED, "NoMatchingFlavor", "ExceedsMaxQuota", "Invalid",
                        "Inactive", "Finished"}


def _selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            return False
        key, op = expr.get("key"), expr.get("operator")
        if not isinstance(key, str):  # the API server refuses such a selector: it selects nothing
            return False
        values = requirement_values(expr)
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


class _Queue:
    """One ClusterQueue's pending workloads: an active heap plus the inadmissible set."""

    __slots__ = ("heap", "inadmissible", "strict", "sticky", "members", "classes", "bulk_moved",
                 "name", "waiting", "aside", "trail")

    def __init__(self, strict: bool, name: str = "", waiting: set[str] | None = None,
                 aside: set[str] | None = None) -> None:
        self.heap: list[tuple] = []
        # The engine's set of queues with a non-empty heap: a cycle visits only those.
        self.name = name
        self.waiting = waiting if waiting is not None else set()
        # The engine's set of queues that may have set workloads aside (inadmissible ones,
        # failed classes, a sticky head): a rescan visits only those.
        self.aside = aside if aside is not None else set()
        self.inadmissible: dict[str, WorkloadInfo] = {}
        self.strict = strict
        self.sticky: WorkloadInfo | None = None
        self.members: set[str] = set()
        # How many workloads of each equivalence class the heap holds: a failed head's class
        # is looked up here, not searched for in the heap (most failures have no classmate).
        self.classes: dict[int, int] = {}
        # Equivalence classes found inadmissible since the last requeue of this queue, with the
        # head that was (BestEffortFIFO only): their members wait in the inadmissible set.
        self.bulk_moved: dict[int, WorkloadInfo] = {}
        # The heads popped since the last rescan, each found a failure and set aside with its
        # class, while nothing else entered or left the queue; None once anything else
        # happened. A moment that finds the same heads with the same answers does the same
        # (see Engine._quiet_queues).
        self.trail: list[WorkloadInfo] | None = None

    def add(self, info: WorkloadInfo) -> None:
        """A new or returning workload (Kueue's PushOrUpdate): straight to the inadmissible set
        when its equivalence class already failed, otherwise into the heap."""
        self.trail = None
        if not self.strict and info.key not in self.members:
            failed = self.bulk_moved.get(info.scheduling_hash)
            if failed is not None:
                _share_verdict(info, failed)
                self.set_aside(info)
                return
        self.push(info)

    def set_aside(self, info: WorkloadInfo) -> None:
        """`info` waits in the inadmissible set for a requeue."""
        self.inadmissible[info.key] = info
        self.aside.add(self.name)

    def bulk_move(self, failed: WorkloadInfo) -> None:
        """`failed` found no fit (or no preemption candidates): every workload of its class in
        the heap would get the same answer, so it joins the inadmissible set without a turn."""
        if self.strict:
            return
        key = failed.scheduling_hash
        self.bulk_moved[key] = failed
        self.aside.add(self.name)
        if not self.classes.get(key):
            return
        kept = []
        for item in self.heap:
            info = item[2]
            if info.scheduling_hash == key and info is not self.sticky:
                self.members.discard(info.key)
                self._count(key, -1)
                _share_verdict(info, failed)
                self.set_aside(info)
            else:
                kept.append(item)
        heapq.heapify(kept)
        self.heap = kept

    def push(self, info: WorkloadInfo) -> None:
        self.trail = None
        if info.key in self.members:
            return
        self.members.add(info.key)
        self._count(info.scheduling_hash, 1)
        heapq.heappush(self.heap, (info.queue_order(), id(info), info))
        self.waiting.add(self.name)

    def _count(self, key: int, delta: int) -> None:
        count = self.classes.get(key, 0) + delta
        if count:
            self.classes[key] = count
        else:
            del self.classes[key]

    def pop(self) -> WorkloadInfo | None:
        if self.sticky is not None and self.sticky.key in self.members:
            info = self.sticky
            # (usually the heap's top: the sticky head went back with its place in the order)
            if self.heap[0][2] is info:
                heapq.heappop(self.heap)
            else:
                self.heap = [item for item in self.heap if item[2] is not info]
                heapq.heapify(self.heap)
            self.members.discard(info.key)
            self._count(info.scheduling_hash, -1)
            return info
        self.sticky = None
        if not self.heap:
            return None
        info = heapq.heappop(self.heap)[2]
        self.members.discard(info.key)
        self._count(info.scheduling_hash, -1)
        return info

    def requeue_inadmissible(self, keep: set[str] | None = None) -> None:
        """Every workload set aside goes back to the heap: appended, then heapified once (the
        heap's order is that of the workloads' keys, all distinct, however it is arranged).
        The workloads whose keys are in `keep` stay set aside (see `Engine._outside_selector`)."""
        self.trail = None
        self.bulk_moved.clear()
        members, heap = self.members, self.heap
        pushed = False
        kept: dict[str, WorkloadInfo] = {}
        for info in self.inadmissible.values():
            key = info.key
            if key in members:
                continue
            if keep and key in keep:
                kept[key] = info
                continue
            members.add(key)
            self._count(info.scheduling_hash, 1)
            heap.append((info.queue_order(), id(info), info))
            pushed = True
        self.inadmissible.clear()
        if kept:
            self.inadmissible.update(kept)
        if pushed:
            heapq.heapify(heap)
            self.waiting.add(self.name)


_head_count = itemgetter(0)  # of a quiet queue's (number of heads, name)
TARGETS_READING = "targets"  # a preemption search of the nomination itself (not the oracle's)


def _found(targets: list[Target]) -> tuple:
    """A preemption search's answer as a comparable value: who, and why."""
    return tuple([(target.info.key, target.reason) for target in targets])


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


def _changed(frs: list[FlavorResource] | None, before, now) -> set[FlavorResource] | None:
    """Which of `frs` have a commit version in `now` other than in `before` (the answers of a
    version reader over them; one pair's is a plain number). None when the versions are not
    per pair."""
    if frs is None:
        return None
    if len(frs) == 1:
        return set(frs) if before != now else set()
    return {fr for fr, old, new in zip(frs, before, now) if old != new}


def _reused_as_is(info: WorkloadInfo, cq_name: str) -> bool:
    """Whether a fresh-scan nomination of `info` in `cq_name` would be its last one, reused
    without a reading checked: the committed versions of what it read have not moved."""
    cached = info.nomination
    return (cached is not None and cached[0] == cq_name and cached[1] is None
            and (cached[2] is None or cached[2]() == cached[3]))


def _all_set_aside_as_is(heads: list[WorkloadInfo], queue: _Queue, cq_name: str) -> bool:
    """Whether every one of `heads` waits in `queue`'s inadmissible set with its last
    nomination in `cq_name` reusable as it stands (`_reused_as_is`)."""
    for info in heads:
        if not (_reused_as_is(info, cq_name) and info.key in queue.inadmissible):
            return False
    return True


def _by_borrowing_then_heap_order(entries: list[_Entry]) -> list[_Entry]:
    """Classical processing order: the lower borrowing height first, then the heap order
    (higher priority, older, UID, key). (Most cycles have one head: nothing to sort.)"""
    if len(entries) < 2:
        return entries
    return sorted(entries, key=_borrowing_then_heap_order)


def _borrowing_then_heap_order(entry: _Entry) -> tuple:
    return (entry.assignment.borrowing,) + entry.info.queue_order()


def _latest_first(info: WorkloadInfo) -> int:
    """Sort key: the later of two admissions in one moment first."""
    return -info.reserved_rank[1]


def _share_verdict(info: WorkloadInfo, failed: WorkloadInfo) -> None:
    """A workload set aside with its equivalence class was not evaluated itself: it stays
    pending (as Kueue reports it), with the answer its class got as the reason."""
    if info.preempted_by is None:
        info.status = "pending"
        info.reason_code, info.reason = failed.reason_code, failed.reason


class _Entry:
    __slots__ = ("info", "cq", "assignment", "targets", "status", "message", "reason", "skipped",
                 "inadmissible_only", "namespace_mismatch", "prev_tried")

    def __init__(self, info: WorkloadInfo, cq: str) -> None:
        self.info = info
        self.cq = cq
        self.assignment: Assignment | None = None
        self.targets: list[Target] = []
        self.status = ""
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


class Engine:
    def __init__(self, state: ClusterState, reuse: bool = True) -> None:
        """`reuse=False` recomputes every nomination and preemption search (the reference the
        tests compare the reusing engine with)."""
        self.state = state
        self.reuse = reuse
        self.config = state.configuration
        self.fair_sharing = self.config.fair_sharing
        self.infos: dict[str, WorkloadInfo] = {}
        self.nodes: dict[str, QuotaNode] = {}
        self.cohort_nodes: dict[str, QuotaNode] = {}
        self.inactive: dict[str, str] = {}  # CQ -> why
        self.admitted: dict[str, dict[str, WorkloadInfo]] = {}
        self.queues: dict[str, _Queue] = {}
        # Names of the queues whose heap may be non-empty (pushed to since a cycle last found
        # the heap empty): a cycle visits these, not all queues.
        self._waiting: set[str] = set()
        # Names of the queues that may hold workloads set aside or a sticky head, and the
        # pending workloads that may carry a flavor-scan position or stickiness: what a rescan
        # resets, so it does not walk every queue and workload.
        self._aside: set[str] = set()
        self._scanned: set[WorkloadInfo] = set()
        # Roots (ids) of the trees whose inadmissible workloads a finished job requeues, not
        # yet requeued (see `finish`).
        self._finished_roots: set[int] = set()
        self._tree_queues: dict[int, list[_Queue]] | None = None
        # A moment's quiet queues (see `_quiet_queues`): name -> (queue, the heads it pops in
        # cycles 1, 2, ...), the cycles of the moment so far, and the commit versions of their
        # trees when last checked.
        self._quiet: dict[str, tuple[_Queue, list[WorkloadInfo]]] = {}
        # The quiet queues as (number of heads, name), sorted by number: those with a head in
        # cycle c of the moment are a tail of the list, found by bisection, not a walk of all.
        self._quiet_order: list[tuple[int, str]] = []
        self._moment_cycle = 0
        self._quiet_versions: dict[int, int] = {}
        # name -> (trail, reader, versions) of the pairs the trail's heads read, when found quiet
        self._quiet_checked: dict[str, tuple[list[WorkloadInfo], Callable[[], object], object]] = {}
        # Heads of quiet queues not walked (counted in `decisions` and `reused` as the walk
        # would have), and quiet queues woken and walked after all.
        self.quiet_heads = 0
        self.woken = 0
        self.cycle = self.scheduling_cycle = 0  # the latter Kueue's (see `_scan_outdated`)
        self.decisions = 0
        self._reserve_seq = 0
        # Admitted at the clock's current moment: ordered among themselves by admission until
        # the next moment (see `rescan`).
        self._admitted_now: list[WorkloadInfo] = []
        self.converged = True
        # Evaluate: a run that comes back to a state it was in is in a circle of preemptions
        # (first cycle of the circle, period), found by circles.CircleFinder (see `run`).
        self.circle: tuple[int, int] | None = None
        self.circle_finder: CircleFinder | None = None  # the last run's (what it kept: tests)
        # XOR of hash((workload, ClusterQueue)) over the workloads admitted or evicted in this
        # process: equal values mean the same holders (within one run; see `run(repeats=)`).
        self.holders_print = 0
        # Admissions and evictions in order, when a caller (simulate) asks for them.
        self.journal: list[tuple[str, WorkloadInfo, str | None]] | None = None
        # Seconds since the epoch of "now" when a caller (simulate) runs the engine in time.
        self.clock: float | None = None
        # A nomination is a pure function of the workload, its flavor-scan position and the
        # committed state of the pairs it can read (the preemptor's snapshot versions them), so
        # a head whose pairs saw no admission or eviction since its last nomination reuses it.
        self.reused = 0
        # Of those, failed nominations reused because every reading they took (quota answers,
        # oracle answers, preemption searches) reads the same again.
        self.reused_failures = 0
        self._selected: dict[tuple[str, str], bool] = {}
        # (queue, equivalence class, scan position) -> the class's last failed or fitting
        # nomination there, and how many nominations were another workload's reused (or own
        # from another scan), of them how many fits.
        self._class_nominations: dict[tuple, tuple] = {}
        self.reused_from_class = 0
        self.reused_fits = 0
        # Fair sharing: each queue's head keys in the tournaments of its cohorts, kept from one
        # cycle to the next (fair_tournament._head_keys's memo).
        self._tournament_keys: dict[str, tuple] = {}
        self._build_tree()
        self.preemptor = Preemptor(self.nodes, state.cluster_queues, self.admitted, self.fair_sharing,
                                   self.config.preemption_strategies, reuse)
        self._assigners: dict[str, FlavorAssigner] = {}
        self._load_workloads()

    # -- setup -------------------------------------------------------------------------------
    def _build_tree(self) -> None:
        state = self.state
        parents: dict[str, str | None] = {name: c.parent for name, c in state.cohorts.items()}
        for cq in state.cluster_queues.values():
            if cq.cohort and cq.cohort not in parents:
                parents[cq.cohort] = None
        for name in list(parents):
            parent = parents[name]
            while parent is not None and parent not in parents:
                parents[parent] = None
                parent = None
        in_cycle = {name for cycle in cycles(parents) for name in cycle}
        # a cohort whose ancestor chain reaches a cycle is also unusable
        def reaches_cycle(name: str) -> bool:
            seen = set()
            while name is not None and name not in seen:
                if name in in_cycle:
                    return True
                seen.add(name)
                name = parents.get(name)
            return False
        broken = {name for name in parents if reaches_cycle(name)}
        for name in sorted(parents):
            if name in broken:
                continue
            spec = state.cohorts.get(name)
            quotas = {}
            weight = 1
            if spec is not None:
                for group in spec.resource_groups:
                    quotas.update(group.quotas)
                weight = spec.fair_weight
            self.cohort_nodes[name] = QuotaNode(name, False, quotas, weight)
        for name, node in self.cohort_nodes.items():
            parent = parents.get(name)
            if parent is not None:
                node.parent = self.cohort_nodes[parent]
                node.parent.child_cohorts.append(node)
        self.generations: dict[str, int] = {}  # CQ -> Kueue's generation (see `_scan_outdated`)
        for name in sorted(state.cluster_queues):
            cq = state.cluster_queues[name]
            quotas = {}
            for group in cq.resource_groups:
                quotas.update(group.quotas)
            node = QuotaNode(name, True, quotas, cq.fair_weight)
            self.nodes[name] = node
            self.admitted[name] = {}
            self.queues[name] = _Queue(cq.queueing_strategy == "StrictFIFO", name, self._waiting, self._aside)
            if cq.cohort:
                if cq.cohort in broken:
                    self.inactive[name] = f"cohort {cq.cohort} is part of a cycle"
                else:
                    node.parent = self.cohort_nodes[cq.cohort]
                    node.parent.child_cqs.append(node)
            missing = sorted({f for g in cq.resource_groups for f in g.flavors} - set(state.flavors))
            if missing:
                self.inactive.setdefault(name, f"flavor {missing[0]} not found")
            if cq.stop_policy not in ("None", "", None):
                self.inactive.setdefault(name, f"stopPolicy is {cq.stop_policy}")
        for node in self.cohort_nodes.values():
            if node.parent is None:
                node.finalize()

    def _resolve_queue(self, workload: Workload) -> tuple[str | None, str, str]:
        """(ClusterQueue, reason code, message) for a pending workload, Kueue's queue blockers."""
        if workload.queue_name is None:
            return None, MISCONFIGURED, "Workload has no queue name"
        lq = self.state.local_queues.get((workload.namespace, workload.queue_name))
        if lq is None:
            return None, MISCONFIGURED, f"LocalQueue {workload.queue_name} doesn't exist"
        if lq.stop_policy not in ("None", "", None):
            return lq.cluster_queue, SUSPENDED, f"LocalQueue {workload.queue_name} is inactive"
        if lq.cluster_queue not in self.state.cluster_queues:
            return lq.cluster_queue, MISCONFIGURED, f"ClusterQueue {lq.cluster_queue} doesn't exist"
        if lq.cluster_queue in self.inactive:
            return lq.cluster_queue, SUSPENDED, f"ClusterQueue {lq.cluster_queue} is inactive"
        return lq.cluster_queue, "", ""

    def _load_workloads(self) -> None:
        ordered = sorted(self.state.workloads, key=lambda w: (w.created, w.uid, w.key))
        for workload in ordered:
            info = WorkloadInfo(workload)
            self.infos[workload.key] = info
            if workload.admission is not None:
                self._load_admitted(info)
                continue
            if workload.invalid is not None:
                info.status = "inadmissible"
                info.reason_code, info.reason = workload.invalid
                continue
            if not workload.active:
                info.status = "inadmissible"
                info.reason_code, info.reason = "Inactive", "The workload is deactivated"
                continue
            self._enqueue(info)

    def _enqueue(self, info: WorkloadInfo) -> None:
        """A pending workload enters its ClusterQueue's queue, or is inadmissible with why."""
        cq, code, message = self._resolve_queue(info.workload)
        info.cluster_queue = cq
        if code:
            info.status = "inadmissible"
            info.reason_code, info.reason = code, message
            return
        info.status = "pending"
        info.reason_code, info.reason = "Pending", "Waiting to be scheduled"
        self.queues[cq].add(info)

    def _load_admitted(self, info: WorkloadInfo) -> None:
        workload = info.workload
        admission = workload.admission
        info.cluster_queue = admission.cluster_queue
        info.holds_quota = info.held_before = True
        info.status = "running"
        info.reason_code = QUOTA_RESERVED
        info.reason = f"Quota reserved in ClusterQueue {admission.cluster_queue}"
        for psa in admission.podsets:
            info.flavors[psa.name] = dict(psa.flavors)
            info.counts[psa.name] = psa.count
            for res, amount in psa.resource_usage.items():
                flavor = psa.flavors.get(res)
                if flavor is None or amount == 0:
                    continue
                fr = flavor_resource(flavor, res)
                info.usage[fr] = info.usage.get(fr, 0) + amount
        reserved = workload.quota_reserved_at or workload.created
        info.reserved_rank = (reserved.timestamp(), 0)
        node = self.nodes.get(admission.cluster_queue)
        if node is None:
            info.reason = (f"Quota reserved in ClusterQueue {admission.cluster_queue}, which does not "
                           "exist in the input; its usage is not counted")
            return
        node.add_all(info.usage)
        self.admitted[admission.cluster_queue][info.key] = info
        self.preemptor.track(info)
        info.borrowing = any(node.borrowing(fr) for fr in info.usage) if node.parent is not None else False

    # -- one cycle ---------------------------------------------------------------------------
    def assigner(self, cq_name: str) -> FlavorAssigner:
        assigner = self._assigners.get(cq_name)
        if assigner is None:
            assigner = FlavorAssigner(self.state.cluster_queues[cq_name], self.nodes[cq_name],
                                      self.state.flavors, self.fair_sharing,
                                      self.config.quota_check_strategy == "IgnoreUndeclared", None)
            self._assigners[cq_name] = assigner
        return assigner

    def _oracle_for(self, info: WorkloadInfo, cq_name: str):
        node = self.nodes[cq_name]
        policy = self.state.cluster_queues[cq_name].preemption
        may_preempt = policy.within_cluster_queue != "Never" or (
            node.parent is not None and policy.reclaim_within_cohort != "Never")

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
        assigner = self.assigner(cq_name)
        assigner.oracle = self._oracle_for(info, cq_name)
        podsets = info.workload.podsets
        full = assigner.assign(podsets, None, info.last_tried)
        if full.mode == A_FIT:
            return full, []
        if full.mode == A_PREEMPT:
            targets = self._search(assigner, info, cq_name, full.frs_needing_preemption(), full.usage)
            if targets:
                return full, targets
        reducible = [(ps.count - ps.min_count) if ps.min_count is not None else 0 for ps in podsets]
        total = sum(reducible)
        if total > 0:
            # Kueue's PodSetReducer: binary search for the smallest reduction that fits, i.e. the
            # largest counts; a probe fits if it is Fit or Preempt with targets.
            last_good, last = 0, None
            lo, hi = 0, total + 1
            while lo < hi:
                mid = (lo + hi) // 2
                counts = [ps.count - (d * mid // total) for ps, d in zip(podsets, reducible)]
                probe = assigner.assign(podsets, counts, info.last_tried)
                result = None
                if probe.mode == A_FIT:
                    result = (probe, [])
                elif probe.mode == A_PREEMPT:
                    targets = self._search(assigner, info, cq_name, probe.frs_needing_preemption(), probe.usage)
                    if targets:
                        result = (probe, targets)
                if result is not None:
                    last_good, last = mid, result
                    hi = mid
                else:
                    lo = mid + 1
            if last is not None and lo == last_good:
                return last
        return full, []

    def _search(self, assigner: FlavorAssigner, info: WorkloadInfo, cq_name: str, frs, usage) -> list[Target]:
        """The preemption targets of a request, recorded as one of the nomination's readings
        when the assigner records them."""
        targets = self.preemptor.targets(info, cq_name, frs, usage)
        if assigner.readings is not None:
            assigner.readings.append((TARGETS_READING, frozenset(frs), dict(usage), _found(targets)))
        return targets

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
                now = (*height_of_lowest_subtree_that_fits(node, what, amount), node.available(what))
                if now != answer:
                    if now[:2] != answer[:2] or (amount <= now[2]) != (amount <= answer[2]):
                        return None
                    if amount > now[2]:
                        messages[unused_quota_message(what, amount, answer[2])] = unused_quota_message(
                            what, amount, now[2])
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
        if info.reads is None or info.reads[0] != cq_name:
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
            info.reads = (cq_name, sorted(frs))
        return info.reads[1]

    def _nominate_cached(self, info: WorkloadInfo, cq_name: str) -> tuple[Assignment, list[Target]]:
        if not self.reuse:
            return self.get_assignment(info, cq_name)
        scan = tuple(sorted(info.last_tried.items())) if info.last_tried else None
        cached = info.nomination
        if cached is not None and cached[0] == cq_name and cached[1] == scan:
            found = self._reuse(info, cached, True)
            if found is not None:
                return found[4], found[5]
        # The last failure or fit of the workload's equivalence class in this queue from this
        # scan position (another workload's, or its own before a scan elsewhere).
        class_key = None if self.fair_sharing else (cq_name, info.scheduling_hash, scan)
        shared = self._class_nominations.get(class_key) if class_key is not None else None
        found = self._reuse(info, shared, False) if shared is not None and shared is not cached else None
        if found is not None:
            self.reused_from_class += 1
            if found[4].mode == A_FIT:
                self.reused_fits += 1
            return found[4], found[5]
        assigner = self.assigner(cq_name)
        assigner.read_usage = False
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
        kept = failed or assignment.mode == A_FIT
        reader, frs = None, None
        if assigner.read_usage:
            reader, frs = self._state_reader(info, cq_name, readings if kept else None)
        info.nomination = (cq_name, scan, reader, reader() if reader else None, assignment, targets,
                           readings if kept else None, frs)
        if kept and class_key is not None:
            self._class_nominations[class_key] = info.nomination
        return assignment, targets

    def _reuse(self, info: WorkloadInfo, cached: tuple, own: bool) -> tuple | None:
        """The nomination nominating `info` now gives, from `cached` (of `info` itself when
        `own`, else of a workload of its equivalence class, same queue and scan position), or
        None; it becomes `info`'s. The class shares the assigner's path (same pod sets, same
        priority): quota answers, and preemption answers unless the queue's policy compares
        creation times, when every answer is asked again for `info`."""
        cq_name, reader = cached[0], cached[2]
        if reader is None:  # decided by static quotas and the workload's shape alone
            self.reused += 1
            info.nomination = cached
            return cached
        state = reader()
        as_is = own or not self.preemptor.compares_creation(cq_name)
        if state == cached[3] and as_is:
            self.reused += 1
            info.nomination = cached
            return cached
        if cached[6] is None:
            return None
        retraced = self._retrace(info, cq_name, cached[6], _changed(cached[7], cached[3], state) if as_is else None)
        if retraced is None:
            return None
        readings, messages = retraced
        assignment = restated(cached[4], messages) if messages else cached[4]
        self.reused += 1
        if assignment.mode != A_FIT:
            self.reused_failures += 1
        info.nomination = (cq_name, cached[1], reader, state, assignment, cached[5], readings, cached[7])
        if not self.fair_sharing:
            self._class_nominations[(cq_name, info.scheduling_hash, cached[1])] = info.nomination
        return info.nomination

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

    def _nominate(self, info: WorkloadInfo, cq_name: str) -> _Entry:
        entry = _Entry(info, cq_name)
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

    def _ordered(self, entries: list[_Entry]):
        """Entries in processing order: classical, a sorted list; fair sharing re-ranks after
        every processed entry, so a generator advanced between `_process` calls."""
        if not self.fair_sharing:
            return _by_borrowing_then_heap_order(entries)
        return self._fair_order(entries)

    def _fair_order(self, entries: list[_Entry]):
        """Fair sharing's order, one entry at a time (see `_ordered`)."""
        if sum(1 for entry in entries if not self._inert(entry)) <= 1:
            # The order decides only what the entries that act do to each other: with one of
            # them at most, every order processes the same. (Inert heads still count when two
            # act: in the tournament a head that wins its cohort keeps the cohort's next heads
            # out of the comparison above it, whether it acts or not.)
            yield from entries
            return
        if self.reuse:
            tournament = FairTournament(self.nodes, {e.cq: e for e in entries}, self._tournament_keys)
            while tournament:
                yield tournament.pop()
            return
        remaining = {e.cq: e for e in entries}
        memo: dict = {}
        while remaining:
            yield pop_fair(self.nodes, remaining, memo)

    def run_cycle(self) -> bool:
        """One scheduling cycle. Returns True if anything changed."""
        self.cycle += 1
        if self._finished_roots:
            self._requeue_finished()
        quiet = self._quiet_cycle() if self._quiet else 0
        heads: list[tuple[WorkloadInfo, str]] = []
        # Queues are visited in name order; one whose heap is empty is only forgotten (and its
        # sticky head with it), which is all pop() would do, so queues never pushed to since
        # are skipped without a visit.
        for name in sorted(self._waiting):
            queue = self.queues[name]
            if not queue.heap or name in self.inactive:
                queue.sticky = None
                self._waiting.discard(name)
                continue
            info = queue.pop()
            if info is not None:
                heads.append((info, name))
        self._evicted_now: list[WorkloadInfo] = []
        if heads or quiet:
            self.scheduling_cycle += 1
        if not heads:
            return quiet > 0
        entries: list[_Entry] = []
        inadmissible: list[_Entry] = []
        with self.preemptor.at_commit():
            for info, cq_name in heads:
                entry = self._nominate(info, cq_name)
                self.decisions += 1
                (inadmissible if entry.inadmissible_only else entries).append(entry)
        changed = False
        temporary: list[tuple[QuotaNode, dict]] = []  # usage held only for this cycle
        preempted: dict[str, Target] = {}
        preemptors: list[tuple[_Entry, list[Target]]] = []
        for entry in self._ordered(entries):
            changed |= self._process(entry, preempted, temporary, preemptors)
        for node, usage in temporary:
            node.remove_all(usage)
        # Evictions complete between cycles: victims release quota and are requeued.
        touched_roots: set[int] = set()
        for entry, targets in preemptors:
            for target in targets:
                victim = target.info
                if not victim.holds_quota:
                    continue
                self._evict(victim, entry, target.reason)
                root = self._requeue_root(victim)
                if root is not None:
                    touched_roots.add(id(root))
                changed = True
        changed |= self._requeue_entries(entries + inadmissible)
        # The evictions complete after this cycle's heads went back to their queues (in Kueue
        # the victims' quota is released by the workload controller, later): the workloads
        # found inadmissible this cycle are requeued with the others.
        for root in touched_roots:
            self._requeue_tree(root)
        # The victims are back in their queues for the very next cycle, ordered by their
        # eviction: Kueue's workload controller requeues a victim as soon as its eviction
        # completes (with the preemptor still at the head of its queue). Holding them back one
        # more cycle let a victim skip the cycle where the preemptor takes the room, and be
        # tried fresh (a full flavor scan, partial admission) afterwards, which Kueue does not do.
        self._return_evicted(self._evicted_now)
        return changed or bool(self._evicted_now) or quiet > 0

    def _requeue_entries(self, entries: list[_Entry]) -> bool:
        """The cycle's heads not admitted go back to their queues; each queue's trail records
        whether its head was a failure set aside with its class, all a quiet queue does."""
        changed = False
        for entry in entries:
            queue = self.queues[entry.cq]
            if entry.status == "admitted":
                queue.trail = None
                continue
            changed |= self._requeue(entry)
            trail = queue.trail
            if trail is None:
                continue
            info = entry.info
            if entry.status == "nofit" or (entry.status == "nocandidates" and not self._reserves(entry.cq)):
                if info.key in queue.inadmissible:
                    trail.append(info)
                    continue
            queue.trail = None
        return changed

    def _inert(self, entry: _Entry) -> bool:
        """Whether processing `entry` neither reads nor changes the cycle's state: a head that
        does not fit, or that found no candidates in a queue that holds no reservation for it
        (reclaimWithinCohort: Any). It only records its own answer (see `_process`)."""
        mode = entry.assignment.mode
        return mode == A_NO_FIT or (mode == A_PREEMPT and not entry.targets and not self._reserves(entry.cq))

    def _reserves(self, cq_name: str) -> bool:
        """Whether a head of `cq_name` that found no preemption candidates holds the quota it
        could use for the rest of the cycle (Kueue does unless reclaimWithinCohort is Any)."""
        return self.state.cluster_queues[cq_name].preemption.reclaim_within_cohort != "Any"

    def _process(self, entry: _Entry, preempted: dict[str, Target], temporary, preemptors) -> bool:
        info = entry.info
        assignment = entry.assignment
        node = self.nodes[entry.cq]
        mode = assignment.mode
        info.last_assignment = assignment
        if mode == A_NO_FIT:
            entry.reason = assignment.no_fit_reason
            entry.status = "nofit"
            self._remember_scan(info, entry.cq, assignment)
            return False
        if mode == A_PREEMPT and not entry.targets:
            entry.reason = WAITING_FOR_QUOTA
            entry.status = "nocandidates"
            self._remember_scan(info, entry.cq, assignment)
            if self._reserves(entry.cq):
                reserve = self._reservation(assignment, node)
                node.add_all(reserve)
                temporary.append((node, reserve))
            return False
        # (comprehensions and loops, not generator expressions, in the methods a cycle calls
        # per head: compiled, these are C calls, which cannot hold a generator's closure)
        if any([t.info.key in preempted for t in entry.targets]):
            entry.skipped = True
            entry.status = "skipped"
            entry.message = "Workload has overlapping preemption targets with another workload"
            entry.reason = WAITING_FOR_QUOTA
            self._remember_scan(info, entry.cq, assignment)
            return False
        with self.preemptor.without([*preempted.values(), *entry.targets]):
            fits = True
            for fr, value in assignment.usage.items():
                if node.available(fr) < value:
                    fits = False
                    break
        if not fits:
            entry.skipped = True
            entry.status = "skipped"
            entry.message = "Workload no longer fits after processing another workload"
            entry.reason = WAITING_FOR_QUOTA
            self._remember_scan(info, entry.cq, assignment)
            return False
        for target in entry.targets:
            preempted[target.info.key] = target
        if mode == A_PREEMPT:
            node.add_all(assignment.usage)
            temporary.append((node, dict(assignment.usage)))
            entry.status = "preempting"
            entry.reason = WAITING_FOR_PREEMPTED
            entry.message += f". Pending the preemption of {len(entry.targets)} workload(s)"
            info.last_tried = None
            info.pending_victims = sorted([t.info.key for t in entry.targets])
            preemptors.append((entry, entry.targets))
            return True
        self._admit(info, entry.cq, assignment)
        entry.status = "admitted"
        return True

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
        self.generations[cq_name] = self.generations.get(cq_name, 0) + 1
        self._reserve_seq += 1
        info.cluster_queue = cq_name
        info.usage = dict(assignment.usage)
        info.flavors = {ps.name: {res: f[0] for res, f in sorted(ps.flavors.items())} for ps in assignment.podsets}
        info.counts = {ps.name: ps.count for ps in assignment.podsets}
        info.holds_quota = True
        info.status = "admitted"
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
            self.journal.append(("admitted", info, None))
        queue = self.queues[cq_name]
        if queue.sticky is info:
            queue.sticky = None

    def _evict(self, victim: WorkloadInfo, entry: _Entry, reason: str) -> None:
        cq_name = victim.cluster_queue
        node = self.nodes[cq_name]
        node.remove_all(victim.usage)
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
        victim.status = "preempted"
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
            self.journal.append(("preempted", victim, preemptor.key))

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
                self.queues[target_cq].add(victim)

    def _requeue(self, entry: _Entry) -> bool:
        info = entry.info
        queue = self.queues[entry.cq]
        info.cluster_queue = entry.cq
        if info.preempted_by is not None:
            # Evicted by this evaluation and not back in: report the preemption, which is the
            # decision that matters, rather than the later pending message.
            pass
        else:
            info.status = "pending"
            info.reason_code = entry.reason or WAITING_FOR_QUOTA
            info.reason = entry.message
        if entry.status == "preempting":
            info.sticky = True
            self._scanned.add(info)
            queue.sticky = info if not queue.strict else queue.sticky
            self._aside.add(queue.name)
            queue.push(info)
            return True
        if entry.namespace_mismatch:
            if info.preempted_by is None:
                info.status = "inadmissible"
            queue.set_aside(info)
            return True
        if queue.strict or entry.skipped:
            queue.push(info)
            if queue.strict and info.reason_code in INADMISSIBLE_REASONS and info.preempted_by is None:
                # It keeps the head of its StrictFIFO queue, yet no cycle can admit it: the status
                # says what Kueue's reason says, as on a BestEffortFIFO queue.
                info.status = "inadmissible"
            # Back at the front with the same state: only a changed flavor-scan position makes
            # the next cycle differ (the engine is deterministic). A StrictFIFO head whose scan
            # alternates between flavors keeps changing, as it does in Kueue.
            return (info.last_tried or None) != entry.prev_tried
        if info.reason_code in INADMISSIBLE_REASONS and info.preempted_by is None:
            info.status = "inadmissible"
        if info.last_tried and any([index != -1 for index in info.last_tried.values()]):
            # Kueue's requeueIfNotPresent: a flavor scan with flavors still to try (PendingFlavors)
            # goes back to the heap, so the next cycle resumes the scan where this one stopped.
            queue.push(info)
            return (info.last_tried or None) != entry.prev_tried
        queue.set_aside(info)
        if entry.status in ("nofit", "nocandidates"):
            queue.bulk_move(info)
        return True

    def run(self, cycles: int | None = None, limit: int | None = None,
            after_cycle: Callable[["Engine"], None] | None = None, repeats: int | None = None,
            circles: bool = True) -> None:
        """N cycles, or until a cycle changes nothing. `after_cycle` sees the engine after each
        cycle (a command's progress line), and changes nothing.

        `repeats` (simulate): stop, not converged, once a cycle that changed who holds quota
        leaves the same set of workloads holding it for the `repeats`-th time. Kueue's own preemption can go round in a
        circle (a fair-sharing preemptor is preempted back by its victim's cohort): a live
        cluster churns on in real time, a simulation has to move on to its next event. Evaluate
        leaves it unset and runs to its cycle cap, as the oracle does; with `circles` a run that
        comes back to a state it was in gets the cap's state from the circle's period instead
        (circles.py; False runs every cycle, the reference for tests)."""
        if cycles is not None:
            for _ in range(cycles):
                self.run_cycle()
                if after_cycle is not None:
                    after_cycle(self)
            return
        # Every workload can be admitted, preempted and readmitted a few times; a cluster that is
        # still changing after that is cycling (preemption ping-pong) and we stop there.
        limit = limit if limit is not None else 8 * len(self.infos) + 100
        seen: dict[int, int] = {}
        holders = self.holders_print
        finder = CircleFinder(self) if circles and repeats is None else None
        self.circle_finder = finder
        start = self.cycle
        for done in range(1, limit + 1):
            changed = self.run_cycle()
            if after_cycle is not None:
                after_cycle(self)
            if not changed:
                return
            # Only a cycle that changed who holds quota counts: cycles that move a flavor scan
            # on, or set heads aside, lead somewhere new with the same holders.
            if repeats is not None and self.holders_print != holders:
                holders = self.holders_print
                seen[holders] = times = seen.get(holders, 0) + 1
                if times >= repeats:
                    break
            if finder is not None:
                period = finder.period()
                if period:
                    # The state repeats with this period up to the cap: the cap's state is the
                    # one (cycles left) mod period cycles on.
                    self.circle = (self.cycle - period, period)
                    for _ in range((limit - done) % period):
                        self.run_cycle()
                        if after_cycle is not None:
                            after_cycle(self)
                    self.cycle = start + limit
                    break
        self.converged = False

    def waiting_queues(self) -> set[str]:
        """The queues the next cycle visits (a queue found with an empty heap loses its
        sticky head there)."""
        return self._waiting

    # -- a live cluster: workloads arrive and finish between runs (simulate) -----------------
    def submit(self, workload: Workload) -> WorkloadInfo:
        """A new pending workload, as when a job is created: it enters its queue for the next run."""
        if self._finished_roots:
            self._requeue_finished()
        info = WorkloadInfo(workload)
        self.infos[workload.key] = info
        self._enqueue(info)
        return info

    def finish(self, key: str) -> None:
        """An admitted workload's job finished: its quota is released and, as on Kueue's
        workload-deletion event, the inadmissible workloads of its cohort tree are requeued.
        The workload leaves the engine (a finished job is not evaluated again)."""
        info = self.infos.pop(key)
        if not info.holds_quota:
            return
        node = self.nodes[info.cluster_queue]
        node.remove_all(info.usage)
        self.generations[info.cluster_queue] = self.generations.get(info.cluster_queue, 0) + 1
        self.admitted[info.cluster_queue].pop(key, None)
        self.preemptor.untrack(info)
        info.holds_quota = False
        info.status = "finished"
        root = self._requeue_root(info)
        if root is not None:
            # Done when something next looks at the queues (a submission, a cycle), unless a
            # rescan, which requeues every queue, comes first: then it is work done twice.
            self._finished_roots.add(id(root))

    def _requeue_finished(self) -> None:
        for root in sorted(self._finished_roots):
            self._requeue_tree(root)
        self._finished_roots.clear()

    def _requeue_tree(self, root: int) -> None:
        """Kueue's requeue on a quota release: the inadmissible workloads of every queue in the
        cohort tree with this root (by id) go back to their heaps. The queues of each tree are
        listed once (the tree does not change during a run). A quiet queue of the tree is woken
        first (an evicted workload returns to a queue of its tree, after this)."""
        if self._tree_queues is None:
            self._tree_queues = {}
            for name, queue in self.queues.items():
                self._tree_queues.setdefault(id(self.nodes[name].root()), []).append(queue)
        for queue in self._tree_queues.get(root, ()):
            if queue.name in self._quiet:
                self._wake(queue.name, self._moment_cycle)
            if queue.inadmissible or queue.bulk_moved:
                queue.requeue_inadmissible(self._outside_selector(queue))

    def _outside_selector(self, queue: _Queue) -> set[str] | None:
        """The workloads set aside in `queue` whose namespace its ClusterQueue's selector does
        not select: Kueue's requeue on a quota release (queueInadmissibleWorkloads) leaves them
        in the inadmissible list, since no quota can change that answer. Back in the heap, such a
        workload would take its queue's head for a cycle (in a StrictFIFO queue, ahead of every
        younger workload) and be set aside again. (A rescan puts them back like everyone else:
        Kueue's queue manager, starting, pushes every workload it is given.) None when the
        selector selects every namespace."""
        selector = self.state.cluster_queues[queue.name].namespace_selector
        if selector is not None and not selector.get("matchLabels") and not selector.get("matchExpressions"):
            return None
        outside: set[str] = set()
        for key, info in queue.inadmissible.items():
            if not self._namespace_selected(queue.name, info.workload.namespace):
                outside.add(key)
        return outside

    def _namespace_selected(self, cq_name: str, namespace: str) -> bool:
        selected = (cq_name, namespace)
        matches = self._selected.get(selected)
        if matches is None:  # namespaces and selectors do not change during a run
            matches = self._selected[selected] = _selector_matches(
                self.state.cluster_queues[cq_name].namespace_selector, self.state.namespace_labels(namespace))
        return matches

    def run_moment(self, repeats: int | None = None) -> None:
        """A moment of a live cluster (simulate): `rescan`, then `run` to quiescence. A queue
        whose moment is provably the one it had last time is not walked again (see
        `_quiet_queues`); the engine ends in the state the walk would have left."""
        self.rescan(quiet=self.reuse and not self.fair_sharing)
        try:
            # (A moment has state of its own, the quiet queues' walk, that a circle's
            # fingerprint does not hold: simulate stops circles by `repeats` instead.)
            self.run(repeats=repeats, circles=False)
        finally:
            self._end_quiet()

    def _settle_admission_order(self) -> None:
        """The workloads admitted at the last moment, ordered among themselves by admission
        while it lasted (as `evaluate` orders what it admits), now have the moment's time only,
        as an export of the cluster shows them: ties broken by UID. Only when that changes
        their order are they tracked again (moving the commit versions a cached answer reads)."""
        admitted = [info for info in self._admitted_now if info.holds_quota and self.infos.get(info.key) is info]
        self._admitted_now.clear()
        by_admission = sorted(admitted, key=_latest_first)
        if [info.uid for info in by_admission] == sorted([info.uid for info in admitted]):
            return  # the same order either way (and one alone has no tie)
        for info in admitted:
            self.preemptor.untrack(info)
            info.reserved_rank = (info.reserved_rank[0], 0)
            self.preemptor.track(info)

    def rescan(self, quiet: bool = False) -> None:
        """Every pending workload gets a fresh look, as when Kueue starts on an export of this
        moment: the inadmissible ones are requeued and forget their flavor-scan position.
        `quiet` (run_moment): the quiet queues are left as they are until something wakes them."""
        self._finished_roots.clear()  # every queue is requeued here
        self._settle_admission_order()
        self._quiet = self._quiet_queues() if quiet else {}
        # (ordered by the number of heads alone: the queues with a head in cycle c are the tail
        # from the first with c heads whatever the order among equals, and each queue is woken
        # on its own, so that order decides nothing; comparing names cost more than the rest)
        self._quiet_order = sorted([(len(heads), name) for name, (_, heads) in self._quiet.items()],
                                   key=_head_count)
        self._moment_cycle = 0
        for name in self._aside:
            if name in self._quiet:
                continue
            queue = self.queues[name]
            if queue.inadmissible or queue.bulk_moved:
                queue.requeue_inadmissible()
            queue.sticky = None
            queue.trail = []
        for name in self._waiting:
            if name not in self._quiet:
                self.queues[name].trail = []
        self._aside.clear()
        self._aside.update(self._quiet)
        if not self._scanned:
            return
        asleep = {info for _, heads in self._quiet.values() for info in heads}
        for info in self._scanned:
            if info in asleep:
                continue
            if not info.holds_quota and self.infos.get(info.key) is info:
                info.last_tried = None
                info.sticky = False
        self._scanned.intersection_update(asleep)

    # -- quiet queues (run_moment) -----------------------------------------------------------
    def _quiet_queues(self) -> dict[str, tuple[_Queue, list[WorkloadInfo]]]:
        """The queues whose moment would repeat their last one: last moment every head they
        popped was a failure set aside with its class (no reservation held), nothing entered or
        left the queue since, and every such head's nomination is reused as it stands (same
        queue, a fresh flavor scan, the committed versions of what it read unchanged). After a
        rescan such a queue pops the same heads in the same order, cycle after cycle, each
        getting the same answer, as long as no commit moves what they read: walking it again
        changes nothing. Its heads stay set aside, and the queue is woken (walked up to the
        current cycle) when a commit may matter, something enters it, or the moment ends before
        its last head's turn."""
        quiet: dict[str, tuple[_Queue, list[WorkloadInfo]]] = {}
        snapshot = self.preemptor.snapshot
        checked = self._quiet_checked
        for name in self._aside:
            queue = self.queues[name]
            heads = queue.trail
            if not heads or queue.heap or queue.sticky is not None or name in self.inactive:
                continue
            # A trail found quiet stays so while it is the queue's trail (nothing entered or
            # left the queue, none of its heads was nominated) and no pair its heads read
            # saw a commit: one reading of those pairs' versions instead of one per head.
            last = checked.get(name)
            if last is not None and last[0] is heads and last[1]() == last[2]:
                quiet[name] = (queue, heads)
            elif _all_set_aside_as_is(heads, queue, name):
                quiet[name] = (queue, heads)
                reader = self._trail_reader(name, heads)
                if reader is not None:
                    checked[name] = (heads, reader, reader())
        versions: dict[int, int] = {}
        for name in quiet:
            root = snapshot.root_of(name)
            if root not in versions:
                versions[root] = snapshot.tree_versions[root]
        self._quiet_versions = versions
        return quiet

    def _trail_reader(self, name: str, heads: list[WorkloadInfo]) -> Callable[[], object] | None:
        """A reader of the commit versions of every pair the nominations of `heads` read (None
        when one of them read pairs it does not list)."""
        frs: set[FlavorResource] = set()
        for info in heads:
            cached = info.nomination
            if cached[2] is None:
                continue
            if cached[7] is None:
                return None
            frs.update(cached[7])
        return self.preemptor.snapshot.version_reader(name, sorted(frs), False)

    def _quiet_cycle(self) -> int:
        """A cycle's start with quiet queues: those whose coming heads read something a commit
        has since changed are woken; the others' heads of this cycle are counted (they are
        nominated and reused, for the engine's statistics) and their number returned."""
        self._moment_cycle += 1
        cycle = self._moment_cycle
        snapshot = self.preemptor.snapshot
        order = self._quiet_order
        for root, version in self._quiet_versions.items():
            now = snapshot.tree_versions[root]
            if now == version:
                continue
            self._quiet_versions[root] = now
            for _, name in order[bisect_left(order, (cycle,)):]:  # (a copy: waking edits the list)
                if snapshot.root_of(name) != root:
                    continue
                heads = self._quiet[name][1]
                last = self._quiet_checked.get(name)
                if last is not None and last[0] is heads and last[1]() == last[2]:
                    continue
                self._quiet_checked.pop(name, None)
                for info in heads[cycle - 1:]:
                    if not _reused_as_is(info, name):
                        self._wake(name, cycle - 1)
                        break
        popped = len(order) - bisect_left(order, (cycle,))
        self.decisions += popped
        self.reused += popped
        self.quiet_heads += popped
        return popped

    def _wake(self, name: str, cycles: int) -> None:
        """Walk quiet queue `name` as the cycles 1..`cycles` of this moment did: the rescan it
        skipped, then its head of each of those cycles popped and set aside with the answer its
        nomination holds."""
        queue, heads = self._quiet.pop(name)
        self._quiet_order.remove((len(heads), name))
        self.woken += 1
        for info in heads:
            if info in self._scanned:
                self._scanned.discard(info)
                if not info.holds_quota and self.infos.get(info.key) is info:
                    info.last_tried = None
                    info.sticky = False
        if queue.inadmissible or queue.bulk_moved:
            queue.requeue_inadmissible()
        queue.sticky = None
        queue.trail = []
        for expected in heads[:cycles]:
            info = queue.pop()
            if info is not expected:
                raise RuntimeError(f"quiet queue {name}: popped {info and info.key}, not {expected.key}")
            entry = _Entry(info, name)
            entry.assignment, entry.targets = info.nomination[4], info.nomination[5]
            entry.message = entry.assignment.message()
            self._process(entry, {}, [], [])
            self._requeue_entries([entry])

    def _end_quiet(self) -> None:
        """The moment is over: a quiet queue whose last head's turn never came is walked as far
        as the moment went; the others are left as the walk would have left them."""
        order = self._quiet_order
        for _, name in order[bisect_left(order, (self._moment_cycle + 1,)):]:
            self._wake(name, self._moment_cycle)
        self._quiet = {}
        self._quiet_order = []
        self._quiet_versions = {}
