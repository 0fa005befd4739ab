"""The queue manager's part of the engine: one ClusterQueue's pending workloads, an active heap
in queue order plus the inadmissible set, with equivalence classes set aside together (Kueue's
ClusterQueue of pkg/cache/queue: cluster_queue.go, its heap and inadmissibleWorkloads)."""

from __future__ import annotations

import heapq

from compiler.evaluator.info import WorkloadInfo

class PendingQueue:
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
        when its equivalence class already failed, otherwise into the heap.

        A workload set aside with its class is not evaluated, so nothing writes its status:
        it keeps the status and reason of its own last attempt, or "Waiting to be scheduled"
        if it never had one. Kueue's scheduler writes the QuotaReserved condition only of the
        workload it tried (requeueAndUpdate); its workload controller names the class's
        failure ("Bypassed scheduling evaluation ...", GetNoFitReason) only with the
        UnadmittedWorkloadsObservability gate, and even then not on a workload without a
        condition (UnadmittedWorkloadsExplicitStatus off) nor over a scheduler's own reason."""
        self.trail = None
        if not self.strict and info.key not in self.members:
            if info.scheduling_hash in self.bulk_moved:
                self.set_aside(info)
                return
        self.push(info)

    def set_aside(self, info: WorkloadInfo) -> None:
        """`info` waits in the inadmissible set for a requeue."""
        self.inadmissible[info.key] = info
        self.aside.add(self.name)

    def bulk_move(self, failed: WorkloadInfo) -> None:
        """`failed` found no fit (or no preemption candidates): every workload of its class in
        the heap would get the same answer, so it joins the inadmissible set without a turn.
        Those workloads keep their own status and reason (see `add`)."""
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
                # Popped out of the heap's order: a rescan forgets the sticky head, so the
                # next moment would pop another head first, and this trail is not one it repeats.
                self.trail = None
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
        The workloads whose keys are in `keep` stay set aside (see `Engine._outside_selector`).

        The heap then holds every pending workload of the queue, as after a rescan: the trail
        starts again, empty (a queue requeued by a quota release in the middle of a moment
        may be found quiet at the next one, QuietQueues._quiet_queues). Not when some stay set
        aside: a rescan would put them back too."""
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
        self.trail = [] if not kept else None
        if pushed:
            heapq.heapify(heap)
            self.waiting.add(self.name)

