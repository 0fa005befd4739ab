"""Which quiet queues a commit may wake (this engine's own): the answer bounds of every quiet
queue's trail (answer_bounds.UsageBounds), indexed by the usage they bound. A moment or a cycle
asks only the trails whose bounds the commits since crossed, instead of every quiet queue's:
a busy cluster keeps hundreds of queues quiet for hours while jobs come and go elsewhere.

Each bounded (ancestor usage, pair) keeps two heaps of the trails watching it: by the lowest
usage each allows (highest first) and by the highest (lowest first). After commits, the pairs
they moved in each ancestor of their queue are looked up, and each heap is popped while its top
is crossed. A queue's own commits cross its trail when they move what its heads read
(`UsageBounds.hold`). A crossed trail is no longer watched: its queue is asked again as a whole.
A trail stops being watched without a crossing too (its queue woke); its entries then stay in
the heaps until popped, or until they outnumber the live ones and the heaps are built anew.
"""

from __future__ import annotations

import heapq

from compiler.evaluator.answer_bounds import NO_LIMIT
from compiler.evaluator.tree import QuotaNode

_COMPACT_SLACK = 4096  # dead heap entries tolerated beyond as many as the live ones


class BoundsWatch:
    """The watched trails (quiet_set.CheckedTrail with bounds) of the quiet queues, at most
    one per queue, by the usage their bounds read."""

    def __init__(self, nodes: dict[str, QuotaNode]) -> None:
        self._nodes = nodes
        # (id of an ancestor's usage dict, pair) -> heap of (-lowest usage, seq, name, trail)
        # and of (highest usage, seq, name, trail); `seq` is unique per watched trail, so no
        # comparison reaches the name or the trail.
        self._lows: dict[tuple, list] = {}
        self._highs: dict[tuple, list] = {}
        self._usages: dict[tuple, dict] = {}  # the same key -> the usage dict it names
        self._own: dict[str, object] = {}     # queue name -> its watched trail
        self._ancestors: dict[str, list[int]] = {}  # queue name -> ids of its ancestors' usage
        self._seq = 0
        self._entries = 0  # entries in the heaps, dead ones included
        self._live = 0     # entries of watched trails

    def watch(self, name: str, trail) -> None:
        """Watch `trail`, queue `name`'s, whose bounds hold now (as the commits logged so far
        left the tree)."""
        if trail.watched:
            return
        previous = self._own.get(name)
        if previous is not None:
            self.forget(name, previous)
        self._own[name] = trail
        trail.watched = True
        seq = self._seq
        self._seq += 1
        entries = 0
        for usage, fr, low, high in trail.bounds.ranges:
            key = (id(usage), fr)
            self._usages[key] = usage
            if low > -NO_LIMIT:
                heapq.heappush(self._lows.setdefault(key, []), (-low, seq, name, trail))
                entries += 1
            if high < NO_LIMIT:
                heapq.heappush(self._highs.setdefault(key, []), (high, seq, name, trail))
                entries += 1
        trail.entries = entries
        self._entries += entries
        self._live += entries

    def forget(self, name: str, trail) -> None:
        """`trail` is no longer watched (crossed, or its queue is no longer quiet)."""
        if not trail.watched:
            return
        trail.watched = False
        self._live -= trail.entries
        if self._own.get(name) is trail:
            del self._own[name]
        if self._entries > 2 * self._live + _COMPACT_SLACK:
            self._compact()

    def crossed(self, moved: list) -> list[str]:
        """The queues whose watched trail the commits in `moved` crossed (each commit a queue's
        name then the pairs it moved, as Snapshot logs them), now no longer watched."""
        found: list[str] = []
        if not moved:
            return found
        keys: set[tuple] = set()
        usages = self._usages
        for index in range(0, len(moved), 2):
            name = moved[index]
            trail = self._own.get(name)
            if trail is not None and not trail.bounds.hold():
                self.forget(name, trail)
                found.append(name)
            ancestors = self._ancestors.get(name)
            if ancestors is None:
                ancestors = self._ancestors[name] = self._ancestor_ids(name)
            for usage_id in ancestors:
                for fr in moved[index + 1]:
                    key = (usage_id, fr)
                    if key in usages:
                        keys.add(key)
        for key in keys:  # (in any order: callers sort the names found)
            used = usages[key].get(key[1], 0)
            heap = self._lows.get(key)
            while heap and -heap[0][0] > used:
                self._pop(heap, found)
            heap = self._highs.get(key)
            while heap and heap[0][0] < used:
                self._pop(heap, found)
        return found

    def _pop(self, heap: list, found: list[str]) -> None:
        _, _, name, trail = heapq.heappop(heap)
        self._entries -= 1
        if trail.watched:
            self.forget(name, trail)
            found.append(name)

    def _ancestor_ids(self, name: str) -> list[int]:
        ids = []
        node = self._nodes[name].parent
        while node is not None:
            ids.append(id(node.usage))
            node = node.parent
        return ids

    def _compact(self) -> None:
        """The heaps built anew from the watched trails alone."""
        watched = sorted(self._own.items())
        self._lows, self._highs, self._usages = {}, {}, {}
        self._own = {}
        self._entries = self._live = 0
        for name, trail in watched:
            trail.watched = False
            self.watch(name, trail)

