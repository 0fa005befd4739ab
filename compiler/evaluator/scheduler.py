"""Kueue's scheduling cycle (scheduler.schedule in pkg/scheduler/scheduler.go): pop the head of
every ClusterQueue, nominate each, process them in order (classical: borrowing, then queue
order; fair sharing: the tournament), complete the evictions, requeue."""

from __future__ import annotations

from compiler.evaluator.fair_tournament import FairTournament, pop_fair
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.nominator import Entry
from compiler.evaluator.preemption import Target
from compiler.evaluator.queue_manager import PendingQueue
from compiler.evaluator.quiet_queues import QuietQueues
from compiler.evaluator.tree import QuotaNode

def _by_borrowing_then_heap_order(entries: list[Entry]) -> list[Entry]:
    """Classical processing order: the lower borrowing height first, then the heap order
    (higher priority, older, UID, key). (Most cycles have one head: nothing to sort.)"""
    if len(entries) < 2:
        return entries
    return sorted(entries, key=_borrowing_then_heap_order)


def _borrowing_then_heap_order(entry: Entry) -> tuple:
    return (entry.assignment.borrowing,) + entry.info.queue_order()



class Scheduler(QuietQueues):
    """One scheduling cycle, and the requeues a quota release makes."""

    def _ordered(self, entries: list[Entry]):
        """Entries in processing order: classical, a sorted list; fair sharing re-ranks after
        every processed entry, so a generator advanced between `_process` calls."""
        if not self.fair_sharing:
            return _by_borrowing_then_heap_order(entries)
        return self._fair_order(entries)

    def _fair_order(self, entries: list[Entry]):
        """Fair sharing's order, one entry at a time (see `_ordered`)."""
        if sum(1 for entry in entries if not self._inert(entry)) <= 1:
            # The order decides only what the entries that act do to each other: with one of
            # them at most, every order processes the same. (Inert heads still count when two
            # act: in the tournament a head that wins its cohort keeps the cohort's next heads
            # out of the comparison above it, whether it acts or not.)
            yield from entries
            return
        competing = {e.cq: e for e in entries}
        # This cycle's heads of the quiet queues take part too, each with the answer it holds:
        # they do nothing, but one may win its cohort's round. They are not yielded (their
        # queues are known by name: a quiet queue has no head among `entries`).
        quiet = set()
        if self._quiet:
            for entry in self._quiet_entries():
                competing[entry.cq] = entry
                quiet.add(entry.cq)
        if self.layers.fair_tournament:
            tournament = FairTournament(self.nodes, competing, self._tournament_keys)
            while tournament:
                entry = tournament.pop()
                if entry.cq not in quiet:
                    yield entry
            return
        memo: dict = {}
        while competing:
            entry = pop_fair(self.nodes, competing, memo)
            if entry.cq not in quiet:
                yield entry

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
        entries: list[Entry] = []
        inadmissible: list[Entry] = []
        with self.preemptor.at_commit():
            for info, cq_name in heads:
                entry = self._nominate(info, cq_name)
                self.decisions += 1
                (inadmissible if entry.inadmissible_only else entries).append(entry)
        changed = False
        temporary: list[tuple[QuotaNode, dict]] = []  # usage held only for this cycle
        preempted: dict[str, Target] = {}
        preemptors: list[tuple[Entry, list[Target]]] = []
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

    def _requeue_finished(self) -> None:
        for root in sorted(self._finished_roots):
            self._requeue_tree(root)
        self._finished_roots.clear()

    def _requeue_tree(self, root: int) -> None:
        """Kueue's requeue on a quota release: the inadmissible workloads of every queue in the
        cohort tree with this root (by id) go back to their heaps. The queues of each tree are
        listed once (the tree does not change during a run). A quiet queue of the tree stays
        quiet, its heads popped again from the next cycle (`_requeue_quiet`), unless the requeue
        would leave some of its workloads set aside: it is then woken first."""
        if self._tree_queues is None:
            self._tree_queues = {}
            for name, queue in self.queues.items():
                self._tree_queues.setdefault(id(self.nodes[name].root()), []).append(queue)
        for queue in self._tree_queues.get(root, ()):
            if not (queue.inadmissible or queue.bulk_moved):
                continue
            outside = self._outside_selector(queue)
            if queue.name in self._quiet:
                if not outside:
                    self._requeue_quiet(queue.name)
                    continue
                self._wake(queue.name, self._moment_cycle)
                outside = self._outside_selector(queue)  # (of what the walk set aside)
            queue.requeue_inadmissible(outside)

    def _outside_selector(self, queue: PendingQueue) -> set[str] | None:
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
