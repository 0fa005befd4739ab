"""The set of quiet queues (quiet_queues.py's), kept from moment to moment: which queues are
quiet, the cycles they pop their heads in, the trails found quiet and what keeps each so (its
answer bounds, watched by bounds_watch, or a reading of its commit versions)."""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Callable

from compiler.evaluator.answer_bounds import UsageBounds, trail_bounds
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
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


class QuietSet(EntryProcessor):
    """The quiet queues as a set: joining, leaving, requeued by a quota release, and how each
    one's trail is checked."""

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
        self._unorder(name, heads)
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
        self._unorder(name, heads)
        self._quiet_requeues.setdefault(name, []).append(self._moment_cycle)
        insort(self._quiet_order, (self._moment_cycle + len(heads), name))

    def _unorder(self, name: str, heads: list[WorkloadInfo]) -> None:
        """Quiet queue `name`'s entry taken out of `_quiet_order` (keyed by its last turn)."""
        order = self._quiet_order
        del order[bisect_left(order, (self._last_turn(name, heads), name))]

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
