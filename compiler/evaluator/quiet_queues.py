"""Quiet queues, a layer over the cycle (run_moment; this engine's own): a queue whose moment
would repeat its last one is not walked, and is woken (walked up to the current cycle) when a
commit may matter, something enters it, or the moment ends."""

from __future__ import annotations

from bisect import bisect_left, insort

from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.nominator import Entry
from compiler.evaluator.queue_manager import PendingQueue
from compiler.evaluator.quiet_set import QuietSet, _all_set_aside


class QuietQueues(QuietSet):
    """The quiet queues: which they are, their heads counted cycle by cycle, their waking. A
    queue stays quiet from moment to moment until something may change what it would do: it
    is asked again only then (`_still_quiet`), not at every moment."""

    def _quiet_queues(self) -> None:
        """The queues whose moment would repeat their last one (`self._quiet`, kept from the
        last moment): last moment every head they popped was a failure set aside with its class
        (no reservation held), nothing entered or left the queue since, and every such head's
        nomination answers as it stands (reused as it is, within its answer bounds, or
        retraced to the same answer). After a rescan such a queue pops the same heads in the
        same order, cycle after cycle, each getting the same answer, as long as no commit
        moves what they read: walking it again changes nothing. Its heads stay set aside, and
        the queue is woken (walked up to the current cycle) when a commit may matter, something
        enters it, or the moment ends before its last head's turn.

        A queue quiet last moment is asked again only when a commit crossed its trail's answer
        bounds (bounds_watch), something entered it, or its trail has no bounds (`_polled`);
        the queues walked last moment (`_aside`) are asked whether they became quiet."""
        if self.tas.wanted:
            # A head placed on nodes reads what an admission in another queue (on the same
            # nodes, outside its cohort) moves, which the commit versions do not see.
            self._unquiet_all()
            return
        snapshot = self.preemptor.snapshot
        recheck = set(self._watch.crossed(snapshot.take_moved()))
        recheck.update(self._polled)
        quiet = self._quiet
        for names in (self._waiting, self._aside):  # (something entered, or was set aside)
            for name in names:
                if name in quiet:
                    recheck.add(name)
        left = set()
        for name in sorted(recheck):
            if name in quiet and not self._still_quiet(name):
                self._unquiet(name)
                left.add(name)
        checked = self._quiet_checked
        for name in self._aside:
            queue = self.queues[name]
            heads = queue.trail
            if name in left or name in quiet or not heads or queue.heap or queue.sticky is not None \
                    or name in self.inactive:
                continue
            # A trail found quiet stays so while it is the queue's trail (nothing entered or
            # left the queue, none of its heads was nominated) and no pair its heads read
            # saw a commit.
            last = checked.get(name)
            if last is not None and (last.holds(heads) or _all_set_aside(heads, queue) and last.holds_again(heads)):
                self._make_quiet(name, queue, heads, last)
            elif self._all_set_aside_answering(heads, queue, name):
                self._make_quiet(name, queue, heads, self._checked_trail(name, heads))
        versions: dict[int, int] = {}
        for name in self._polled:
            root = snapshot.root_of(name)
            if root not in versions:
                versions[root] = snapshot.tree_versions[root]
        self._quiet_versions = versions

    def _still_quiet(self, name: str) -> bool:
        """Whether quiet queue `name` is quiet for this moment too (see `_quiet_queues`)."""
        queue, heads = self._quiet[name]
        if queue.heap or queue.sticky is not None or queue.trail is not heads:
            return False
        last = self._quiet_checked.get(name)
        if last is None or not last.holds(heads):
            if not self._all_set_aside_answering(heads, queue, name):
                return False
            last = self._checked_trail(name, heads)
        self._polled.discard(name)
        self._watch_or_poll(name, last)
        return True

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

    def _quiet_cycle(self) -> int:
        """A cycle's start with quiet queues: those whose coming heads read something a commit
        has since changed are woken; the others' heads of this cycle are counted (they are
        nominated and reused, for the engine's statistics) and their number returned."""
        self._moment_cycle += 1
        cycle = self._moment_cycle
        snapshot = self.preemptor.snapshot
        if self._polled:
            self._check_polled(cycle)
        if snapshot.moved:
            crossed = self._watch.crossed(snapshot.take_moved())
            if crossed:
                self._check_crossed(crossed, cycle)
        order = self._quiet_order
        popped = len(order) - bisect_left(order, (cycle,))
        self.decisions += popped
        self.reused += popped
        self.quiet_heads += popped
        return popped

    def _quiet_entries(self) -> list[Entry]:
        """This cycle's heads of the quiet queues, as entries holding the answers their
        nominations hold (fair sharing: an inert head still takes part in the tournament that
        orders the heads that act, `Scheduler._fair_order`)."""
        cycle = self._moment_cycle
        order = self._quiet_order
        found = []
        for _, name in order[bisect_left(order, (cycle,)):]:
            found.append(_held_entry(self._quiet[name][1][cycle - 1 - self._start(name)], name))
        return found

    def _check_polled(self, cycle: int) -> None:
        """The polled quiet queues of the trees that committed since the last cycle: a queue
        whose coming heads would not answer as they stand is woken."""
        snapshot = self.preemptor.snapshot
        versions = self._quiet_versions
        moved = set()
        for root, version in versions.items():
            now = snapshot.tree_versions[root]
            if now != version:
                versions[root] = now
                moved.add(root)
        if not moved:
            return
        for name in sorted(self._polled):
            queue, heads = self._quiet[name]
            if self._last_turn(name, heads) < cycle or snapshot.root_of(name) not in moved:
                continue
            last = self._quiet_checked.get(name)
            if last is None or not last.holds(heads):
                self._answer_coming(name, queue, heads, cycle)

    def _check_crossed(self, crossed: list[str], cycle: int) -> None:
        """The quiet queues whose trail's bounds a commit since the last cycle crossed: polled
        from now on (asked again as a whole at the next moment); one whose coming heads would
        not answer as they stand is woken. (Called after `_check_polled`: their trees'
        versions are read now.)"""
        snapshot = self.preemptor.snapshot
        for name in sorted(crossed):
            found = self._quiet.get(name)
            if found is None:
                continue
            queue, heads = found
            self._polled.add(name)
            root = snapshot.root_of(name)
            self._quiet_versions[root] = snapshot.tree_versions[root]
            if self._last_turn(name, heads) >= cycle:  # (else its turns in this moment are over)
                self._answer_coming(name, queue, heads, cycle)

    def _answer_coming(self, name: str, queue: PendingQueue, heads: list[WorkloadInfo], cycle: int) -> None:
        """Quiet queue `name`, whose trail no longer holds as checked, at the start of `cycle`:
        it stays quiet (its trail no longer checked as a whole) while the heads still to pop
        this moment would answer as they stand, else it is woken."""
        self._quiet_checked.pop(name, None)
        coming = heads[cycle - 1 - self._start(name):]
        if not self._all_set_aside_answering(coming, queue, name):
            self._wake(name, cycle - 1)

    def _wake(self, name: str, cycles: int) -> None:
        """Walk quiet queue `name` as the cycles 1..`cycles` of this moment did: the rescan it
        skipped, then its head of each of those cycles popped and set aside with the answer its
        nomination holds, and the requeues of quota releases in between (`_requeue_quiet`),
        each followed by its heads popped again from the first."""
        requeues = self._quiet_requeues.get(name) or []
        queue, heads = self._leave_quiet(name)
        self.woken += 1
        asleep = self._asleep
        for info in heads:
            if info in asleep:
                asleep.discard(info)
                if not info.holds_quota and self.infos.get(info.key) is info:
                    info.last_tried = None
                    info.sticky = False
        if queue.inadmissible or queue.bulk_moved:
            queue.requeue_inadmissible()
        queue.sticky = None
        queue.trail = []
        start = 0
        for stop in requeues:
            self._walk_quiet(name, queue, heads[:stop - start])
            queue.requeue_inadmissible()  # (the quota release's, after cycle `stop`)
            start = stop
        self._walk_quiet(name, queue, heads[:cycles - start])

    def _walk_quiet(self, name: str, queue: PendingQueue, heads: list[WorkloadInfo]) -> None:
        """`heads` popped from `queue` one cycle after another and set aside, each with the
        answer its nomination holds."""
        for expected in heads:
            info = queue.pop()
            if info is not expected:
                raise RuntimeError(f"quiet queue {name}: popped {info and info.key}, not {expected.key}")
            entry = _held_entry(info, name)
            entry.message = entry.assignment.message()
            self._process(entry, {}, [], [])
            self._requeue_entries([entry])

    def _end_quiet(self) -> None:
        """The moment is over: a quiet queue whose last head's turn never came is walked as far
        as the moment went; the others are left as the walk would have left them, and stay
        quiet into the next moment unless something wakes them (see `_quiet_queues`), where
        they pop their heads from the first cycle."""
        order = self._quiet_order
        for _, name in order[bisect_left(order, (self._moment_cycle + 1,)):]:
            self._wake(name, self._moment_cycle)
        for name in sorted(self._quiet_requeues):
            heads = self._quiet[name][1]
            self._unorder(name, heads)
            insort(order, (len(heads), name))
        self._quiet_requeues = {}
        self._quiet_versions = {}


def _held_entry(info: WorkloadInfo, cq_name: str) -> Entry:
    """A quiet queue's head as a cycle's entry, with the answer its nomination holds."""
    entry = Entry(info, cq_name)
    entry.assignment, entry.targets = info.nomination.assignment, info.nomination.targets
    return entry
