"""Quiet queues, a layer over the cycle (run_moment; this engine's own): a queue whose moment
would repeat its last one is not walked, and is woken (walked up to the current cycle) when a
commit may matter, something enters it, or the moment ends."""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter
from typing import Callable

from compiler.evaluator.answer_bounds import UsageBounds, trail_bounds
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.nominator import Entry
from compiler.evaluator.processing import EntryProcessor
from compiler.evaluator.queue_manager import PendingQueue

_head_count = itemgetter(0)  # of a quiet queue's (number of heads, name)


def _all_set_aside(heads: list[WorkloadInfo], queue: PendingQueue) -> bool:
    """Whether every one of `heads` waits in `queue`'s inadmissible set."""
    inadmissible = queue.inadmissible
    for info in heads:
        if info.key not in inadmissible:
            return False
    return True


class CheckedTrail:
    """A queue's trail found quiet, and the commit versions of every pair its heads' nominations
    read then (or, with answer bounds, a check of those bounds): it stays quiet while it is the
    queue's trail and those versions hold."""

    __slots__ = ("trail", "reader", "state", "nominations", "bounds")

    def __init__(self, trail: list[WorkloadInfo], reader: Callable[[], object] | None, state: object,
                 bounds: UsageBounds | None = None) -> None:
        self.trail = trail
        self.reader = reader
        self.state = state
        self.bounds = bounds  # (instead of a reader: the heads' answer bounds)
        # the heads' nominations then: a later trail of the same heads holding the same
        # nominations reads what this one read (see `holds_again`)
        self.nominations = [info.nomination for info in trail]

    def holds(self, heads: list[WorkloadInfo]) -> bool:
        return self.trail is heads and self._reads_the_same()

    def _reads_the_same(self) -> bool:
        if self.bounds is not None:
            return self.bounds.hold()
        return self.reader() == self.state

    def holds_again(self, heads: list[WorkloadInfo]) -> bool:
        """Whether `heads`, a new trail (the queue was walked since), is this trail again: the
        same heads in the same order, each with the same nomination, and what they read holds.
        It then becomes the trail checked."""
        trail = self.trail
        if len(heads) != len(trail):
            return False
        nominations = self.nominations
        for index in range(len(heads)):
            info = heads[index]
            if info is not trail[index] or info.nomination is not nominations[index]:
                return False
        if not self._reads_the_same():
            return False
        self.trail = heads
        return True


class QuietQueues(EntryProcessor):
    """The quiet queues of a moment: which they are, their heads counted cycle by cycle, their
    waking."""

    def _quiet_queues(self) -> dict[str, tuple[PendingQueue, list[WorkloadInfo]]]:
        """The queues whose moment would repeat their last one: last moment every head they
        popped was a failure set aside with its class (no reservation held), nothing entered or
        left the queue since, and every such head's nomination is reused as it stands (same
        queue, a fresh flavor scan, the committed versions of what it read unchanged). After a
        rescan such a queue pops the same heads in the same order, cycle after cycle, each
        getting the same answer, as long as no commit moves what they read: walking it again
        changes nothing. Its heads stay set aside, and the queue is woken (walked up to the
        current cycle) when a commit may matter, something enters it, or the moment ends before
        its last head's turn."""
        quiet: dict[str, tuple[PendingQueue, list[WorkloadInfo]]] = {}
        if self.tas.wanted:
            # A head placed on nodes reads what an admission in another queue (on the same
            # nodes, outside its cohort) moves, which the commit versions do not see.
            return quiet
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
            if last is not None and last.holds(heads):
                quiet[name] = (queue, heads)
            elif last is not None and _all_set_aside(heads, queue) and last.holds_again(heads):
                quiet[name] = (queue, heads)
            elif self._all_set_aside_answering(heads, queue, name):
                quiet[name] = (queue, heads)
                bounds = trail_bounds(self, name, heads) if self.layers.answer_bounds else None
                if bounds is not None:
                    checked[name] = CheckedTrail(heads, None, None, bounds)
                    continue
                reader = self._trail_reader(name, heads)
                if reader is not None:
                    checked[name] = CheckedTrail(heads, reader, reader())
        versions: dict[int, int] = {}
        for name in quiet:
            root = snapshot.root_of(name)
            if root not in versions:
                versions[root] = snapshot.tree_versions[root]
        self._quiet_versions = versions
        return quiet

    def _all_set_aside_answering(self, heads: list[WorkloadInfo], queue: PendingQueue, cq_name: str) -> bool:
        """Whether every one of `heads` waits in `queue`'s inadmissible set and its nomination
        would answer as it stands now: reused as it is, within its answer bounds, or retraced
        to the same path and message (`_still_answered`; commits elsewhere in a large cohort
        tree move the versions of what it read without changing what it reads). The retraced
        answers are kept, as the walk would keep them."""
        found = []
        for info in heads:
            if info.key not in queue.inadmissible:
                return False
            answer = self._still_answered(info, cq_name)
            if answer is None:
                return False
            found.append(answer)
        for info, answer in zip(heads, found):
            self._keep_answer(info, answer)
        return True

    def _trail_reader(self, name: str, heads: list[WorkloadInfo]) -> Callable[[], object] | None:
        """A reader of the commit versions of every pair the nominations of `heads` read (None
        when one of them read pairs it does not list)."""
        frs: set[FlavorResource] = set()
        for info in heads:
            cached = info.nomination
            if cached.reader is None:
                continue
            if cached.frs is None:
                return None
            frs.update(cached.frs)
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
                if last is not None and last.holds(heads):
                    continue
                self._quiet_checked.pop(name, None)
                coming = heads[cycle - 1:]
                if not self._all_set_aside_answering(coming, self._quiet[name][0], name):
                    self._wake(name, cycle - 1)
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
            entry = Entry(info, name)
            entry.assignment, entry.targets = info.nomination.assignment, info.nomination.targets
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
