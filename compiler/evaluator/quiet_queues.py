"""Quiet queues, a layer over the cycle (run_moment; this engine's own): a queue whose moment
would repeat its last one is not walked, and is woken (walked up to the current cycle) when a
commit may matter, something enters it, or the moment ends."""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Callable

from compiler.evaluator.answer_bounds import UsageBounds, trail_bounds
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.nominator import Entry
from compiler.evaluator.processing import EntryProcessor
from compiler.evaluator.queue_manager import PendingQueue


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

    __slots__ = ("trail", "reader", "state", "nominations", "bounds", "watched", "entries")

    def __init__(self, trail: list[WorkloadInfo], reader: Callable[[], object] | None, state: object,
                 bounds: UsageBounds | None = None) -> None:
        self.trail = trail
        self.reader = reader
        self.state = state
        self.bounds = bounds  # (instead of a reader: the heads' answer bounds)
        # the heads' nominations then: a later trail of the same heads holding the same
        # nominations reads what this one read (see `holds_again`)
        self.nominations = [info.nomination for info in trail]
        # (bounds_watch's: whether it watches this trail, and its heap entries)
        self.watched = False
        self.entries = 0

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
    """The quiet queues: which they are, their heads counted cycle by cycle, their waking. A
    queue stays quiet from moment to moment until something may change what it would do: it
    is asked again only then (`_recheck`), not at every moment."""

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

    def _checked_trail(self, name: str, heads: list[WorkloadInfo]) -> CheckedTrail | None:
        """The CheckedTrail of `heads`, just found answering as they stand (kept in
        `_quiet_checked`), or None when what they read cannot be checked in one reading."""
        old = self._quiet_checked.pop(name, None)
        if old is not None:
            self._watch.forget(name, old)
        bounds = trail_bounds(self, name, heads) if self.layers.answer_bounds else None
        if bounds is not None:
            trail = CheckedTrail(heads, None, None, bounds)
        else:
            reader = self._trail_reader(name, heads)
            if reader is None:
                return None
            trail = CheckedTrail(heads, reader, reader())
        self._quiet_checked[name] = trail
        return trail

    def _watch_or_poll(self, name: str, last: CheckedTrail | None) -> None:
        """Quiet queue `name`, whose trail `last` holds now, is watched by its bounds, or
        else asked again at every moment and whenever its tree commits (`_polled`)."""
        if last is not None and last.bounds is not None:
            self._watch.watch(name, last)
        else:
            self._polled.add(name)

    def _make_quiet(self, name: str, queue: PendingQueue, heads: list[WorkloadInfo],
                    last: CheckedTrail | None) -> None:
        """Queue `name`, whose trail `heads` holds now, becomes quiet."""
        self._quiet[name] = (queue, heads)
        insort(self._quiet_order, (len(heads), name))
        self._watch_or_poll(name, last)
        scanned, asleep = self._scanned, self._asleep
        for info in heads:
            if info in scanned:  # (its scan position is reset when it wakes, not now)
                scanned.discard(info)
                asleep.add(info)

    def _unquiet(self, name: str) -> None:
        """Quiet queue `name` is no longer quiet, before a moment: this moment's rescan
        resets it as it does the queues walked last moment."""
        queue, heads = self._leave_quiet(name)
        for info in heads:
            if info in self._asleep:
                self._asleep.discard(info)
                self._scanned.add(info)
        self._aside.add(name)

    def _unquiet_all(self) -> None:
        """No queue is quiet (a rescan that walks every queue, or TAS): none is watched, and
        the commits are no longer logged for it."""
        for name in sorted(self._quiet):
            self._unquiet(name)
        for name, last in self._quiet_checked.items():
            self._watch.forget(name, last)
        self.preemptor.snapshot.moved = None

    def _leave_quiet(self, name: str) -> tuple[PendingQueue, list[WorkloadInfo]]:
        """Queue `name` is no longer quiet. (Its trail stays watched while its bounds hold: a
        queue woken is often quiet again at the next moment with the same heads and
        nominations, `CheckedTrail.holds_again`, and watched as it was.)"""
        queue, heads = self._quiet.pop(name)
        order = self._quiet_order
        del order[bisect_left(order, (self._last_turn(name, heads), name))]
        self._quiet_requeues.pop(name, None)
        self._polled.discard(name)
        return queue, heads

    def _start(self, name: str) -> int:
        """The cycle of this moment after which quiet queue `name` pops its first head: 0, or
        the last quota release that requeued it (see `_requeue_quiet`)."""
        requeues = self._quiet_requeues.get(name)
        return requeues[-1] if requeues else 0

    def _last_turn(self, name: str, heads: list[WorkloadInfo]) -> int:
        """The cycle of this moment in which quiet queue `name` pops its last head."""
        return self._start(name) + len(heads)

    def _requeue_quiet(self, name: str) -> None:
        """A quota release requeues quiet queue `name` after cycle k of the moment (Kueue's
        requeue of every inadmissible workload of the tree): every head it popped goes back to
        its heap, and it pops them again, in the same order, from cycle k + 1. Those pops get
        the answers they got (what they read is checked cycle by cycle, as for any quiet
        queue): the queue stays quiet, now from cycle k. Nothing is moved now; `_wake` replays
        the requeue if the queue is walked after all."""
        heads = self._quiet[name][1]
        order = self._quiet_order
        del order[bisect_left(order, (self._last_turn(name, heads), name))]
        self._quiet_requeues.setdefault(name, []).append(self._moment_cycle)
        insort(order, (self._moment_cycle + len(heads), name))

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
            start = self._start(name)
            if start + len(heads) < cycle or snapshot.root_of(name) not in moved:
                continue
            last = self._quiet_checked.get(name)
            if last is not None and last.holds(heads):
                continue
            self._quiet_checked.pop(name, None)
            if not self._all_set_aside_answering(heads[cycle - 1 - start:], queue, name):
                self._wake(name, cycle - 1)

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
            start = self._start(name)
            if start + len(heads) < cycle:
                continue  # (its heads' turns in this moment are over)
            self._quiet_checked.pop(name, None)
            if not self._all_set_aside_answering(heads[cycle - 1 - start:], queue, name):
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
            entry = Entry(info, name)
            entry.assignment, entry.targets = info.nomination.assignment, info.nomination.targets
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
            del order[bisect_left(order, (self._last_turn(name, heads), name))]
            insort(order, (len(heads), name))
        self._quiet_requeues = {}
        self._quiet_versions = {}
